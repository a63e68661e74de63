//===- RuntimeABI.h - the C functions generated code calls ---------*- C++
//-*-===//
//
// DESIGN.md, contract 4: generated code reaches the runtime only through
// these `anvil_rt_*` C functions. They are plain C (no exceptions cross
// them), take raw pointers and 64-bit integers, and live in the CPU device
// library (runtime/src/cpu, libanvil_cpu.a) that every CPU executable
// links.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_RUNTIMEABI_H
#define ANVIL_RUNTIME_RUNTIMEABI_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

extern "C" {

/// Batched single-precision GEMM through the system BLAS (OpenBLAS):
/// for i in [0, batch): C_i += op(A_i) op(B_i), row-major, where op
/// transposes when trans* is non-zero, op(A_i) is (m, k), op(B_i) is
/// (k, n) and C_i is (m, n). X_i starts at x + i * strideX (elements); a
/// stride of 0 shares one matrix across the batch. ld* are the row strides
/// of the matrices as stored. With `accumulate` 0, C_i = op(A_i) op(B_i)
/// instead: C's old contents are not read (BLAS's beta = 0), so the
/// generated code drops the zero fill that would precede the product.
void anvil_rt_sgemm(int32_t transA, int32_t transB, int64_t m, int64_t n,
                    int64_t k, const float *a, int64_t lda, int64_t strideA,
                    const float *b, int64_t ldb, int64_t strideB, float *c,
                    int64_t ldc, int64_t strideC, int64_t batch,
                    int32_t accumulate);

/// An FP8 GEMM (anvil.matmul_f8): for i in [0, batch),
/// D_i = scaleA[0] scaleB[0] op(A_i) op(B_i), overwritten, with op and the
/// operands' layouts as in anvil_rt_sgemm. Each 8-bit operand is in format
/// 0 (E4M3, `f8E4M3FN`) or 1 (E5M2), widened to f32 exactly; BLAS sums
/// the products in f32; each sum is multiplied by the scales' f32 product,
/// plus `bias[j]` for column j when `bias` is not null (n bf16 values, raw
/// 16-bit patterns; only with a bf16 D), and stored as f32 (`dBf16` 0) or
/// rounded to bf16 (1: raw 16-bit patterns, to nearest even). The scales are
/// the dequantization factors (1 / s of each operand's quantization).
void anvil_rt_gemm_f8(int32_t transA, int32_t transB, int64_t m, int64_t n,
                      int64_t k, const void *a, int32_t aFormat, int64_t lda,
                      int64_t strideA, const void *b, int32_t bFormat,
                      int64_t ldb, int64_t strideB, const float *scaleA,
                      const float *scaleB, const void *bias, void *d,
                      int32_t dBf16, int64_t ldd, int64_t strideD,
                      int64_t batch);

/// An FP8 linear layer with its bias and tanh GELU, quantized at once
/// (anvil.linear_gelu_f8): with s the f32 sums of A (m x k) times B
/// (k x n, or n x k with `transB`), 8-bit operands in aFormat and bFormat
/// (as in anvil_rt_gemm_f8), and p = s scaleA[0] scaleB[0] + bias[j] in
/// f32 for column j (n bf16 values), writes pre = bf16(p) (m x n, raw
/// 16-bit patterns), out = the codes of gelu_tanh(p) outScale[0] in
/// outFormat (0 E4M3, 1 E5M2: to nearest even, saturating to the largest
/// finite magnitude as anvil.cast does, NaN to NaN) and amax[0] = the
/// largest |gelu_tanh(p)| (NaN if one is). Every buffer contiguous and
/// row-major; out, pre and amax are overwritten. (cuBLASLt's FP8 GEMM with
/// GELU_AUX_BIAS, an FP8 D scaled by outScale, and AMAX_D.)
void anvil_rt_gemm_f8_gelu(int32_t transB, int64_t m, int64_t n, int64_t k,
                           const void *a, int32_t aFormat, const void *b,
                           int32_t bFormat, const float *scaleA,
                           const float *scaleB, const void *bias,
                           const float *outScale, void *out, int32_t outFormat,
                           void *pre, float *amax);

/// anvil_rt_sgemm's contract for bf16 A and B (raw 16-bit patterns; f32
/// C): the operands are widened to f32 exactly, so the products are exact
/// and accumulate in f32 (anvil.matmul on bf16 operands, before its result
/// is rounded to bf16).
void anvil_rt_gemm_bf16(int32_t transA, int32_t transB, int64_t m, int64_t n,
                        int64_t k, const uint16_t *a, int64_t lda,
                        int64_t strideA, const uint16_t *b, int64_t ldb,
                        int64_t strideB, float *c, int64_t ldc, int64_t strideC,
                        int64_t batch, int32_t accumulate);

/// Where one of attention's 4-D f32 tensors lies: element (b, h, t, d)
/// (batch, head, sequence position, head dimension) at data[offset +
/// b batch + h head + t row + d], in elements; each head's row of `dim`
/// values is contiguous. A contiguous (B, H, T, D) tensor is {0, H T D,
/// T D, D}; a contiguous (B, T, H, D) one {0, T H D, D, H D}; a query slice
/// of a (B, T, 3 H D) projection {0, 3 T H D, D, 3 H D}. Generated code
/// passes an array of them (four int64 values each, one per tensor, in
/// argument order) from a constant global, in host memory. Offsets and
/// strides are non-negative; the elements of an output overlap neither
/// each other's nor another tensor's (outputs may share a buffer, each in
/// its own columns: a packed gradient).
typedef struct {
  int64_t offset, batch, head, row;
} anvil_rt_attention_layout;

/// anvil_rt_gemm_bf16's product rounded to bf16 (to nearest even) into a
/// bf16 C (raw 16-bit patterns), overwritten: a bf16 anvil.matmul's
/// result, which the GEMM writes rounded instead of leaving f32 for its
/// readers to round.
void anvil_rt_gemm_bf16_rounded(int32_t transA, int32_t transB, int64_t m,
                                int64_t n, int64_t k, const uint16_t *a,
                                int64_t lda, int64_t strideA, const uint16_t *b,
                                int64_t ldb, int64_t strideB, uint16_t *c,
                                int64_t ldc, int64_t strideC, int64_t batch);

/// An embedding table's gradient (`anvil.embedding_grad` of f32 with i32
/// indices): table (rows x width) = 0, then for n in [0, count), in order,
/// table[clamp(ids[n], 0, rows - 1)] += grad[n] (grad: count x width).
/// Every buffer is contiguous and row-major; table is overwritten. Each
/// row is the sum of its gradient rows in increasing n from 0.0: the bits
/// of the loop anvil-convert-to-linalg makes of the op.
void anvil_rt_embedding_grad_f32(int64_t count, int64_t rows, int64_t width,
                                 const float *grad, const int32_t *ids,
                                 float *table);

/// A bf16 linear layer with its bias (`anvil.linear`): out = bf16(a b +
/// bias), m x n (a: m x k, b: k x n, or n x k with `transB`, and bias (n)
/// bf16; products exact, accumulated in f32, the bias added to the f32 sum,
/// rounded once). Every buffer is contiguous and row-major; out is
/// overwritten. (cuBLASLt's BIAS epilogue.)
void anvil_rt_gemm_bias(int32_t transB, int64_t m, int64_t n, int64_t k,
                        const uint16_t *a, const uint16_t *b,
                        const uint16_t *bias, uint16_t *out);

/// A bf16 linear layer with its bias and tanh GELU (`anvil.linear_gelu`):
/// with p = a b + bias (a: m x k, b: k x n, or n x k with `transB`, and
/// bias (n) bf16; products exact, accumulated in f32, the bias added to the
/// f32 sum), writes pre = bf16(p) (unless `pre` is null) and out =
/// bf16(gelu_tanh(p)), m x n. Every buffer is contiguous and row-major; out
/// and pre are overwritten; n is a multiple of 8.
/// (cuBLASLt's GELU_AUX_BIAS epilogue.)
void anvil_rt_gemm_bias_gelu(int32_t transB, int64_t m, int64_t n, int64_t k,
                             const uint16_t *a, const uint16_t *b,
                             const uint16_t *bias, uint16_t *out,
                             uint16_t *pre);

/// The gradient through that bias and GELU of a bf16 GEMM's product
/// (`anvil.matmul_gelu_bias_grad`): with g = a b (shapes as above, kept in
/// f32) and d = g gelu_tanh'(pre) (pre: m x n bf16), writes preGrad =
/// bf16(d) (m x n) and biasGrad (n bf16) = the sum of d over the m rows
/// (in f32, rounded once).
/// (cuBLASLt's DGELU_BGRAD epilogue.)
void anvil_rt_gemm_dgelu_bgrad(int32_t transB, int64_t m, int64_t n, int64_t k,
                               const uint16_t *a, const uint16_t *b,
                               const uint16_t *pre, uint16_t *preGrad,
                               uint16_t *biasGrad);

/// A linear layer's weight and bias gradients (`anvil.matmul_bias_grad`):
/// from its input's rows x (m x k) and its output gradient's grad (m x n),
/// both bf16, writes weightGrad = bf16(x^T grad) (k x n; exact products,
/// f32 accumulation) and biasGrad = bf16(the sum of grad's m rows, in
/// f32) (n). Every buffer contiguous and row-major. (cuBLASLt's BGRADA
/// epilogue.)
void anvil_rt_gemm_weight_bias_grad(int64_t m, int64_t k, int64_t n,
                                    const uint16_t *x, const uint16_t *grad,
                                    uint16_t *weightGrad, uint16_t *biasGrad);

/// Fused scaled-dot-product attention (`anvil.flash_attention`), f32
/// buffers: q (batch, heads, queries, dim), k (batch, kvHeads, keys, dim),
/// v (batch, kvHeads, keys, valueDim) and out (batch, heads, queries,
/// valueDim) where `layouts[0..3]` place them; lse (batch, heads, queries)
/// contiguous; keyBias (batch, keys) contiguous, or null (no bias). Query
/// head h reads key/value head h / (heads / kvHeads). For each row i of
/// batch element b:
///   s_j = (q_i . k_j) * scale + keyBias[b][j], -inf where `causal` hides
///   key j (j > i + keys - queries; keys >= queries), p = softmax(s),
///   out_i = sum_j p_j v_j, lse_i = log(sum_j exp(s_j)) (the row's
///   log-sum-exp, which the gradient reads instead of the probabilities).
/// With `bf16`, each product (q k^T, p v) reads operands rounded to bf16,
/// accumulates in f32 and is rounded to bf16 (anvil.matmul's contract for
/// bf16, as `bf16_gemms` on anvil.attention says). out's elements and
/// lse are overwritten. The CPU computes each row in order; a GPU may
/// reassociate (online softmax) within the rounding of its format. A
/// key bias is an additive mask that depends only on the batch element
/// and the key (BERT's padding mask): no gradient flows into it.
void anvil_rt_attention_f32(const float *q, const float *k, const float *v,
                            const float *keyBias, float *out, float *lse,
                            int64_t batch, int64_t heads, int64_t kvHeads,
                            int64_t queries, int64_t keys, int64_t dim,
                            int64_t valueDim, float scale, int32_t causal,
                            int32_t bf16,
                            const anvil_rt_attention_layout *layouts);

/// The gradient of anvil_rt_attention_f32 (`anvil.flash_attention_grad`):
/// from its inputs (keyBias as there), its out and lse and dOut (out's
/// shape), overwrites dq, dk and dv (q's, k's and v's shapes; only their
/// elements: what lies between them in a strided layout is left alone),
/// `layouts[0..7]`
/// placing q, k, v, out, dOut, dq, dk, dv. With p_ij = exp(s_ij - lse_i):
///   dv = p^T dOut, dp = dOut v^T, ds_ij = p_ij (dp_ij - sum_j dp_ij p_ij)
///   (the sum equals dOut_i . out_i), dq = ds k * scale,
///   dk = ds^T q * scale,
/// dk and dv summed over the query heads that share a key/value head.
/// `bf16` rounds the five products as anvil_rt_attention_f32 does.
void anvil_rt_attention_grad_f32(
    const float *q, const float *k, const float *v, const float *keyBias,
    const float *out, const float *lse, const float *dOut, float *dq, float *dk,
    float *dv, int64_t batch, int64_t heads, int64_t kvHeads, int64_t queries,
    int64_t keys, int64_t dim, int64_t valueDim, float scale, int32_t causal,
    int32_t bf16, const anvil_rt_attention_layout *layouts);

/// anvil_rt_attention_f32 with `bf16` on bf16 tensors (raw 16-bit
/// patterns; lse and keyBias stay f32): q, k, v, out where `layouts[0..3]`
/// place them, out overwritten with the rounded product P V (what the f32
/// function writes, in half the bytes). An `anvil.flash_attention` on bf16
/// tensors.
void anvil_rt_attention_bf16(const uint16_t *q, const uint16_t *k,
                             const uint16_t *v, const float *keyBias,
                             uint16_t *out, float *lse, int64_t batch,
                             int64_t heads, int64_t kvHeads, int64_t queries,
                             int64_t keys, int64_t dim, int64_t valueDim,
                             float scale, int32_t causal,
                             const anvil_rt_attention_layout *layouts);

/// anvil_rt_attention_grad_f32 with `bf16` on bf16 tensors (lse f32):
/// dq, dk and dv overwritten with its results rounded to bf16 (they are
/// bf16 values already, but for dk and dv of grouped heads: the sums over
/// a group's query heads of rounded products).
void anvil_rt_attention_grad_bf16(const uint16_t *q, const uint16_t *k,
                                  const uint16_t *v, const float *keyBias,
                                  const uint16_t *out, const float *lse,
                                  const uint16_t *dOut, uint16_t *dq,
                                  uint16_t *dk, uint16_t *dv, int64_t batch,
                                  int64_t heads, int64_t kvHeads,
                                  int64_t queries, int64_t keys, int64_t dim,
                                  int64_t valueDim, float scale, int32_t causal,
                                  const anvil_rt_attention_layout *layouts);

/// What anvil_rt_conv computes (its `kind`).
enum {
  ANVIL_RT_CONV_FORWARD = 0,     ///< a = x, b = w, c = y
  ANVIL_RT_CONV_DATA_GRAD = 1,   ///< a = dy, b = w, c = dx
  ANVIL_RT_CONV_FILTER_GRAD = 2, ///< a = x, b = dy, c = dw
};

/// One convolution of `anvil.conv`'s definition with symmetric padding,
/// described by `problem` (host memory, 5 + 6 s int64 values):
///   s (spatial dimensions, 1-3), N, C (x's channels), K (y's channels),
///   groups, then per spatial dimension: x's size, y's size, the kernel's,
///   the stride, the padding (both sides), the dilation;
///   y[n, k, o] = sum over the C / groups channels c of k's group and the
///   taps t of x[n, c, o stride - pad + t dilation] w[k, c mod (C /
///   groups), t] (taps outside x read zero), with x (N, C, x...),
///   w (K, C / groups, kernel...), y (N, K, y...), every buffer contiguous.
/// The kinds (ANVIL_RT_CONV_*) write, overwriting `c`: y itself; x's
/// gradient dx from y's gradient dy (`anvil.conv_transpose` of dy by w);
/// w's gradient dw (`anvil.conv_filter_grad` of x and dy). Elements are
/// f32, or with `bf16` bf16 (raw 16-bit patterns): exact products, f32
/// sums, the result rounded once (to nearest even). Anvil's CPU reference
/// of the CUDA runtime's cuDNN convolutions (anvil_rt_cuda_conv), which
/// the emulated CUDA grid calls.
void anvil_rt_conv(int32_t kind, int32_t bf16, const int64_t *problem,
                   const void *a, const void *b, void *c);

/// Initializes the training state of a module: every buffer of the
/// manifest `manifestJson` that has an initializer is filled, for run seed
/// `seed`, at args[index] (the step's argument array), bit-identically to
/// anvil-interp. Generated code calls it from anvil_module_init. Returns 0,
/// or non-zero with the reason in anvil_rt_last_error().
int32_t anvil_rt_init_state(const char *manifestJson, uint64_t seed,
                            void **args);

/// The message of the last failed anvil_rt_* call on this thread.
const char *anvil_rt_last_error(void);

/// Sets the number of threads the runtime's CPU kernels (and BLAS) use;
/// 0 means one per core. Call before the first kernel runs.
void anvil_rt_set_num_threads(int32_t threads);

/// Runs fn(ctx, lo, hi) over [0, n) split into one contiguous chunk per
/// thread (the same split on every call: results never depend on timing).
/// Generated code calls it for large dispatch regions whose outermost loop
/// is parallel.
void anvil_rt_parallel_for(int64_t n, void (*fn)(void *, int64_t, int64_t),
                           void *ctx);

/// Memory of the trainer's buffers (state, inputs, results, the workspace)
/// and of generated code's own allocations: `alignment`-aligned host
/// memory in CPU executables. The CPU device library defines these weakly;
/// a device whose kernels cannot read host memory defines them too (the
/// CUDA device: managed memory, which both the host and its kernels
/// address), and its definitions win at link time.
void *anvil_rt_buffer_alloc(uint64_t alignment, uint64_t bytes);
void anvil_rt_buffer_free(void *ptr);
/// The static memory plan's arena (the trainer's workspace), 64-byte
/// aligned and zero-filled; null when it cannot be had. Only generated
/// code's kernels and the library calls it makes touch it, never the host:
/// host memory on the CPU (weak definitions, as above), device memory on a
/// GPU (the CUDA device: one cuMemAlloc).
void *anvil_rt_workspace_alloc(uint64_t bytes);
void anvil_rt_workspace_free(void *ptr);
/// Copies `bytes` from `src` to `dst`, both memory the device's kernels
/// address (the workspace, the buffers above), for runtime functions that
/// move data on the host's side of a call (a collective over a world of
/// one, a mesh axis's slice): memmove on the CPU (weak), cuMemcpy on a GPU.
void anvil_rt_device_copy(void *dst, const void *src, uint64_t bytes);
/// Opens the executable's device before the trainer allocates anything:
/// null when it is ready, else why not (a message that lives as long as
/// the process). The CPU is always ready.
const char *anvil_rt_device_open(void);
/// One line on the device for the trainer's log ("" for the CPU).
const char *anvil_rt_device_description(void);
/// Bytes of the device's memory in use, by every process and the driver
/// (its total less its free memory: cuMemGetInfo), or -1 where the
/// executable has no device (the CPU, weak) or the driver cannot say.
int64_t anvil_rt_device_memory_used(void);
/// The host has written `bytes` at `ptr` (in a buffer of
/// anvil_rt_buffer_alloc: a batch, a seed) for the next step: a device
/// moves them to its memory on the step stream, ahead of the step's
/// kernels (CUDA: cuMemPrefetchAsync of the managed memory), instead of
/// the kernels faulting them over. A no-op on the CPU (weak) and where the
/// device cannot.
void anvil_rt_device_stage(const void *ptr, uint64_t bytes);
/// The device's time for the last step, in seconds: between events on the
/// step stream recorded just before anvil_rt_run_step queues the step's
/// work (launches its graph, or calls it) and at anvil_rt_begin_step(-1)
/// (a replayed graph's time on the device; run kernel by kernel, the
/// host's gaps between launches count too); -1 on the CPU (weak), for a
/// step not run by anvil_rt_run_step, or where the driver cannot say.
double anvil_rt_device_step_seconds(void);
/// The trainer calls this before each step (the step number), after it
/// (-1): a device reports errors with the step they happened in, and one
/// that queues a step's work (CUDA) waits for it at -1.
void anvil_rt_begin_step(int64_t step);
/// Waits for the work a device has queued: runtime functions call it before
/// the host reads or writes buffers in the middle of a step (a collective
/// over the host's transport). A no-op on the CPU (weak).
void anvil_rt_device_synchronize(void);
/// An entry point of generated code (anvil_module_train_step's shape).
typedef void (*anvil_rt_step_fn)(void **args, void **results, void *workspace);
/// Runs one training step, `step(args, results, workspace)`, as the device
/// sees fit, between anvil_rt_begin_step(n) and anvil_rt_begin_step(-1).
/// The CPU (weak) calls it. `capturable`: the compiler found that the
/// step's host code only queues device work (no host reads or writes of
/// buffers, no allocations, no collectives; the manifest's "step_graph"),
/// so that the work depends on nothing but the `numArgs` argument and
/// `numResults` result pointers and the workspace. The CUDA device then
/// records the step's work as a CUDA graph, per step function and set of
/// those pointers, the second time it sees them (the first call warms up
/// what is made once, which a graph cannot hold), and replays the graph
/// instead of calling `step` from then on, until one of the buffers is
/// freed (anvil_rt_buffer_free, anvil_rt_workspace_free).
void anvil_rt_run_step(anvil_rt_step_fn step, void **args, int64_t numArgs,
                       void **results, int64_t numResults, void *workspace,
                       int32_t capturable);
/// Allocation of generated code (whatever the static memory plan did not
/// place in the workspace): malloc/free that count the bytes outstanding.
/// These are the names MLIR's memref lowering calls with
/// use-generic-functions.
void *_mlir_memref_to_llvm_alloc(uint64_t bytes);
void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t bytes);
void _mlir_memref_to_llvm_free(void *ptr);

