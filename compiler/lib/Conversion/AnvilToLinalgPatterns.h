//===- AnvilToLinalgPatterns.h - anvil-convert-to-linalg's parts -*- C++
//-*-===//
//
// Private to compiler/lib/Conversion: the helpers the lowering patterns
// share, and the patterns that live in their own file
// (AnvilToLinalgWindows.cpp: convolutions, pooling, upsampling;
// OnlineLogSumExp.cpp: a row's log-sum-exp in one pass).
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_CONVERSION_ANVILTOLINALGPATTERNS_H
#define ANVIL_CONVERSION_ANVILTOLINALGPATTERNS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::anvil::lowering {

RankedTensorType tensorType(Value v);

/// tensor.empty of `t`'s shape and element type.
Value emptyOf(OpBuilder &b, Location loc, RankedTensorType t);

/// A scalar constant of `type` (float or integer) holding `value`.
Value scalarConstant(OpBuilder &b, Location loc, Type type, double value);

/// A tensor of type `t` filled with `value`.
Value filled(OpBuilder &b, Location loc, RankedTensorType t, Value value);

/// A linalg.generic of `resultType` over its whole iteration space (all
/// parallel), reading `inputs` through `inputMaps` (the output's map is the
/// identity); `body` computes the element from the inputs' elements.
Value buildGeneric(OpBuilder &b, Location loc, RankedTensorType resultType,
                   ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                   function_ref<Value(OpBuilder &, Location, ValueRange)> body);

/// `src` reshaped to `to` (same elements, row-major): collapse, expand or
/// both.
Value reshapeTensor(OpBuilder &b, Location loc, Value src, RankedTensorType to);

/// A generic with `parallel` leading loops and `reduction` trailing ones,
/// reading `inputs` through `maps`, accumulating into `init` (read and
/// written through `outMap`) with `body(args..., acc)`.
Value buildReduction(
    OpBuilder &b, Location loc, ValueRange inputs, ArrayRef<AffineMap> maps,
    Value init, AffineMap outMap, unsigned parallel, unsigned reduction,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body);

/// Inserts `pieces` into `dest` one after another along `dim`, starting at
/// `offsets`.
Value insertAlong(OpBuilder &b, Location loc, Value dest, ValueRange pieces,
                  int64_t dim, SmallVector<int64_t> offsets);

/// The identity of a reduction and its combining function.
enum class Combine { Sum, Max, Min };
Value identityOf(OpBuilder &b, Location loc, Type type, Combine c);
Value combine(OpBuilder &b, Location loc, Combine c, Value acc, Value x);

/// Whether a contraction (a GEMM, a convolution) with results of `element`
/// accumulates in f32 and rounds its result once: bf16 and f16
/// (anvil.matmul's and anvil.conv's contract).
bool accumulatesInF32(Type element);

/// Convolutions (and their filter gradient), pooling (and max pooling's
/// gradient) and nearest upsampling.
void populateWindowLoweringPatterns(RewritePatternSet &patterns);

/// Each row log-sum-exp of anvil ops under `root` (reduce_max, the shifted
/// exponentials' reduce_sum, and their lse = m + log(s)) as one linalg
/// generic that folds the maximum and the sum together
/// (OnlineLogSumExp.cpp).
void lowerOnlineLogSumExps(Operation *root);

} // namespace mlir::anvil::lowering

#endif // ANVIL_CONVERSION_ANVILTOLINALGPATTERNS_H
