//===- membw.cu - a streaming kernel's bandwidth by where memory lives ----===//
//
// Why did the generated element-wise kernels of the first H200 run move
// 40-80 GB/s? They ran on managed memory that the trainer had zero-filled
// on the host. This measures one streaming kernel (y[i] = x[i] / s[i/1024],
// softmax's division: 4-byte loads and stores, one element a thread) over
// the same 2 x 1 GiB in six placements, each as the median of 10 launches
// after 3 warm-up launches, and prints GB/s (bytes read plus written per
// second) and the ratio to plain device memory measured in the same run:
//
//   device           cudaMalloc
//   managed-gpu      cudaMallocManaged, first touched by the GPU
//   managed-host     cudaMallocManaged, zero-filled on the host first (what
//                    the trainer did to every buffer, the workspace too)
//   managed-advised  managed-host, then preferred location the GPU and a
//                    prefetch to it (the runtime's buffers now)
//   managed-touched  managed-advised, with the host writing one float of
//                    each buffer between launches (a loss read, a batch
//                    written)
//   arena-host-read  the trainer's old workspace: one 16 GiB managed arena
//                    zero-filled on the host, the kernel's x and y 1 GiB
//                    views of it, and the host reading a float at its
//                    start between launches (the loss's copy out of the
//                    arena, which generated host code made every step)
//
//   nvcc -O3 -arch=sm_90 membw.cu -o membw && ./membw
//
//===----------------------------------------------------------------------===//
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void check(cudaError_t e, const char *what) {
  if (e == cudaSuccess)
    return;
  std::fprintf(stderr, "membw: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

__global__ void divide(const float *x, const float *s, float *y, size_t n) {
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = x[i] / s[i >> 10];
}

enum class Place { Device, ManagedGpu, ManagedHost, Advised, Touched, Arena };

float *allocate(Place place, size_t bytes, int device) {
  void *p = nullptr;
  if (place == Place::Device) {
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    check(cudaMemset(p, 0, bytes), "cudaMemset");
    return static_cast<float *>(p);
  }
  check(cudaMallocManaged(&p, bytes), "cudaMallocManaged");
  if (place == Place::ManagedGpu) {
    check(cudaMemset(p, 0, bytes), "cudaMemset");
    return static_cast<float *>(p);
  }
  std::memset(p, 0, bytes);
  if (place == Place::Advised || place == Place::Touched) {
    cudaMemLocation loc = {cudaMemLocationTypeDevice, device};
    // The cudaMemLocation forms: CUDA 13's plain names, 12.2's _v2.
#if CUDART_VERSION >= 13000
    check(cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, loc),
          "cudaMemAdvise");
    check(cudaMemPrefetchAsync(p, bytes, loc, 0, nullptr),
          "cudaMemPrefetchAsync");
#else
    check(cudaMemAdvise_v2(p, bytes, cudaMemAdviseSetPreferredLocation, loc),
          "cudaMemAdvise_v2");
    check(cudaMemPrefetchAsync_v2(p, bytes, loc, 0, nullptr),
          "cudaMemPrefetchAsync_v2");
#endif
  }
  return static_cast<float *>(p);
}

double measure(Place place, size_t n, int device) {
  size_t bytes = n * sizeof(float);
  float *arena = nullptr;
  if (place == Place::Arena) {
    size_t arenaBytes = size_t(16) << 30;
    check(cudaMallocManaged(&arena, arenaBytes), "cudaMallocManaged");
    std::memset(arena, 0, arenaBytes);
  }
  float *x = arena ? arena + (size_t(1) << 28) : allocate(place, bytes, device);
  float *y = arena ? arena + (size_t(3) << 28) : allocate(place, bytes, device);
  float *s =
      allocate(arena ? Place::ManagedHost : place, bytes / 1024 + 4, device);
  check(cudaDeviceSynchronize(), "setup");
  // Nonzero divisors, written where the kernels will find them.
  std::vector<float> ones(n / 1024 + 1, 1.0f);
  check(cudaMemcpy(s, ones.data(), (n / 1024 + 1) * sizeof(float),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy");
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  std::vector<float> ms;
  for (int i = 0; i < 13; ++i) {
    if (place == Place::Touched) {
      x[i] = 1.0f; // the host writes a float of each buffer
      volatile float sink = y[i];
      (void)sink;
    }
    if (place == Place::Arena) {
      volatile float sink = arena[16]; // the loss, read by the host
      (void)sink;
    }
    check(cudaEventRecord(start), "cudaEventRecord");
    divide<<<blocks, 256>>>(x, s, y, n);
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "the kernel");
    float t = 0;
    check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    if (i >= 3)
      ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  double median = ms[ms.size() / 2] / 1e3;
  for (float *p : {arena ? arena : x, arena ? nullptr : y, s})
    if (p)
      check(cudaFree(p), "cudaFree");
  return 2.0 * static_cast<double>(bytes) / median / 1e9;
}

} // namespace

int main() {
  int device = 0;
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  int concurrent = 0, pageable = 0;
  cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess,
                         device);
  cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, device);
  std::printf("device: %s, %d SMs, concurrentManagedAccess %d, "
              "pageableMemoryAccess %d\n",
              prop.name, prop.multiProcessorCount, concurrent, pageable);
  const size_t n = size_t(1) << 28; // 1 GiB of floats
  struct Row {
    const char *name;
    Place place;
  } rows[] = {{"device", Place::Device},
              {"managed-gpu", Place::ManagedGpu},
              {"managed-host", Place::ManagedHost},
              {"managed-advised", Place::Advised},
              {"managed-touched", Place::Touched},
              {"arena-host-read", Place::Arena}};
  double base = 0;
  for (const Row &row : rows) {
    double gbs = measure(row.place, n, device);
    if (row.place == Place::Device)
      base = gbs;
    std::printf("membw %-16s %8.1f GB/s  ratio to device memory %.3f\n",
                row.name, gbs, gbs / base);
  }
  return 0;
}
