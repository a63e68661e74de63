//===- Conv.cpp - the reference of the library convolutions ---------------===//
//
// anvil_rt_conv (RuntimeABI.h): a convolution, its input's gradient or its
// filter's gradient, computed directly from the definition, one output
// element at a time. This is the CPU's twin of the CUDA runtime's cuDNN
// calls (anvil_rt_cuda_conv): the emulated CUDA grid calls it where CUDA
// calls cuDNN, so the compiler's half of a library convolution (which ops
// go, the problem it passes) is checked without a GPU.
//
// The sums are f32 in a fixed order: the forward over channels, then taps
// in row-major order (linalg's named convolutions' order); the filter's
// gradient over the batch, then the output positions; the input's gradient
// over the output channels of its group, then the taps. Every problem is
// widened to three spatial dimensions (unit ones in front).
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/DType.h"
#include "anvil/runtime/RuntimeABI.h"

#include <array>
#include <cstdio>
#include <cstdlib>

namespace {

/// A problem of anvil_rt_conv in three spatial dimensions.
struct Problem {
  int64_t n, c, k, groups;
  std::array<int64_t, 3> x, y, kernel, stride, pad, dilation;

  int64_t cPerGroup() const { return c / groups; }
  int64_t kPerGroup() const { return k / groups; }
  int64_t xSize() const { return x[0] * x[1] * x[2]; }
  int64_t ySize() const { return y[0] * y[1] * y[2]; }
  int64_t taps() const { return kernel[0] * kernel[1] * kernel[2]; }
};

Problem parse(const int64_t *p) {
  int64_t s = p[0];
  if (s < 1 || s > 3) {
    std::fprintf(stderr,
                 "anvil: anvil_rt_conv: %lld spatial dimensions "
                 "(1 to 3 supported)\n",
                 static_cast<long long>(s));
    std::abort();
  }
  Problem q{p[1], p[2], p[3], p[4], {}, {}, {}, {}, {}, {}};
  for (int64_t d = 0; d < 3; ++d) {
    int64_t i = d - (3 - s); // the problem's dimension, < 0: a unit one
    static const int64_t unit[6] = {1, 1, 1, 1, 0, 1};
    const int64_t *f = i < 0 ? unit : p + 5 + 6 * i;
    q.x[d] = f[0];
    q.y[d] = f[1];
    q.kernel[d] = f[2];
    q.stride[d] = f[3];
    q.pad[d] = f[4];
    q.dilation[d] = f[5];
  }
  return q;
}

/// Element access of f32 or bf16 buffers.
struct Elements {
  const void *data;
  bool bf16;
  float operator[](int64_t i) const {
    return bf16
               ? anvil::rt::fromBF16Bits(static_cast<const uint16_t *>(data)[i])
               : static_cast<const float *>(data)[i];
  }
};

void store(void *data, bool bf16, int64_t i, float v) {
  if (bf16)
    static_cast<uint16_t *>(data)[i] = anvil::rt::toBF16Bits(v);
  else
    static_cast<float *>(data)[i] = v;
}

/// The input position of output position `o` and tap `t` along dimension
/// `d`, or -1 outside the input.
int64_t inputAt(const Problem &q, int d, int64_t o, int64_t t) {
  int64_t i = o * q.stride[d] - q.pad[d] + t * q.dilation[d];
  return i >= 0 && i < q.x[d] ? i : -1;
}

void forward(const Problem &q, Elements x, Elements w, void *y, bool bf16) {
  for (int64_t n = 0; n < q.n; ++n)
    for (int64_t k = 0; k < q.k; ++k) {
      int64_t g = k / q.kPerGroup();
      for (int64_t o0 = 0; o0 < q.y[0]; ++o0)
        for (int64_t o1 = 0; o1 < q.y[1]; ++o1)
          for (int64_t o2 = 0; o2 < q.y[2]; ++o2) {
            float acc = 0.0f;
            for (int64_t ci = 0; ci < q.cPerGroup(); ++ci) {
              int64_t xBase = (n * q.c + g * q.cPerGroup() + ci) * q.xSize();
              int64_t wBase = (k * q.cPerGroup() + ci) * q.taps();
              for (int64_t t0 = 0; t0 < q.kernel[0]; ++t0) {
                int64_t i0 = inputAt(q, 0, o0, t0);
                for (int64_t t1 = 0; t1 < q.kernel[1]; ++t1) {
                  int64_t i1 = inputAt(q, 1, o1, t1);
                  for (int64_t t2 = 0; t2 < q.kernel[2]; ++t2) {
                    int64_t i2 = inputAt(q, 2, o2, t2);
                    if (i0 < 0 || i1 < 0 || i2 < 0)
                      continue;
                    acc +=
                        x[xBase + (i0 * q.x[1] + i1) * q.x[2] + i2] *
                        w[wBase + (t0 * q.kernel[1] + t1) * q.kernel[2] + t2];
                  }
                }
              }
            }
            store(y, bf16,
                  ((n * q.k + k) * q.y[0] + o0) * q.y[1] * q.y[2] +
                      o1 * q.y[2] + o2,
                  acc);
          }
    }
}

/// The output position whose tap `t` reads input position `i` along `d`,
/// or -1 when none does.
int64_t outputAt(const Problem &q, int d, int64_t i, int64_t t) {
  int64_t shifted = i + q.pad[d] - t * q.dilation[d];
  if (shifted < 0 || shifted % q.stride[d] != 0)
    return -1;
  int64_t o = shifted / q.stride[d];
  return o < q.y[d] ? o : -1;
}

void dataGrad(const Problem &q, Elements dy, Elements w, void *dx, bool bf16) {
  for (int64_t n = 0; n < q.n; ++n)
    for (int64_t c = 0; c < q.c; ++c) {
      int64_t g = c / q.cPerGroup(), ci = c % q.cPerGroup();
      for (int64_t i0 = 0; i0 < q.x[0]; ++i0)
        for (int64_t i1 = 0; i1 < q.x[1]; ++i1)
          for (int64_t i2 = 0; i2 < q.x[2]; ++i2) {
            float acc = 0.0f;
            for (int64_t kk = 0; kk < q.kPerGroup(); ++kk) {
              int64_t k = g * q.kPerGroup() + kk;
              int64_t yBase = (n * q.k + k) * q.ySize();
              int64_t wBase = (k * q.cPerGroup() + ci) * q.taps();
              for (int64_t t0 = 0; t0 < q.kernel[0]; ++t0) {
                int64_t o0 = outputAt(q, 0, i0, t0);
                for (int64_t t1 = 0; t1 < q.kernel[1]; ++t1) {
                  int64_t o1 = outputAt(q, 1, i1, t1);
                  for (int64_t t2 = 0; t2 < q.kernel[2]; ++t2) {
                    int64_t o2 = outputAt(q, 2, i2, t2);
                    if (o0 < 0 || o1 < 0 || o2 < 0)
                      continue;
                    acc +=
                        dy[yBase + (o0 * q.y[1] + o1) * q.y[2] + o2] *
                        w[wBase + (t0 * q.kernel[1] + t1) * q.kernel[2] + t2];
                  }
                }
              }
            }
            store(dx, bf16,
                  ((n * q.c + c) * q.x[0] + i0) * q.x[1] * q.x[2] +
                      i1 * q.x[2] + i2,
                  acc);
          }
    }
}

void filterGrad(const Problem &q, Elements x, Elements dy, void *dw,
                bool bf16) {
  for (int64_t k = 0; k < q.k; ++k) {
    int64_t g = k / q.kPerGroup();
    for (int64_t ci = 0; ci < q.cPerGroup(); ++ci)
      for (int64_t t0 = 0; t0 < q.kernel[0]; ++t0)
        for (int64_t t1 = 0; t1 < q.kernel[1]; ++t1)
          for (int64_t t2 = 0; t2 < q.kernel[2]; ++t2) {
            float acc = 0.0f;
            for (int64_t n = 0; n < q.n; ++n) {
              int64_t xBase = (n * q.c + g * q.cPerGroup() + ci) * q.xSize();
              int64_t yBase = (n * q.k + k) * q.ySize();
              for (int64_t o0 = 0; o0 < q.y[0]; ++o0) {
                int64_t i0 = inputAt(q, 0, o0, t0);
                for (int64_t o1 = 0; o1 < q.y[1]; ++o1) {
                  int64_t i1 = inputAt(q, 1, o1, t1);
                  for (int64_t o2 = 0; o2 < q.y[2]; ++o2) {
                    int64_t i2 = inputAt(q, 2, o2, t2);
                    if (i0 < 0 || i1 < 0 || i2 < 0)
                      continue;
                    acc += dy[yBase + (o0 * q.y[1] + o1) * q.y[2] + o2] *
                           x[xBase + (i0 * q.x[1] + i1) * q.x[2] + i2];
                  }
                }
              }
            }
            store(dw, bf16,
                  ((k * q.cPerGroup() + ci) * q.kernel[0] + t0) * q.kernel[1] *
                          q.kernel[2] +
                      t1 * q.kernel[2] + t2,
                  acc);
          }
  }
}

} // namespace

extern "C" void anvil_rt_conv(int32_t kind, int32_t bf16,
                              const int64_t *problem, const void *a,
                              const void *b, void *c) {
  Problem q = parse(problem);
  Elements ea{a, bf16 != 0}, eb{b, bf16 != 0};
  switch (kind) {
  case ANVIL_RT_CONV_FORWARD:
    return forward(q, ea, eb, c, bf16 != 0);
  case ANVIL_RT_CONV_DATA_GRAD:
    return dataGrad(q, ea, eb, c, bf16 != 0);
  case ANVIL_RT_CONV_FILTER_GRAD:
    return filterGrad(q, ea, eb, c, bf16 != 0);
  default:
    std::fprintf(stderr, "anvil: anvil_rt_conv: unknown kind %d\n", kind);
    std::abort();
  }
}