/// Bytes generated code has allocated and not freed, and the most it ever
/// had at once since the last anvil_rt_reset_peak_bytes().
int64_t anvil_rt_allocated_bytes(void);
int64_t anvil_rt_peak_bytes(void);
void anvil_rt_reset_peak_bytes(void);

// Collectives over the ranks of one mesh axis. `axis` is the axis's
// position in the program's mesh (the manifest's "mesh" order), -1 for a
// program without one; the communicators come from
// anvil::rt::setMeshCommunicators (none: every axis is a world of one). A
// failed collective cannot be undone mid-step: the message goes to stderr
// and the process aborts.

/// `anvil.all_reduce` on `n` f32 at `address`, in place: op 0 sum, 1 mean,
/// 2 max.
void anvil_rt_all_reduce_f32(int64_t address, int64_t n, int32_t op,
                             int32_t axis);
/// `anvil.all_gather`: out (ranks * n f32) = every rank's `n` at `in`, in
/// the order of the ranks' positions on the axis.
void anvil_rt_all_gather_f32(int64_t in, int64_t out, int64_t n, int32_t axis);
/// `anvil.reduce_scatter`: out (n f32) = op over the ranks of this rank's
/// block of `in` (ranks * n).
void anvil_rt_reduce_scatter_f32(int64_t in, int64_t out, int64_t n, int32_t op,
                                 int32_t axis);
/// `anvil.axis_slice`: out (n f32) = block i of `in` (ranks * n), i this
/// rank's position on the axis. No communication.
void anvil_rt_axis_slice_f32(int64_t in, int64_t out, int64_t n, int32_t axis);

/// `anvil.axis_index`: this rank's position on the axis (0 in a world of
/// one).
int64_t anvil_rt_axis_index(int32_t axis);

} // extern "C"

namespace anvil::rt {
class Communicator;
/// The communicators generated code's collectives use, one per mesh axis
/// in the manifest's order (not owned; empty: a world of one).
void setMeshCommunicators(std::vector<Communicator *> axes);
/// This rank's position on mesh axis `axis` (0 without its communicator).
int64_t meshAxisPosition(size_t axis);
/// The communicator generated code's collectives use on one mesh axis,
/// from the axis's host communicator (MPI), a collective call of the
/// axis's ranks. Weak: the default keeps `axis`; a device library replaces
/// it (CUDA executables: NCCL over it, or `axis` with a notice when NCCL
/// cannot start).
std::unique_ptr<Communicator>
deviceAxisCommunicator(std::unique_ptr<Communicator> axis);
} // namespace anvil::rt

#endif // ANVIL_RUNTIME_RUNTIMEABI_H
