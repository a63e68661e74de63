//===- Passes.h - lowering anvil graphs to upstream dialects -*- C++ -*-===//
//
// Declarations generated from Passes.td (`createAnvilFooPass()`), and the
// registration of every pass in this component.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_CONVERSION_PASSES_H
#define ANVIL_CONVERSION_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::anvil {

#define GEN_PASS_DECL
#include "anvil/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "anvil/Conversion/Passes.h.inc"

class MatmulOp;

/// How anvil-decompose{fp8-gemms=`form`} multiplies `op`: std::nullopt when
/// it is not an FP8 GEMM (a GEMM of two fp8_quantize results with forward
/// formats); an empty string when it reads their 8-bit codes
/// (anvil.matmul_f8); otherwise why it multiplies their dequantized values.
std::optional<std::string> fp8GemmForm(MatmulOp op, llvm::StringRef form);

} // namespace mlir::anvil

#endif // ANVIL_CONVERSION_PASSES_H
