//===- Embedding.cpp - an embedding table's gradient, in order ------------===//
//
// anvil_rt_embedding_grad_f32 (RuntimeABI.h): the scatter-add of gradient
// rows into a zeroed table, in increasing position, as the loop that
// anvil-convert-to-linalg makes of anvil.embedding_grad. This is the CPU's
// twin of the CUDA runtime's anvil_rt_cuda_embedding_grad_f32 (which writes
// the same bits in parallel): the emulated CUDA grid calls it where CUDA
// calls that, so the compiler's half of the library call is checked without
// a GPU.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/RuntimeABI.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" void anvil_rt_embedding_grad_f32(int64_t count, int64_t rows,
                                            int64_t width, const float *grad,
                                            const int32_t *ids, float *table) {
  if (count < 0 || rows < 1 || width < 0) {
    std::fprintf(stderr,
                 "anvil: anvil_rt_embedding_grad_f32: %lld positions into %lld "
                 "rows of %lld: the counts must not be negative and the table "
                 "needs a row\n",
                 static_cast<long long>(count), static_cast<long long>(rows),
                 static_cast<long long>(width));
    std::abort();
  }
  if (rows * width > 0)
    std::memset(table, 0, static_cast<size_t>(rows * width) * sizeof(float));
  for (int64_t n = 0; n < count; ++n) {
    int64_t row = std::clamp<int64_t>(ids[n], 0, rows - 1);
    float *out = table + row * width;
    const float *in = grad + n * width;
    for (int64_t c = 0; c < width; ++c)
      out[c] += in[c];
  }
}
