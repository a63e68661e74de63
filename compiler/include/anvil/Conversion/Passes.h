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
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::anvil {

#define GEN_PASS_DECL
#include "anvil/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "anvil/Conversion/Passes.h.inc"

class MatmulOp;

/// How anvil-decompose{fp8-gemms=`form` fp8-gemm-result=`result`}
/// multiplies `op`: std::nullopt when it is not an FP8 GEMM (a GEMM of two
/// fp8_quantize results with forward formats); an empty string when it
/// reads their 8-bit codes (anvil.matmul_f8 with a `result` result);
/// otherwise why it multiplies their dequantized values.
std::optional<std::string> fp8GemmForm(MatmulOp op, llvm::StringRef form,
                                       FloatType result);

/// A convolution as one call of a library (RuntimeABI.h's anvil_rt_conv):
/// its kind (ANVIL_RT_CONV_FORWARD, _DATA_GRAD, _FILTER_GRAD: 0, 1, 2, as
/// LibraryConvKind) and
/// problem (s, N, C, K, groups, then x, y, kernel, stride, pad, dilation
/// per spatial dimension, in the terms of the forward convolution x -> y).
enum LibraryConvKind : int32_t {
  kConvForward = 0,
  kConvDataGrad = 1,
  kConvFilterGrad = 2,
};
struct LibraryConv {
  int32_t kind;
  llvm::SmallVector<int64_t> problem;
};

/// The library call `op` (an anvil.conv, anvil.conv_transpose or
/// anvil.conv_filter_grad; a bias is not part of it) is, or std::nullopt
/// where a library convolution cannot take it (anvil-library-convs).
std::optional<LibraryConv> libraryConv(Operation *op);

} // namespace mlir::anvil

#endif // ANVIL_CONVERSION_PASSES_H
