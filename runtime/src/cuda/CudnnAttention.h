//===- CudnnAttention.h - fused attention through cuDNN, and its copies ---===//
//
// anvil_rt_cuda_attention_f32 and its gradient (Attention.cu) hand calls
// with bf16 products to cuDNN's fused attention (CudnnAttention.cpp) when
// attentionLibrary() says so and cuDNN takes the shape; cuDNN reads and
// writes contiguous bf16 (batch, heads, rows, width) tensors, which the
// copies below (Attention.cu's kernels) make of the calls' f32 tensors and
// write back. Private to runtime/src/cuda.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_CUDA_CUDNNATTENTION_H
#define ANVIL_RUNTIME_CUDA_CUDNNATTENTION_H

#include "anvil/runtime/Cuda.h"

#include <array>
#include <cstdint>

namespace anvil::rt::cuda {

/// The (heads, rows, width) of a call's i-th 4-D tensor in
/// anvil_rt_attention_layout's order: q, k, v, out, dOut, dq, dk, dv.
inline std::array<int64_t, 3> attentionTensorShape(const AttentionShape &s,
                                                   int i) {
  bool queryRows = i == 0 || i == 3 || i == 4 || i == 5;
  bool valueWide = i == 2 || i == 3 || i == 4 || i == 7;
  return {queryRows ? s.heads : s.kvHeads, queryRows ? s.queries : s.keys,
          valueWide ? s.valueDim : s.dim};
}

/// Runs anvil_rt_cuda_attention_f32's call (with bf16 products) through
/// cuDNN and returns true, or returns false having queued nothing when
/// attentionLibrary() is Anvil or cuDNN cannot take the shape (said once
/// per shape on stderr). The call's sizes are valid.
/// `keyBias` is the call's (null unless shape.keyBias).
bool cudnnAttentionForward(const float *q, const float *k, const float *v,
                           const float *keyBias, float *out, float *lse,
                           const AttentionShape &shape,
                           const anvil_rt_attention_layout *layouts);

/// The same for anvil_rt_cuda_attention_grad_f32.
bool cudnnAttentionBackward(const float *q, const float *k, const float *v,
                            const float *keyBias, const float *out,
                            const float *lse, const float *dOut, float *dq,
                            float *dk, float *dv, const AttentionShape &shape,
                            const anvil_rt_attention_layout *layouts);

/// Runs anvil_rt_cuda_attention_bf16's call through cuDNN, reading and
/// writing the bf16 tensors where their layouts place them, and returns
/// true; or returns false having queued nothing (as cudnnAttentionForward,
/// and where a tensor's start or strides are not 16-byte aligned, as
/// cuDNN's tensors must be).
bool cudnnAttentionForwardBf16(const void *q, const void *k, const void *v,
                               const float *keyBias, void *out, float *lse,
                               const AttentionShape &shape,
                               const anvil_rt_attention_layout *layouts);

/// The same for anvil_rt_cuda_attention_grad_bf16.
bool cudnnAttentionBackwardBf16(const void *q, const void *k, const void *v,
                                const float *keyBias, const void *out,
                                const float *lse, const void *dOut, void *dq,
                                void *dk, void *dv, const AttentionShape &shape,
                                const anvil_rt_attention_layout *layouts);

/// Queues on the step stream a copy of the (batch, heads, rows, width) f32
/// tensor that `layout` places at `base` into the contiguous bf16 tensor
/// at `dst` (rounded to nearest even). `caller` names the call in errors.
void copyAttentionTensorToBf16(const float *base,
                               const anvil_rt_attention_layout &layout,
                               int64_t batch, int64_t heads, int64_t rows,
                               int64_t width, void *dst, const char *caller);

/// And back: the contiguous bf16 tensor at `src` into the f32 elements
/// `layout` places at `base` (nothing else of `base` is written).
void copyAttentionTensorFromBf16(const void *src, float *base,
                                 const anvil_rt_attention_layout &layout,
                                 int64_t batch, int64_t heads, int64_t rows,
                                 int64_t width, const char *caller);

/// Queues on the step stream a copy of the (batch, heads, rows, width) bf16
/// tensor that `layout` places at `base` into the contiguous f32 tensor at
/// `dst` (widened exactly).
void widenAttentionTensor(const void *base,
                          const anvil_rt_attention_layout &layout,
                          int64_t batch, int64_t heads, int64_t rows,
                          int64_t width, float *dst, const char *caller);

/// And back: the contiguous f32 tensor at `src`, rounded to bf16 (to
/// nearest even), into the elements `layout` places at `base`.
void narrowAttentionTensor(const float *src, void *base,
                           const anvil_rt_attention_layout &layout,
                           int64_t batch, int64_t heads, int64_t rows,
                           int64_t width, const char *caller);

} // namespace anvil::rt::cuda

#endif // ANVIL_RUNTIME_CUDA_CUDNNATTENTION_H
