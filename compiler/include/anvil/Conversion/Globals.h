//===- Globals.h - buffers in the host's memory -----------------*- C++ -*-===//
//
// Bufferization makes a constant a memref.global (the host's memory). What
// runs on a GPU cannot read it there: anvil-bufferize's copy-globals copies
// such a library call's operand into a planned buffer first, and
// anvil-cuda-map-dispatches keeps the kernels' copies of one on the device
// side. Both ask isGlobalView.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_CONVERSION_GLOBALS_H
#define ANVIL_CONVERSION_GLOBALS_H

#include "mlir/IR/Value.h"

namespace mlir::anvil {

/// Whether `memref` is a memref.get_global or a view of one (through view
/// ops and transposes).
bool isGlobalView(Value memref);

} // namespace mlir::anvil

#endif // ANVIL_CONVERSION_GLOBALS_H
