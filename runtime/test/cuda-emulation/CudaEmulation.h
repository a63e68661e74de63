//===- CudaEmulation.h - the CUDA that Attention.cu uses, run on the CPU --===//
//
// Lets runtime/src/cuda/Attention.cu compile as plain C++ (with
// ANVIL_CUDA_EMULATION defined it includes this header instead of the CUDA
// headers) and run, kernels and host side alike, on a machine without a
// GPU, so that anvil-cuda-emulation-tests can check the very kernels the GPU
// runs against the CPU's reference.
//
// What is emulated:
// - The language: __global__, __device__, __forceinline__,
//   __launch_bounds__; threadIdx, blockIdx, blockDim, gridDim; dim3,
//   float4; the int min/max of device code. `#pragma unroll` is ignored.
// - Launches (launch(), which Attention.cu's launchOnDefaultStream calls
//   instead of `<<<...>>>`): the CTAs run one after another on the calling
//   thread, each CTA's threads as fibers (ucontext) on that thread, before
//   launch() returns. A thread runs until it waits (a barrier, a warp
//   collective) or exits; then the next ready thread of the CTA runs, in
//   increasing thread order in even CTAs and decreasing order in odd ones.
//   Threads of one phase (between two barriers) thus never interleave, and
//   a read of what another thread writes in the same phase (a missing
//   barrier) sees the old value in one of the two orders.
// - __syncthreads (all threads of the CTA, none exited), __syncwarp and
//   __shfl_xor_sync (float; whole warps only) and mma.sync.m16n8k16.row.col
//   .f32.bf16.bf16.f32 (mmaM16N8K16Bf16; the PTX ISA's fragment layouts,
//   which are CUTLASS's SM80_16x8x16 ones; exact bf16 products, summed in
//   double, rounded to f32 once: the tensor cores' own rounding differs in
//   the last bits). Lanes of a warp at different collectives, a mask other
//   than the whole warp, or threads that can no longer all reach a barrier
//   (a deadlock, e.g. __syncthreads after some threads exited) abort with a
//   report of where each thread waits.
// - Dynamic shared memory (dynamicSharedMemory(), what Attention.cu's
//   ANVIL_DYNAMIC_SHARED declares here instead of its `extern __shared__`
//   array): the launch's bytes, filled with 0xFF (a NaN in f32 and bf16)
//   before each CTA, so that a read of what no thread wrote shows up as a
//   NaN in the results.
// - The runtime API calls of the host side: cudaGetLastError (launch
//   errors: block and grid limits, dynamic shared memory over 48 KB without
//   cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize)),
//   cudaFuncSetAttribute, cudaDeviceGetAttribute
//   (cudaDevAttrMaxSharedMemoryPerBlockOptin: Options::sharedMemoryOptin,
//   99 KB by default, sm_86/sm_89's, the least of the GPUs the kernels are
//   built for), cudaMallocAsync/cudaFreeAsync (allocate(), filled with
//   0xFF), cudaMemsetAsync, cudaStreamSynchronize and the error names.
// - Memory errors: allocate() and the dynamic shared memory end (rounded up
//   to 16 bytes) at an inaccessible page, so reading or writing past the end
//   faults; the fault is reported with the block and thread (unless a
//   sanitizer handles SIGSEGV), then kills the process.
// - Faults to inject (Options::fault): a CTA left out, a barrier ignored;
//   the tests use them to show that their checks catch such bugs.
//
// What is not: a memory model beyond the barriers (a fiber's writes are
// seen at once by every other; no caches, no reordering, no atomics),
// interleavings other than the two orders above, concurrent CTAs, streams
// (everything is synchronous), static __shared__ variables, other types and
// widths of the intrinsics, accesses before the start of a buffer or past
// its end within the 16-byte rounding, the GPU's expf/logf (the host's libm
// runs) and any timing. Launches from several host threads at once are not
// supported (the fault handler is process-wide). ASan warns that it does
// not fully support swapcontext, but the tests pass under it and UBSan.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TEST_CUDA_EMULATION_H
#define ANVIL_TEST_CUDA_EMULATION_H

