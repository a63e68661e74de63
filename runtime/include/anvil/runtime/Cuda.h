//===- Cuda.h - the CUDA device of the runtime ---------------------*- C++
//-*-===//
//
// What CUDA executables link (runtime/src/cuda, libanvil_cuda.a, built when
// the CUDA toolkit is found):
//
// - The driver is loaded at run time (dlopen of libcuda.so.1, entry points
//   through cuGetProcAddress), not linked: an executable built here starts
//   on a machine without a GPU and says so, instead of failing to load.
// - The functions MLIR's lowering of gpu.launch_func calls (mgpuModuleLoad,
//   mgpuModuleGetFunction, mgpuLaunchKernel, mgpuStream*): their names and
//   signatures are MLIR's (what `gpu-to-llvm` emits), the rest of the
//   generated code's ABI is Anvil's `anvil_rt_cuda_*`.
// - Every driver and cuBLAS error is reported with the call, the kernel or
//   region it was for, and the training step; generated code cannot handle
//   an error mid-step, so those calls print the report and abort.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_CUDA_H
#define ANVIL_RUNTIME_CUDA_H

#include "anvil/runtime/RuntimeABI.h"
#include "anvil/runtime/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace anvil::rt {
class Communicator;
} // namespace anvil::rt

namespace anvil::rt::cuda {

/// Whether a CUDA driver and at least one device are present. The first
/// call loads the driver, initializes it and makes device `LOCAL_RANK`
/// (0 without it) current on the calling thread; a failure is remembered
/// and returned again.
Status initialize();

/// The current device.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int64_t memoryBytes = 0;
  int computeMajor = 0, computeMinor = 0;
  int multiprocessors = 0;
};
Expected<DeviceInfo> currentDevice();

/// The training step errors are reported for (the trainer sets it before
/// each step; -1: not in a step).
void setCurrentStep(int64_t step);

/// "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (invalid argument), for
/// kernel 'k', at step 12": the report of driver result `result` of `call`
/// for `what` (a kernel or region name; may be empty).
std::string describeDriverError(int result, const char *call,
                                const std::string &what);

/// The name `function` (a CUfunction) was looked up by, or "".
std::string kernelName(void *function);

/// Where in a step the calling thread is, for a report: ", at step 12,
/// after kernel 'train_step__dispatch_43_kernel'" (the last kernel of
/// generated code it launched in the step, if any), or "" outside a step.
std::string whereInStep();

/// Prints "anvil: " `message` whereInStep() and aborts: the failure of a
/// library call (cuBLAS, cuBLASLt, cuDNN, the runtime's own kernels) or of
/// its arguments.
[[noreturn]] void failInStep(const std::string &message);

/// Whether kernels (and NCCL) can address `ptr`: managed or device memory.
bool isDeviceAddressable(const void *ptr);

/// How a step's kernels and library calls are launched
/// (ANVIL_CUDA_LAUNCHES; cuda::initialize rejects any other value).
/// Every mode queues them, in order, on one stream (stepStream()).
enum class LaunchMode {
  /// "graph" (the default): the training step is captured once per set of
  /// buffers as a CUDA graph and replayed (anvil_rt_run_step), where the
  /// compiler found it capturable; otherwise as "async".
  Graph,
  /// "async": launched one by one, waited for at the step's end.
  Async,
  /// "sync" (and whenever ANVIL_PROFILE=1): every launch and library call
  /// is waited for, so an error names the kernel that failed.
  Sync,
};
LaunchMode launchMode();

/// The stream (a CUstream) every kernel, library call and copy of a step
/// runs on: one non-blocking stream of the process, which orders them.
void *stepStream();

/// Waits for the step stream, reporting a failure as the driver's error
/// for `after` (a kernel's or a library call's failure surfaces here).
Status synchronizeStepStream(const char *after);

/// While anvil_rt_run_step captures the step stream into a graph, a call
/// that fails (a library that cannot be captured, a synchronization)
/// records `what` (the first is reported) and returns true: the caller
/// then returns as if the call had been queued, and the step runs again
/// without a graph once the capture ends. Otherwise false: the caller
/// reports the error as usual.
bool recordCaptureFailure(const std::string &what);

