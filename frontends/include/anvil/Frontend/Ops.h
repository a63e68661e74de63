//===- Ops.h - free functions that add anvil ops to a Graph ------*- C++
//-*-===//
//
// Each function adds one op (or a few: numpy-style broadcasting inserts
// `anvil.broadcast`) to the graph its operands belong to, in the current
// scope. Dimension arguments may be negative (counted from the end), as in
// PyTorch; the dialect itself only sees non-negative ones. Shape errors throw
// BuildError with the scope path.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_FRONTEND_OPS_H
#define ANVIL_FRONTEND_OPS_H

#include "anvil/Frontend/Graph.h"

#include <optional>
#include <vector>

namespace anvil::frontend {

// Elementwise binary ops broadcast their operands to a common shape by
// numpy's rules (trailing dimensions aligned; size 1 stretches).
Tensor add(Tensor a, Tensor b);
Tensor sub(Tensor a, Tensor b);
Tensor mul(Tensor a, Tensor b);
Tensor div(Tensor a, Tensor b);
Tensor maximum(Tensor a, Tensor b);
Tensor minimum(Tensor a, Tensor b);
Tensor pow(Tensor a, Tensor b);
inline Tensor operator+(Tensor a, Tensor b) { return add(a, b); }
inline Tensor operator-(Tensor a, Tensor b) { return sub(a, b); }
inline Tensor operator*(Tensor a, Tensor b) { return mul(a, b); }
inline Tensor operator/(Tensor a, Tensor b) { return div(a, b); }

Tensor neg(Tensor x);
Tensor exp(Tensor x);
Tensor log(Tensor x);
Tensor sqrt(Tensor x);
Tensor rsqrt(Tensor x);
Tensor tanh(Tensor x);
Tensor erf(Tensor x);
Tensor sigmoid(Tensor x);
Tensor silu(Tensor x);
Tensor relu(Tensor x);
/// GELU; `tanhApproximation` selects GPT-2's tanh form.
Tensor gelu(Tensor x, bool tanhApproximation);

/// A tensor filled with `value` (a splat constant).
Tensor full(Graph &graph, llvm::ArrayRef<int64_t> shape, double value,
            mlir::Type elementType);
Tensor cast(Tensor x, mlir::Type elementType);

/// Reshape; one entry of `shape` may be -1 and is inferred.
Tensor reshape(Tensor x, llvm::ArrayRef<int64_t> shape);
Tensor transpose(Tensor x, llvm::ArrayRef<int64_t> permutation);
/// Broadcasts `x` to `shape` by numpy's rules.
Tensor broadcastTo(Tensor x, llvm::ArrayRef<int64_t> shape);
std::vector<Tensor> split(Tensor x, int64_t dim, llvm::ArrayRef<int64_t> sizes);
Tensor concat(llvm::ArrayRef<Tensor> inputs, int64_t dim);

/// `a @ b` over the last two dimensions; `b` may be a shared matrix.
Tensor matmul(Tensor a, Tensor b, bool transposeA = false,
              bool transposeB = false);

Tensor sum(Tensor x, llvm::ArrayRef<int64_t> dims, bool keepDims = false);
Tensor mean(Tensor x, llvm::ArrayRef<int64_t> dims, bool keepDims = false);
Tensor softmax(Tensor x, int64_t dim = -1);
Tensor logSoftmax(Tensor x, int64_t dim = -1);

/// Normalizes over dimensions [axis, rank); `scale`/`bias` may be empty.
Tensor layerNorm(Tensor x, Tensor scale, Tensor bias, int64_t axis,
                 double epsilon);
Tensor rmsNorm(Tensor x, Tensor scale, int64_t axis, double epsilon);

Tensor embedding(Tensor table, Tensor indices);
/// Scaled dot-product attention on (B, H, T, D); `mask` may be empty.
Tensor attention(Tensor query, Tensor key, Tensor value, bool causal,
                 Tensor mask = {}, std::optional<double> scale = {});
/// Seeded dropout; `seed` is a rank-0 i64 tensor.
Tensor dropout(Tensor x, Tensor seed, double rate);

Tensor
crossEntropy(Tensor logits, Tensor labels,
             mlir::anvil::Reduction reduction = mlir::anvil::Reduction::mean,
             int64_t ignoreIndex = -100, double labelSmoothing = 0.0);

/// N-d convolution of (N, Cin, spatial...) with (Cout, Cin/groups, k...);
/// `bias` may be empty. Padding is symmetric per spatial dimension.
Tensor conv(Tensor input, Tensor filter, Tensor bias,
            llvm::ArrayRef<int64_t> stride, llvm::ArrayRef<int64_t> padding,
            llvm::ArrayRef<int64_t> dilation, int64_t groups = 1);

} // namespace anvil::frontend

#endif // ANVIL_FRONTEND_OPS_H