#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

//===- The language -------------------------------------------------------===//

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1)
      : x(x), y(y), z(z) {}
};
struct alignas(16) float4 {
  float x, y, z, w;
};
constexpr int warpSize = 32;

/// The built-in variables of the emulated thread that runs (the emulator
/// sets them whenever it switches threads).
inline thread_local uint3 threadIdx{}, blockIdx{};
inline thread_local dim3 blockDim, gridDim;

/// Device code's int min and max (CUDA declares them at global scope).
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

/// cuda_bf16.h's bf16: the upper half of an f32.
struct __nv_bfloat16 {
  unsigned short bits;
};
/// To nearest, ties to even; NaN stays a (quiet) NaN.
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (std::isnan(f))
    bits |= 0x00400000u;
  else
    bits += 0x7FFFu + ((bits >> 16) & 1u);
  return {static_cast<unsigned short>(bits >> 16)};
}
inline float __bfloat162float(__nv_bfloat16 h) {
  uint32_t bits = static_cast<uint32_t>(h.bits) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.bits; }

//===- The runtime API's types --------------------------------------------===//

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
};
using cudaStream_t = struct CUstream_st *;
enum cudaDeviceAttr { cudaDevAttrMaxSharedMemoryPerBlockOptin = 97 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };

namespace anvil::cuda_emulation {

/// A fault the emulator injects, to show that the tests catch what they
/// guard against.
enum class Fault {
  None,
  SkipLastBlock,     ///< every launch leaves out its last CTA
  IgnoreSyncthreads, ///< __syncthreads returns at once
  IgnoreSyncwarp,    ///< __syncwarp returns at once
};

struct Options {
  /// cudaDevAttrMaxSharedMemoryPerBlockOptin, bytes: sm_86's and sm_89's.
  int sharedMemoryOptin = 99 * 1024;
  Fault fault = Fault::None;
  /// Run a launch's CTAs last first: a kernel whose CTAs write each other's
  /// outputs (a race on a GPU) gives other results in the two orders.
  bool reverseGrid = false;
  /// Attention.cu's bound on a launch's 32-bit element indices (INT_MAX on
  /// a GPU): lowered, the host side splits the batch over more launches.
  int64_t attentionIndexLimit = 2147483647;
};

inline Options &options() {
  static Options o;
  return o;
}

/// Injects `fault` into every launch while it lives (the tests' proof that
/// their checks catch what they guard against).
class InjectedFault {
public:
  explicit InjectedFault(Fault fault) { options().fault = fault; }
  InjectedFault(const InjectedFault &) = delete;
  InjectedFault &operator=(const InjectedFault &) = delete;
  ~InjectedFault() { options().fault = Fault::None; }
};

/// Prints "anvil cuda emulation: <message>" and aborts.
[[noreturn]] inline void fail(const std::string &message) {
  std::fprintf(stderr, "anvil cuda emulation: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

//===- Memory -------------------------------------------------------------===//

namespace detail {

inline size_t pageBytes() {
  static const size_t bytes = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return bytes;
}

/// The mappings allocate() made: data pointer -> (mapping, its bytes).
struct Mappings {
  std::mutex mutex;
  std::map<void *, std::pair<void *, size_t>> byData;
};
inline Mappings &mappings() {
  static Mappings m;
  return m;
}

} // namespace detail

/// `bytes` of read-write memory, 16-byte aligned, whose end rounded up to
/// 16 bytes is the start of an inaccessible page. Null when there is no
/// memory.
inline void *allocate(size_t bytes) {
  const size_t page = detail::pageBytes();
  const size_t data = (bytes + 15) / 16 * 16;
  const size_t mapped = (data + page - 1) / page * page + page;
  void *base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return nullptr;
  char *guard = static_cast<char *>(base) + mapped - page;
  if (mprotect(guard, page, PROT_NONE) != 0)
    fail("mprotect of a guard page failed");
  void *p = guard - data;
  detail::Mappings &m = detail::mappings();
  std::lock_guard<std::mutex> lock(m.mutex);
  m.byData[p] = {base, mapped};
  return p;
}

/// Frees what allocate() returned (null: nothing).
inline void release(void *p) {
  if (!p)
    return;
  detail::Mappings &m = detail::mappings();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto it = m.byData.find(p);
  if (it == m.byData.end())
    fail("release of memory that allocate() did not return");
  munmap(it->second.first, it->second.second);
  m.byData.erase(it);
}

//===- Threads, barriers, warp collectives --------------------------------===//

namespace detail {

/// Where an emulated thread is.
enum class State : unsigned char {
  Ready, ///< running, or may run
  Syncthreads,
  Syncwarp,
  Shuffle,
  Mma,
  Exited,
};

inline const char *describe(State s) {
  switch (s) {
  case State::Ready:
    return "ready";
  case State::Syncthreads:
    return "at __syncthreads";
  case State::Syncwarp:
    return "at __syncwarp";
  case State::Shuffle:
    return "at __shfl_xor_sync";
  case State::Mma:
    return "at mma.sync";
  case State::Exited:
    return "exited";
  }
  return "?";
}

struct Fiber {
  ucontext_t context;
  uint3 index;
  State state;
};

/// A warp's pending collective: what each lane brought, what each gets.
struct Warp {
  int arrived = 0;
  State kind = State::Ready;
  float in[32], out[32];
  int laneMask[32];
  uint32_t a[32][4], b[32][2];
  float c[32][4];
};

/// The CTA that runs on this host thread.
struct Block {
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  int threads = 0;
  int arrived = 0; ///< at __syncthreads
  int current = 0; ///< the fiber that runs
  bool reverse = false;
  ucontext_t launcher;
  unsigned char *shared = nullptr;
  size_t sharedBytes = 0;
  void (*body)(void *) = nullptr;
  void *bodyContext = nullptr;

  /// The next ready fiber after the current one in this CTA's order, or -1.
  int nextReady() const {
    for (int step = 1; step <= threads; ++step) {
      int i = reverse ? (current - step + threads) % threads
                      : (current + step) % threads;
      if (fibers[i].state == State::Ready)
        return i;
    }
    return -1;
  }

  /// "threads 0-63 at __syncthreads, 64-127 exited".
  std::string where() const {
    std::string s;
    for (int i = 0; i < threads;) {
      int j = i;
      while (j + 1 < threads && fibers[j + 1].state == fibers[i].state)
        ++j;
      s += s.empty() ? "threads " : ", ";
      s += std::to_string(i);
      if (j > i) {
        s += '-';
        s += std::to_string(j);
      }
      s += ' ';
      s += describe(fibers[i].state);
      i = j + 1;
    }
    return s;
  }

  std::string name() const {
    return "block (" + std::to_string(blockIdx.x) + ", " +
           std::to_string(blockIdx.y) + ", " + std::to_string(blockIdx.z) + ")";
  }
};

inline thread_local Block *block = nullptr;

inline Block &running() {
  if (!block)
    fail("a device function was called outside of an emulated launch");
  return *block;
}

/// Makes fiber `next` the running one; returns when the caller's fiber is
/// switched back to.
inline void switchTo(Block &b, int next) {
  Fiber &self = b.fibers[b.current];
  b.current = next;
  threadIdx = b.fibers[next].index;
  swapcontext(&self.context, &b.fibers[next].context);
}

/// The running fiber waits (`why`) until another makes it ready.
inline void suspend(State why) {
  Block &b = *block;
  b.fibers[b.current].state = why;
  int next = b.nextReady();
  if (next < 0)
    fail("deadlock in " + b.name() + ": " + b.where());
  switchTo(b, next);
}

/// What every fiber starts with: the kernel, then the next fiber (or, the
/// last, back to launch()).
inline void fiberMain() {
  Block &b = *block;
  b.body(b.bodyContext);
  b.fibers[b.current].state = State::Exited;
  int next = b.nextReady();
  if (next >= 0) {
    b.current = next;
    threadIdx = b.fibers[next].index;
    setcontext(&b.fibers[next].context);
  }
  for (const Fiber &f : b.fibers)
    if (f.state != State::Exited)
      fail("deadlock in " + b.name() + ": " + b.where());
  setcontext(&b.launcher);
  fail("setcontext failed");
}

inline void syncthreads() {
  Block &b = running();
  if (options().fault == Fault::IgnoreSyncthreads)
    return;
  if (++b.arrived < b.threads) {
    suspend(State::Syncthreads);
    return;
  }
  b.arrived = 0;
  for (Fiber &f : b.fibers)
    if (f.state == State::Syncthreads)
      f.state = State::Ready;
}

/// The running lane joins its warp's collective `kind`; the last lane to
/// arrive calls complete(warp) and makes the others ready. Returns the
/// warp, whose `out`/`c` then hold the lane's result.
template <typename Complete>
Warp &warpCollective(State kind, unsigned mask, Complete complete) {
  Block &b = running();
  const int w = b.current / 32;
  const int lanes = std::min(32, b.threads - 32 * w);
  const unsigned whole = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
  Warp &warp = b.warps[w];
  if (mask != whole)
    fail("mask " + std::to_string(mask) + " " + describe(kind) + " in " +
         b.name() + ": only whole warps are emulated");
  if (warp.arrived > 0 && warp.kind != kind)
    fail("warp " + std::to_string(w) + " of " + b.name() +
         " diverged: thread " + std::to_string(b.current) + " arrives " +
         describe(kind) + " while others wait " + describe(warp.kind));
  warp.kind = kind;
  if (++warp.arrived < lanes) {
    suspend(kind);
    return warp;
  }
  warp.arrived = 0;
  complete(warp, lanes);
  for (int l = 0; l < lanes; ++l)
    if (b.fibers[32 * w + l].state == kind)
      b.fibers[32 * w + l].state = State::Ready;
  return warp;
}

} // namespace detail

/// The running CTA's dynamic shared memory.
inline unsigned char *dynamicSharedMemory() { return detail::running().shared; }

/// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {c} = {a} {b} + {c}
/// of the running thread's warp. Fragments (g = lane / 4, t = lane % 4,
/// bf16 pairs lower index in the low half): a0..a7 = A[g][2t, 2t+1],
/// A[g+8][2t, 2t+1], A[g][2t+8, 2t+9], A[g+8][2t+8, 2t+9]; b0..b3 =
/// B[2t, 2t+1][g], B[2t+8, 2t+9][g]; c0..c3 = C[g][2t, 2t+1],
/// C[g+8][2t, 2t+1].
inline void mmaM16N8K16Bf16(float (&c)[4], const uint32_t (&a)[4],
                            const uint32_t (&b)[2]) {
  detail::Block &blk = detail::running();
  const int lane = blk.current % 32;
  detail::Warp &w = blk.warps[blk.current / 32];
  std::memcpy(w.a[lane], a, sizeof a);
  std::memcpy(w.b[lane], b, sizeof b);
  std::memcpy(w.c[lane], c, sizeof c);
  detail::warpCollective(
      detail::State::Mma, 0xffffffffu, [](detail::Warp &m, int lanes) {
        if (lanes != 32)
          fail("mma.sync needs a whole warp");
        auto half = [](uint32_t reg, int high) {
          __nv_bfloat16 h{static_cast<unsigned short>(high ? reg >> 16 : reg)};
          return static_cast<double>(__bfloat162float(h));
        };
        double A[16][16], B[16][8];
        for (int l = 0; l < 32; ++l) {
          const int g = l / 4, t = l % 4;
          for (int r = 0; r < 4; ++r) // a[r]: rows g, g+8, g, g+8; +8 columns
            for (int h = 0; h < 2; ++h)
              A[g + 8 * (r % 2)][2 * t + h + 8 * (r / 2)] = half(m.a[l][r], h);
          for (int r = 0; r < 2; ++r) // b[r]: rows 2t, 2t+1 (+8)
            for (int h = 0; h < 2; ++h)
              B[2 * t + h + 8 * r][g] = half(m.b[l][r], h);
        }
        for (int l = 0; l < 32; ++l) {
          const int g = l / 4, t = l % 4;
          for (int e = 0; e < 4; ++e) {
            const int row = g + 8 * (e / 2), col = 2 * t + e % 2;
            double sum = 0;
            for (int k = 0; k < 16; ++k)
              sum += A[row][k] * B[k][col];
            m.c[l][e] = static_cast<float>(m.c[l][e] + sum);
          }
        }
      });
  std::memcpy(c, w.c[lane], sizeof c);
}

//===- Launches -----------------------------------------------------------===//

namespace detail {

inline thread_local cudaError_t lastError = cudaSuccess;

/// cudaFuncAttributeMaxDynamicSharedMemorySize of each kernel.
struct SharedLimits {
  std::mutex mutex;
  std::map<const void *, int> byKernel;
};
inline SharedLimits &sharedLimits() {
  static SharedLimits s;
  return s;
}

/// The launch's error as CUDA reports it, or cudaSuccess.
inline cudaError_t checkLaunch(const void *kernel, dim3 grid, dim3 threads,
                               size_t sharedBytes) {
  const uint64_t n = uint64_t{threads.x} * threads.y * threads.z;
  if (n == 0 || n > 1024 || threads.z > 64 || grid.x == 0 || grid.y == 0 ||
      grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535)
    return cudaErrorInvalidConfiguration;
  if (sharedBytes > 48 * 1024) {
    SharedLimits &s = sharedLimits();
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.byKernel.find(kernel);
    if (it == s.byKernel.end() || sharedBytes > static_cast<size_t>(it->second))
      return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

/// Fiber stacks, kept for the host thread's later launches; each has an
/// inaccessible page below it.
struct Stacks {
  static constexpr size_t kBytes = 256 * 1024;
  std::vector<char *> bases;
  char *get(size_t i) {
    while (bases.size() <= i) {
      void *p = mmap(nullptr, kBytes + pageBytes(), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED || mprotect(p, pageBytes(), PROT_NONE) != 0)
        fail("no memory for the stacks of the emulated threads");
      bases.push_back(static_cast<char *>(p));
    }
    return bases[i] + pageBytes();
  }
  ~Stacks() {
    for (char *p : bases)
      munmap(p, kBytes + pageBytes());
  }
};
inline thread_local Stacks stacks;

/// Reports a memory fault of an emulated thread; returning re-raises it
/// with the default action (SA_RESETHAND), which ends the process.
inline void onFault(int signal, siginfo_t *info, void *) {
  char message[512];
  Block *b = block;
  int n = std::snprintf(
      message, sizeof message,
      "anvil cuda emulation: %s at address %p in block (%u, %u, %u), thread "
      "(%u, %u, %u) (out of bounds? allocations and the block's %zu bytes of "
      "dynamic shared memory at %p end at an inaccessible page)\n",
      signal == SIGSEGV ? "segmentation fault" : "bus error", info->si_addr,
      blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z,
      b ? b->sharedBytes : 0, b ? static_cast<void *>(b->shared) : nullptr);
  if (n > 0 && write(2, message, static_cast<size_t>(n)) < 0)
    return;
}

/// Installs onFault (on its own stack) for the lifetime of a launch, unless
/// something else (a sanitizer) handles SIGSEGV already.
class FaultReporter {
public:
  FaultReporter() {
    struct sigaction old;
    if (sigaction(SIGSEGV, nullptr, &old) != 0 || old.sa_handler != SIG_DFL)
      return;
    stack_.resize(64 * 1024);
    stack_t alt{};
    alt.ss_sp = stack_.data();
    alt.ss_size = stack_.size();
    if (sigaltstack(&alt, &oldStack_) != 0)
      return;
    struct sigaction action {};
    action.sa_sigaction = onFault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &oldSegv_);
    sigaction(SIGBUS, &action, &oldBus_);
    installed_ = true;
  }
  ~FaultReporter() {
    if (!installed_)
      return;
    sigaction(SIGSEGV, &oldSegv_, nullptr);
    sigaction(SIGBUS, &oldBus_, nullptr);
    sigaltstack(&oldStack_, nullptr);
  }
  FaultReporter(const FaultReporter &) = delete;
  FaultReporter &operator=(const FaultReporter &) = delete;

private:
  bool installed_ = false;
  std::vector<char> stack_;
  stack_t oldStack_{};
  struct sigaction oldSegv_ {
  }, oldBus_{};
};

/// Makes `f` ready to start fiberMain on `stack` (Stacks::kBytes). Apart
/// from run(): getcontext returns twice for all the compiler knows.
[[gnu::noinline]] inline void start(Fiber &f, char *stack) {
  f.state = State::Ready;
  getcontext(&f.context);
  f.context.uc_stack.ss_sp = stack;
  f.context.uc_stack.ss_size = Stacks::kBytes;
  f.context.uc_link = nullptr;
  makecontext(&f.context, fiberMain, 0);
}

/// Runs body(context) as every thread of every CTA of `grid`.
inline void run(dim3 grid, dim3 threads, size_t sharedBytes,
                void (*body)(void *), void *context) {
  if (block)
    fail("a launch from inside an emulated kernel");
  Block b;
  b.threads = static_cast<int>(threads.x * threads.y * threads.z);
  b.fibers.resize(b.threads);
  b.warps.resize((b.threads + 31) / 32);
  b.body = body;
  b.bodyContext = context;
  b.sharedBytes = sharedBytes;
  b.shared = static_cast<unsigned char *>(allocate(sharedBytes));
  if (!b.shared)
    fail("no memory for " + std::to_string(sharedBytes) +
         " bytes of shared memory");
  for (int i = 0; i < b.threads; ++i) {
    const unsigned u = static_cast<unsigned>(i);
    b.fibers[i].index = {u % threads.x, u / threads.x % threads.y,
                         u / (threads.x * threads.y)};
  }
  FaultReporter reporter;
  gridDim = grid;
  blockDim = threads;
  const uint64_t blocks = uint64_t{grid.x} * grid.y * grid.z;
  for (uint64_t i = 0; i < blocks; ++i) {
    if (options().fault == Fault::SkipLastBlock && i + 1 == blocks)
      continue;
    const uint64_t n = options().reverseGrid ? blocks - 1 - i : i;
    blockIdx = {static_cast<unsigned>(n % grid.x),
                static_cast<unsigned>(n / grid.x % grid.y),
                static_cast<unsigned>(n / (uint64_t{grid.x} * grid.y))};
    std::memset(b.shared, 0xFF, sharedBytes);
    for (int t = 0; t < b.threads; ++t)
      start(b.fibers[t], stacks.get(static_cast<size_t>(t)));
    for (Warp &w : b.warps)
      w.arrived = 0;
    b.arrived = 0;
    b.reverse = i % 2 == 1;
    b.current = b.reverse ? b.threads - 1 : 0;
    threadIdx = b.fibers[b.current].index;
    block = &b;
    swapcontext(&b.launcher, &b.fibers[b.current].context);
    block = nullptr;
  }
  release(b.shared);
}

} // namespace detail

/// kernel<<<grid, threads, sharedBytes>>>(args...): runs every CTA before
/// it returns; a launch error (as CUDA's) is left for cudaGetLastError.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 threads,
            size_t sharedBytes, Args... args) {
  cudaError_t e = detail::checkLaunch(reinterpret_cast<const void *>(kernel),
                                      grid, threads, sharedBytes);
  if (e != cudaSuccess) {
    detail::lastError = e;
    return;
  }
  auto body = [&] { kernel(args...); };
  detail::run(
      grid, threads, sharedBytes,
      [](void *context) { (*static_cast<decltype(body) *>(context))(); },
      &body);
}

} // namespace anvil::cuda_emulation

//===- Device functions ---------------------------------------------------===//

inline void __syncthreads() { anvil::cuda_emulation::detail::syncthreads(); }

inline void __syncwarp(unsigned mask = 0xffffffffu) {
  namespace emu = anvil::cuda_emulation;
  if (emu::options().fault == emu::Fault::IgnoreSyncwarp)
    return;
  emu::detail::warpCollective(emu::detail::State::Syncwarp, mask,
                              [](emu::detail::Warp &, int) {});
}

inline float __shfl_xor_sync(unsigned mask, float value, int laneMask,
                             int width = warpSize) {
  namespace emu = anvil::cuda_emulation;
  emu::detail::Block &b = emu::detail::running();
  if (width != warpSize)
    emu::fail("__shfl_xor_sync of width " + std::to_string(width) +
              ": only whole warps are emulated");
  const int lane = b.current % 32;
  emu::detail::Warp &w = b.warps[b.current / 32];
  w.in[lane] = value;
  w.laneMask[lane] = laneMask;
  emu::detail::warpCollective(
      emu::detail::State::Shuffle, mask, [](emu::detail::Warp &m, int lanes) {
        for (int l = 0; l < lanes; ++l) {
          int from = l ^ m.laneMask[l];
          m.out[l] = from < lanes ? m.in[from] : m.in[l];
        }
      });
  return w.out[lane];
}

//===- The runtime API ----------------------------------------------------===//

inline const char *cudaGetErrorName(cudaError_t e) {
  switch (e) {
  case cudaSuccess:
    return "cudaSuccess";
  case cudaErrorInvalidValue:
    return "cudaErrorInvalidValue";
  case cudaErrorMemoryAllocation:
    return "cudaErrorMemoryAllocation";
  case cudaErrorInvalidConfiguration:
    return "cudaErrorInvalidConfiguration";
  }
  return "cudaErrorUnknown";
}

inline const char *cudaGetErrorString(cudaError_t e) {
  switch (e) {
  case cudaSuccess:
    return "no error";
  case cudaErrorInvalidValue:
    return "invalid argument";
  case cudaErrorMemoryAllocation:
    return "out of memory";
  case cudaErrorInvalidConfiguration:
    return "invalid configuration argument";
  }
  return "unknown error";
}

inline cudaError_t cudaGetLastError() {
  cudaError_t e = anvil::cuda_emulation::detail::lastError;
  anvil::cuda_emulation::detail::lastError = cudaSuccess;
  return e;
}

inline cudaError_t cudaGetDevice(int *device) {
  *device = 0;
  return cudaSuccess;
}

inline cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attribute,
                                          int device) {
  if (attribute != cudaDevAttrMaxSharedMemoryPerBlockOptin || device != 0)
    return cudaErrorInvalidValue;
  *value = anvil::cuda_emulation::options().sharedMemoryOptin;
  return cudaSuccess;
}

template <typename T>
cudaError_t cudaFuncSetAttribute(T *kernel, cudaFuncAttribute attribute,
                                 int value) {
  namespace emu = anvil::cuda_emulation;
  if (attribute != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      value > emu::options().sharedMemoryOptin)
    return cudaErrorInvalidValue;
  emu::detail::SharedLimits &s = emu::detail::sharedLimits();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.byKernel[reinterpret_cast<const void *>(kernel)] = value;
  return cudaSuccess;
}

/// Synchronous: memory filled with 0xFF (NaNs), ending at a guard page.
inline cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t) {
  *p = anvil::cuda_emulation::allocate(bytes);
  if (!*p)
    return cudaErrorMemoryAllocation;
  std::memset(*p, 0xFF, bytes);
  return cudaSuccess;
}

/// Synchronous.
inline cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes,
                                   cudaStream_t) {
  std::memset(p, value, bytes);
  return cudaSuccess;
}

inline cudaError_t cudaFreeAsync(void *p, cudaStream_t) {
  anvil::cuda_emulation::release(p);
  return cudaSuccess;
}

inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }

#endif // ANVIL_TEST_CUDA_EMULATION_H