/// With ANVIL_PROFILE=1 in the environment, the process's wall time in
/// each kernel and library call (every launch is synchronized, so the time
/// from a launch to the synchronization after it is the kernel's), printed
/// at exit to stderr, most expensive first. `name` is a kernel's or a
/// library call's; profileAdd counts one call of `seconds`.
bool profiling();
void profileAdd(const std::string &name, double seconds);

/// An NCCL communicator over the ranks of `host` (an MPI communicator of
/// one mesh axis), a collective call of its ranks: they agree that each
/// wants it (`wanted`) and can open NCCL and its device, rank 0's
/// ncclUniqueId goes to the others through `host`, every rank joins with
/// ncclCommInitRank, and they agree that all joined. On success the result
/// owns `host` (moved from); on failure, on every rank, `host` is left as
/// it was. The f32 collectives of device-addressable buffers
/// run in NCCL; host buffers, broadcast, barrier, split and abort stay with
/// `host`. NCCL is opened at run time (libnccl.so.2): its absence is an
/// error here, not a missing library at start-up.
Expected<std::unique_ptr<Communicator>>
makeNCCLCommunicator(std::unique_ptr<Communicator> &host, bool wanted);

/// For tests, and needing no GPU: the dims of y that cuDNN computes for
/// anvil_rt_conv problem `problem` (RuntimeABI.h) from the descriptors
/// anvil_rt_cuda_conv makes of it (N, K and the spatial sizes; a 1-D
/// problem has its unit height in front), or why cuDNN refused them (or is
/// missing).
Expected<std::vector<int64_t>> cudnnForwardDims(const int64_t *problem,
                                                bool bf16);

/// Which implementation runs the fused attention calls with bf16 products
/// (anvil_rt_cuda_attention_f32 and its gradient with `bf16`):
/// ANVIL_CUDA_ATTENTION=cudnn (the default: cuDNN's fused scaled-dot-product
/// attention through its graph API wherever cuDNN takes the shape, Anvil's
/// kernels elsewhere) or anvil (Anvil's kernels always). Calls with f32
/// products always run Anvil's kernels (cuDNN's are bf16 and fp8 only).
/// Any other value aborts the first attention call with bf16 products.
enum class AttentionLibrary { Cudnn, Anvil };
AttentionLibrary attentionLibrary();
/// For tests: overrides ANVIL_CUDA_ATTENTION from now on.
void setAttentionLibrary(AttentionLibrary library);

/// A fused attention problem (anvil_rt_attention_f32's sizes, RuntimeABI.h).
struct AttentionShape {
  int64_t batch, heads, kvHeads, queries, keys, dim, valueDim;
  float scale;
  bool causal;
  /// Whether the scores get a (batch, keys) f32 key bias.
  bool keyBias = false;
};

/// For tests, and needing no GPU: whether cuDNN's frontend accepts the
/// graph anvil_rt_cuda_attention_f32 (or, with `backward`, its gradient)
/// builds of `shape` for a GPU of compute capability `sm` (90: sm_90), as
/// its support checks say before any engine is asked; or why not (or why
/// cuDNN is missing).
Status cudnnAttentionSupport(const AttentionShape &shape, bool backward,
                             int sm);

/// For tests: the attention calls (forward and gradient) cuDNN ran in this
/// process.
int64_t cudnnAttentionCalls();

/// For tests: with `on`, the cuBLASLt GEMMs that have a fallback take it,
/// as if cuBLASLt had no algorithm for them: the bf16 GEMMs
/// (anvil_rt_cuda_gemm_bf16 and _rounded: cuBLAS's GEMM) and the weight's
/// gradient with its bias's (anvil_rt_cuda_gemm_weight_bias_grad: two
/// GEMMs).
void setGemmFallback(bool on);
bool gemmFallback();

/// For tests: the bf16 cuBLASLt matmuls queued in this process (the bf16
/// GEMMs' and the epilogue GEMMs').
int64_t bf16LtGemms();

} // namespace anvil::rt::cuda

