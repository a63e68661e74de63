//===- sgemm_rate.cpp - the machine's SGEMM rate through Anvil's runtime --===//
//
// The ceiling the CPU benchmarks divide by: single-precision GEMM through
// anvil_rt_sgemm (OpenBLAS underneath), exactly as a compiled training
// step calls it. For each M N K given (default: a square 1024 and a
// 4096 x 512 x 512 product), runs one warm-up call and then as many calls
// as fit in about a second, and prints the best rate:
//
//   sgemm M=1024 N=1024 K=1024: 95.2 GFLOP/s (best of 47 calls)
//
// usage: anvil-sgemm-rate [--threads T] [M N K]...
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/RuntimeABI.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

double rate(int64_t m, int64_t n, int64_t k, int *calls) {
  std::vector<float> a(m * k), b(k * n), c(m * n);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float &x : a)
    x = u(rng);
  for (float &x : b)
    x = u(rng);
  auto once = [&] {
    anvil_rt_sgemm(0, 0, m, n, k, a.data(), k, 0, b.data(), n, 0, c.data(), n,
                   0, 1, /*accumulate=*/0);
  };
  once();
  double best = 1e30, total = 0;
  *calls = 0;
  while (total < 1.0 || *calls < 3) {
    auto t0 = std::chrono::steady_clock::now();
    once();
    double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    best = std::min(best, s);
    total += s;
    ++*calls;
  }
  return 2.0 * m * n * k / best / 1e9;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int64_t> sizes;
  int threads = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
      continue;
    }
    sizes.push_back(std::atoll(argv[i]));
  }
  if (sizes.empty())
    sizes = {1024, 1024, 1024, 4096, 512, 512};
  if (sizes.size() % 3) {
    std::fprintf(stderr, "usage: %s [--threads T] [M N K]...\n", argv[0]);
    return 1;
  }
  anvil_rt_set_num_threads(threads);
  for (size_t i = 0; i < sizes.size(); i += 3) {
    int calls = 0;
    double r = rate(sizes[i], sizes[i + 1], sizes[i + 2], &calls);
    std::printf("sgemm M=%lld N=%lld K=%lld: %.1f GFLOP/s (best of %d calls)\n",
                static_cast<long long>(sizes[i]),
                static_cast<long long>(sizes[i + 1]),
                static_cast<long long>(sizes[i + 2]), r, calls);
  }
  return 0;
}
