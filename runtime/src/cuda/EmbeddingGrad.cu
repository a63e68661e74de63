//===- EmbeddingGrad.cu - an embedding table's gradient, in parallel ------===//
//
// anvil_rt_cuda_embedding_grad_f32 (Cuda.h): anvil_rt_embedding_grad_f32's
// contract (RuntimeABI.h) on device pointers, with the same values bit for
// bit (a NaN's payload aside: a GPU's add returns its canonical NaN). The loop
// that contract describes adds each position's gradient row into its
// table row in turn; on a GPU, as a thread per column, that is `count`
// dependent read-modify-writes of global memory per thread (GPT-2's 8192
// tokens: milliseconds). Here, with no atomics (every run writes the same
// table, the one the CPU writes):
//
// 1. embeddingRanks: each position's rank in (row, position) order, the
//    row its id clamped to [0, rows): a thread per position compares its
//    row with every position's, staged kTile at a time in shared memory
//    (count^2 comparisons: 8192 positions make 67M, a few microseconds;
//    a BERT-large batch's 28K, 800M; beyond some 64K positions a radix
//    sort would be the better first step).
// 2. embeddingOrder: the positions and their rows in that order.
// 3. The table zeroed (cudaMemsetAsync: rows no position names stay 0).
// 4. embeddingSums: a CTA per (sorted position k, kThreads columns); where
//    k starts its row's run, the CTA stages the run's positions kThreads at
//    a time in shared memory and each thread adds its column of their
//    gradient rows in increasing position, from 0.0, and writes the sum
//    into the row: the CPU's additions in the CPU's order. Other CTAs
//    return at once.
//
// The scratch (ranks, order, rows: 3 count ints) comes from the
// stream-ordered allocator, so a CUDA graph of the step can hold the call.
// Errors abort with the call, the kernel and the shape. With
// ANVIL_CUDA_EMULATION (runtime/test/cuda-emulation) the kernels and this
// host side run on the CPU, where anvil-cuda-emulation-tests compares them
// with anvil_rt_embedding_grad_f32.
//
//===----------------------------------------------------------------------===//

#ifdef ANVIL_CUDA_EMULATION
#include "CudaEmulation.h"
#else
#include <cuda_runtime_api.h>
#endif

#include "KernelCall.h"

#include <climits>
#include <cstdint>
#include <string>

namespace {

using namespace anvil::rt::cuda::kernel_call;

constexpr int kThreads = 128;
/// Positions whose rows a CTA of embeddingRanks stages at a time.
constexpr int kTile = 1024;

/// Position n's table row: its id clamped to [0, rows).
__device__ __forceinline__ int rowOf(const int32_t *ids, int n, int rows) {
  int id = ids[n];
  return id < 0 ? 0 : id >= rows ? rows - 1 : id;
}

/// rank[i]: the positions before i in (row, position) order.
__global__ void __launch_bounds__(kThreads)
    embeddingRanks(const int32_t *ids, int count, int rows, int *rank) {
  ANVIL_DYNAMIC_SHARED(smem);
  int *tile = reinterpret_cast<int *>(smem);
  int i = static_cast<int>(blockIdx.x) * kThreads + threadIdx.x;
  int mine = i < count ? rowOf(ids, i, rows) : 0;
  int before = 0;
  for (int start = 0; start < count; start += kTile) {
    int n = count - start < kTile ? count - start : kTile;
    for (int t = threadIdx.x; t < n; t += kThreads)
      tile[t] = rowOf(ids, start + t, rows);
    __syncthreads();
    for (int t = 0; t < n; ++t) {
      int other = tile[t];
      before += other < mine || (other == mine && start + t < i);
    }
    __syncthreads();
  }
  if (i < count)
    rank[i] = before;
}

/// order[rank[i]] = i and sortedRows[rank[i]] = i's row.
__global__ void __launch_bounds__(kThreads)
    embeddingOrder(const int32_t *ids, const int *rank, int count, int rows,
                   int *order, int *sortedRows) {
  int i = static_cast<int>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= count)
    return;
  order[rank[i]] = i;
  sortedRows[rank[i]] = rowOf(ids, i, rows);
}