extern "C" {
// MLIR's launch ABI (gpu-to-llvm): modules are loaded from the embedded
// cubins by a constructor of the generated code; each launch asks for a
// stream, launches on it, synchronizes and destroys it. Here the stream is
// always the step stream, and the synchronization waits only in "sync"
// mode (LaunchMode).
void *mgpuModuleLoad(void *data, uint64_t bytes);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, int64_t gridX, int64_t gridY,
                      int64_t gridZ, int64_t blockX, int64_t blockY,
                      int64_t blockZ, int32_t sharedBytes, void *stream,
                      void **params, void **extra, int64_t paramCount);
void *mgpuStreamCreate(void);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamDestroy(void *stream);

/// Memory that host code and kernels both address (managed): the
/// trainer's buffers and anything generated code allocates.
void *anvil_rt_cuda_alloc(int64_t bytes);
void anvil_rt_cuda_free(void *ptr);

/// anvil_rt_sgemm's contract (RuntimeABI.h) on device pointers, through
/// cuBLAS: for i in [0, batch): C_i += op(A_i) op(B_i), row-major (C_i =
/// with `accumulate` 0: beta = 0). Queues the product on the step stream.
void anvil_rt_cuda_sgemm(int32_t transA, int32_t transB, int64_t m, int64_t n,
                         int64_t k, const float *a, int64_t lda,
                         int64_t strideA, const float *b, int64_t ldb,
                         int64_t strideB, float *c, int64_t ldc,
                         int64_t strideC, int64_t batch, int32_t accumulate);

/// anvil_rt_gemm_bf16's contract (RuntimeABI.h) on device pointers,
/// through cuBLAS's bf16 GEMM (tensor cores, f32 accumulation and C).
/// Queues the product on the step stream.
void anvil_rt_cuda_gemm_bf16(int32_t transA, int32_t transB, int64_t m,
                             int64_t n, int64_t k, const uint16_t *a,
                             int64_t lda, int64_t strideA, const uint16_t *b,
                             int64_t ldb, int64_t strideB, float *c,
                             int64_t ldc, int64_t strideC, int64_t batch,
                             int32_t accumulate);

/// anvil_rt_gemm_bf16_rounded's contract (RuntimeABI.h) on device
/// pointers: cuBLAS on the tensor cores, f32 accumulation, C written in
/// bf16 (the f32 result rounded to nearest even). Queues the product on
/// the step stream.
void anvil_rt_cuda_gemm_bf16_rounded(int32_t transA, int32_t transB, int64_t m,
                                     int64_t n, int64_t k, const uint16_t *a,
                                     int64_t lda, int64_t strideA,
                                     const uint16_t *b, int64_t ldb,
                                     int64_t strideB, uint16_t *c, int64_t ldc,
                                     int64_t strideC, int64_t batch);

/// anvil_rt_embedding_grad_f32's contract (RuntimeABI.h) on device
/// pointers, the same values bit for bit (a NaN's payload aside: a GPU's
/// add returns its canonical NaN), in parallel (EmbeddingGrad.cu): the
/// positions sorted by (row, position), then a thread per row and column sums
/// its gradient rows in order. Queues its kernels on the step stream; no
/// atomics, so every run writes the same table.
void anvil_rt_cuda_embedding_grad_f32(int64_t count, int64_t rows,
                                      int64_t width, const float *grad,
                                      const int32_t *ids, float *table);

/// anvil_rt_gemm_bias's, anvil_rt_gemm_bias_gelu's and
/// anvil_rt_gemm_dgelu_bgrad's contracts (RuntimeABI.h) on device pointers:
/// one cuBLASLt GEMM each, with the BIAS, GELU_AUX_BIAS (GELU_BIAS with a
/// null `pre`) and DGELU_BGRAD epilogues (n a multiple of 8 for the GELU's).
/// Queue the product on the step stream; a failure names the call, the
/// epilogue and the shapes.
void anvil_rt_cuda_gemm_bias(int32_t transB, int64_t m, int64_t n, int64_t k,
                             const uint16_t *a, const uint16_t *b,
                             const uint16_t *bias, uint16_t *out);
