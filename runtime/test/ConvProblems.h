//===- ConvProblems.h - anvil_rt_conv problems the tests share ------------===//
//
// Problems of RuntimeABI.h's anvil_rt_conv (s, N, C, K, groups, then x, y,
// kernel, stride, pad, dilation per spatial dimension) that cover what
// anvil-library-convs passes: 1-3 spatial dimensions, groups (depthwise
// too), strides, dilation, padding, 1x1 and 3x3 layers as in ResNet.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_TEST_CONVPROBLEMS_H
#define ANVIL_RUNTIME_TEST_CONVPROBLEMS_H

#include <cstdint>
#include <vector>

namespace anvil::test {

inline std::vector<std::vector<int64_t>> convProblems() {
  return {
      // 2-D, two groups, stride 2 (ops.mlir's @library_convolutions)
      {2, 2, 4, 6, 2, 9, 5, 3, 2, 1, 1, 8, 4, 3, 2, 1, 1},
      // 1-D, stride 3, dilation 2
      {1, 1, 3, 2, 1, 11, 3, 4, 3, 1, 2},
      // 3-D, mixed strides and padding
      {3, 1, 2, 2, 1, 5, 4, 2, 1, 0, 1, 4, 2, 3, 2, 1, 1, 6, 3, 2, 2, 0, 1},
      // ResNet's 3x3 and strided 1x1 layers
      {2, 4, 16, 32, 1, 14, 14, 3, 1, 1, 1, 14, 14, 3, 1, 1, 1},
      {2, 4, 32, 64, 1, 8, 4, 1, 2, 0, 1, 8, 4, 1, 2, 0, 1},
      // depthwise
      {2, 2, 8, 8, 8, 10, 10, 3, 1, 1, 1, 10, 10, 3, 1, 1, 1},
  };
}

/// Elements of a problem's x, y and w.
struct ConvSizes {
  int64_t x, y, w;
};
inline ConvSizes convSizes(const std::vector<int64_t> &p) {
  ConvSizes s{p[1] * p[2], p[1] * p[3], p[3] * (p[2] / p[4])};
  for (int64_t i = 0; i < p[0]; ++i) {
    s.x *= p[5 + 6 * i];
    s.y *= p[6 + 6 * i];
    s.w *= p[7 + 6 * i];
  }
  return s;
}

} // namespace anvil::test

#endif // ANVIL_RUNTIME_TEST_CONVPROBLEMS_H