/// Where sorted position k = blockIdx.x starts its row's run: each thread's
/// column (blockIdx.y kThreads + threadIdx.x) of the run's gradient rows,
/// summed in increasing position from 0.0, into the table's row.
__global__ void __launch_bounds__(kThreads)
    embeddingSums(const float *grad, const int *order, const int *sortedRows,
                  int count, int64_t width, float *table) {
  int k = static_cast<int>(blockIdx.x);
  int row = sortedRows[k];
  if (k > 0 && sortedRows[k - 1] == row)
    return; // not the run's first: the whole CTA
  ANVIL_DYNAMIC_SHARED(smem);
  int *positions = reinterpret_cast<int *>(smem);
  int64_t column = static_cast<int64_t>(blockIdx.y) * kThreads + threadIdx.x;
  float sum = 0.0f;
  // The run's positions, kThreads at a time; -1 past its end (the rows are
  // sorted: a run's positions are consecutive in `order`).
  for (int first = k;; first += kThreads) {
    int m = first + static_cast<int>(threadIdx.x);
    positions[threadIdx.x] = m < count && sortedRows[m] == row ? order[m] : -1;
    __syncthreads();
    int staged = 0;
    while (staged < kThreads && positions[staged] >= 0) {
      if (column < width)
        sum += grad[static_cast<int64_t>(positions[staged]) * width + column];
      ++staged;
    }
    __syncthreads();
    if (staged < kThreads)
      break; // the same for every thread: the run ended in this chunk
  }
  if (column < width)
    table[static_cast<int64_t>(row) * width + column] = sum;
}

/// Launches `kernel` on the step stream with kThreads threads per CTA.
template <typename Kernel, typename... Args>
void launch(Kernel kernel, const char *name, dim3 grid, size_t smem,
            const Call &c, Args... args) {
  launchOnStepStream(kernel, grid, kThreads, smem, args...);
  check(cudaGetLastError(), "the launch", c, name);
}

} // namespace

extern "C" void anvil_rt_cuda_embedding_grad_f32(int64_t count, int64_t rows,
                                                 int64_t width,
                                                 const float *grad,
                                                 const int32_t *ids,
                                                 float *table) {
  auto n = [](int64_t x) { return std::to_string(x); };
  Call c{"anvil_rt_cuda_embedding_grad_f32",
         n(count) + " positions into " + n(rows) + " rows of " + n(width),
         "embedding grad " + n(count) + "x" + n(rows) + "x" + n(width),
         std::chrono::steady_clock::now()};
  if (count < 0 || rows < 1 || width < 0)
    failShape(c, "the counts must not be negative and the table needs a row");
  // The kernels index positions in 32 bits, a tile or a chunk past the
  // last.
  if (count > INT_MAX - kTile || rows > INT_MAX ||
      (width + kThreads - 1) / kThreads > 65535)
    failShape(c, "more than 2^31 - " + n(kTile + 1) +
                     " positions, 2^31 - 1 rows or " +
                     n(int64_t(65535) * kThreads) +
                     " columns are not supported");
  initialize(c);
  if (rows * width > 0)
    check(cudaMemsetAsync(table, 0,
                          static_cast<size_t>(rows * width) * sizeof(float),
                          stepStream()),
          "cudaMemsetAsync", c);
  if (count > 0 && width > 0) {
    int *scratch = nullptr; // rank, order, sortedRows
    check(cudaMallocAsync(reinterpret_cast<void **>(&scratch),
                          static_cast<size_t>(3 * count) * sizeof(int),
                          stepStream()),
          "cudaMallocAsync", c);
    int *rank = scratch, *order = scratch + count,
        *sortedRows = scratch + 2 * count;
    int positions = static_cast<int>(count), tableRows = static_cast<int>(rows);
    unsigned blocks = static_cast<unsigned>((count + kThreads - 1) / kThreads);
    launch(embeddingRanks, "embeddingRanks", dim3(blocks), kTile * sizeof(int),
           c, ids, positions, tableRows, rank);
    launch(embeddingOrder, "embeddingOrder", dim3(blocks), 0, c, ids,
           static_cast<const int *>(rank), positions, tableRows, order,
           sortedRows);
    dim3 sums(static_cast<unsigned>(count),
              static_cast<unsigned>((width + kThreads - 1) / kThreads));
    launch(embeddingSums, "embeddingSums", sums, kThreads * sizeof(int), c,
           grad, static_cast<const int *>(order),
           static_cast<const int *>(sortedRows), positions, width, table);
    check(cudaFreeAsync(scratch, stepStream()), "cudaFreeAsync", c);
  }
  finish(c);
}