void anvil_rt_cuda_gemm_bias_gelu(int32_t transB, int64_t m, int64_t n,
                                  int64_t k, const uint16_t *a,
                                  const uint16_t *b, const uint16_t *bias,
                                  uint16_t *out, uint16_t *pre);
void anvil_rt_cuda_gemm_dgelu_bgrad(int32_t transB, int64_t m, int64_t n,
                                    int64_t k, const uint16_t *a,
                                    const uint16_t *b, const uint16_t *pre,
                                    uint16_t *preGrad, uint16_t *biasGrad);

/// anvil_rt_gemm_weight_bias_grad's contract (RuntimeABI.h) on device
/// pointers: one cuBLASLt GEMM with the BGRADA epilogue (or, where
/// cuBLASLt offers none for the shape, the GEMM and the sum as a product
/// with a vector of ones, the same sums). Queues the work on the step
/// stream.
void anvil_rt_cuda_gemm_weight_bias_grad(int64_t m, int64_t k, int64_t n,
                                         const uint16_t *x,
                                         const uint16_t *grad,
                                         uint16_t *weightGrad,
                                         uint16_t *biasGrad);

/// anvil_rt_conv's contract (RuntimeABI.h) on device pointers, one cuDNN
/// call (cudnnConvolutionForward, ...BackwardData, ...BackwardFilter; cuDNN
/// 9 opened at run time): a deterministic algorithm, f32 without TF32,
/// bf16 on the tensor cores with f32 accumulation. `problem` is host
/// memory. Queues the call on the step stream; a failure names the call,
/// cuDNN's message and the problem.
void anvil_rt_cuda_conv(int32_t kind, int32_t bf16, const int64_t *problem,
                        const void *a, const void *b, void *c);

/// anvil_rt_attention_f32's contract (RuntimeABI.h) on device pointers,
/// through Anvil's fused flash-attention kernels (runtime/src/cuda/
/// Attention.cu): no (queries x keys) matrix is stored. With `bf16` the
/// products read bf16 operands on the tensor cores (f32 accumulation),
/// through cuDNN's fused attention where it takes the shape
/// (AttentionLibrary; the operands copied to bf16 and the results back);
/// otherwise they are f32 FMAs (no TF32). dim and valueDim up to 128 (the
/// tiles are padded to 16, 32, 64 or 128); anything else fails, naming the
/// call and the shape. `layouts` is host memory. The kernels index each
/// tensor in 32 bits: a batch whose tensors span more than 2^31 elements
/// runs in several launches of fewer batch elements (one batch element of
/// a tensor spanning more fails). Queues the kernels that write out and lse
/// on the step stream. `keyBias` is device memory, or null (none); cuDNN
/// takes it as its graph's bias, (batch, 1, 1, keys), when its rows are
/// 16-byte aligned.
void anvil_rt_cuda_attention_f32(const float *q, const float *k, const float *v,
                                 const float *keyBias, float *out, float *lse,
                                 int64_t batch, int64_t heads, int64_t kvHeads,
                                 int64_t queries, int64_t keys, int64_t dim,
                                 int64_t valueDim, float scale, int32_t causal,
                                 int32_t bf16,
                                 const anvil_rt_attention_layout *layouts);

/// anvil_rt_attention_grad_f32's contract (RuntimeABI.h) on device
/// pointers: dq, dk and dv overwritten from out and lse of
/// anvil_rt_cuda_attention_f32 (or the CPU's). Each element is written by
/// one CTA, in a fixed order: the result does not depend on scheduling (no
/// atomics). Takes (and returns) a (batch, heads, queries) f32 scratch
/// from the stream-ordered allocator. Queues the kernels that write the
/// gradients on the step stream. Through cuDNN (as the forward), its
/// deterministic algorithm.
void anvil_rt_cuda_attention_grad_f32(
    const float *q, const float *k, const float *v, const float *keyBias,
    const float *out, const float *lse, const float *dOut, float *dq, float *dk,
    float *dv, int64_t batch, int64_t heads, int64_t kvHeads, int64_t queries,
    int64_t keys, int64_t dim, int64_t valueDim, float scale, int32_t causal,
    int32_t bf16, const anvil_rt_attention_layout *layouts);

/// anvil_rt_attention_bf16's contract (RuntimeABI.h: bf16 tensors, f32
/// lse) on device pointers: cuDNN's fused attention on the tensors where
/// they lie when cuDNN takes the shape and the layouts (16-byte aligned
/// starts and strides); otherwise Anvil's kernels on f32 copies, the
/// results rounded back (exactly: they are bf16 values).
void anvil_rt_cuda_attention_bf16(const void *q, const void *k, const void *v,
                                  const float *keyBias, void *out, float *lse,
                                  int64_t batch, int64_t heads, int64_t kvHeads,
                                  int64_t queries, int64_t keys, int64_t dim,
                                  int64_t valueDim, float scale, int32_t causal,
                                  const anvil_rt_attention_layout *layouts);

/// anvil_rt_attention_grad_bf16's contract on device pointers, as
/// anvil_rt_cuda_attention_bf16 runs it.
void anvil_rt_cuda_attention_grad_bf16(
    const void *q, const void *k, const void *v, const float *keyBias,
    const void *out, const float *lse, const void *dOut, void *dq, void *dk,
    void *dv, int64_t batch, int64_t heads, int64_t kvHeads, int64_t queries,
    int64_t keys, int64_t dim, int64_t valueDim, float scale, int32_t causal,
    const anvil_rt_attention_layout *layouts);

/// anvil_rt_gemm_f8's contract (RuntimeABI.h) on device pointers (the
/// scales too), through cuBLASLt's FP8 GEMM (sm_89 and newer): for i in
/// [0, batch), D_i = scaleA[0] scaleB[0] A_i B_i^T (+ a bf16 bias per
/// column with a bf16 D: its BIAS epilogue) with the scales as its A and B
/// scale pointers, FP32 accumulation, D f32 or bf16. Both operands
/// K innermost (transA = 0, transB = 1; anything else fails, naming the
/// layouts), not both E5M2; every pointer, row and batch stride 16-byte
/// aligned (k a multiple of 16). Queues the product on the step stream; a
/// failure names the call and the shapes.
void anvil_rt_cuda_gemm_f8(int32_t transA, int32_t transB, int64_t m, int64_t n,
                           int64_t k, const void *a, int32_t aFormat,
                           int64_t lda, int64_t strideA, const void *b,
                           int32_t bFormat, int64_t ldb, int64_t strideB,
                           const float *scaleA, const float *scaleB,
                           const void *bias, void *d, int32_t dBf16,
                           int64_t ldd, int64_t strideD, int64_t batch);

/// anvil_rt_gemm_f8_gelu's contract (RuntimeABI.h) on device pointers (the
/// scales and the amax too), through cuBLASLt's FP8 GEMM with the
/// GELU_AUX_BIAS epilogue: the scales as its A and B scale pointers, the
/// bf16 bias, `pre` as the bf16 auxiliary output, `outScale` as D's scale
/// pointer, an FP8 D, and `amax` as its AMAX_D pointer (the largest
/// magnitude as cuBLASLt computes it). B with K innermost (transB = 1); k
/// and n multiples of 16, m and n not 0, every pointer 16-byte aligned, and
/// E5M2 codes only from an E5M2 operand. Queues the product on the step
/// stream; a failure names the call and the shapes.
void anvil_rt_cuda_gemm_f8_gelu(int32_t transB, int64_t m, int64_t n, int64_t k,
                                const void *a, int32_t aFormat, const void *b,
                                int32_t bFormat, const float *scaleA,
                                const float *scaleB, const void *bias,
                                const float *outScale, void *out,
                                int32_t outFormat, void *pre, float *amax);
} // extern "C"

#endif // ANVIL_RUNTIME_CUDA_H
