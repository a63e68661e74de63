//===- Attention.cu - fused flash attention on CUDA, forward and backward -===//
//
// anvil_rt_attention_f32's and anvil_rt_attention_grad_f32's contracts
// (RuntimeABI.h) on device pointers, FlashAttention-2 style: no (queries x
// keys) matrix is ever stored. Every kernel runs 4 warps; each warp owns 16
// rows of the CTA's 64 (queries in the forward and dQ kernels, keys in the
// dK/dV kernel) and keeps their accumulators in registers, laid out as the
// C fragment of PTX's mma.m16n8k16 (lane l holds rows l/4 and l/4 + 8,
// columns 2(l%4) and 2(l%4) + 1 of each 8-column tile). The tiles of the
// other side stream through shared memory. With bf16 products the tiles are
// stored in bf16 and multiplied on the tensor cores (mma.sync, f32
// accumulation); with f32 products the same fragments are computed by FMAs
// (no TF32), so the softmax and masking code is shared.
//
// - forward: CTA (batch * head, 64 queries); for each block of keys (only
//   the visible ones when causal) S = Q K^T (scaled, plus the key bias when
//   there is one: read from global memory, a row per batch element, which
//   every CTA of the batch element shares in L2), online softmax (running
//   max m and sum l per row), O = O * alpha + P V; out = O / l,
//   lse = m + log l. The gradient's kernels add the same bias to S and S^T.
// - backward: delta_i = dOut_i . out_i (one warp per row); then dK and dV:
//   CTA (batch * kvHead, 64 keys) over every query head of the group and
//   every query block that sees a key, P^T = exp(S^T - lse), dP^T = V dO^T,
//   dS^T = P^T (dP^T - delta) scale, dV += P^T dO, dK += dS^T Q; and dQ:
//   CTA (batch * head, 64 queries) over the visible key blocks,
//   dQ += dS K.
//   Each output element is written once by one CTA: no atomics, and the
//   result does not depend on scheduling (S and dP are recomputed in the dQ
//   kernel rather than accumulating dQ atomically from the dK/dV kernel).
//
// With bf16 products, as the CPU's reference: the operands are rounded to
// bf16, and so are the products' results S, dP, out, dq, dk, dv (scale
// applied after S's rounding, folded into dS before its rounding). The
// probabilities rounded as P V's operand are the online softmax's
// unnormalized ones (the CPU rounds normalized ones), and delta is dOut .
// out (the CPU sums dP P): both differ from the CPU within bf16 rounding.
//
// Every 4-D tensor is read and written where its anvil_rt_attention_layout
// places it (Strided): a tile's rows are gathered row by row, each row's
// values contiguous (4 floats per load where the rows are 16-byte
// aligned), so (B, T, H, D) slices of a projection need no transpose.
//
// Any dim and valueDim up to 128 run: the tiles are zero-padded to the
// next of 16, 32, 64, 128 (padding adds nothing to the products). Like the
// cuBLAS calls of Gemm.cpp, each call queues its kernels on the step stream
// (cuda::stepStream) and waits for them only in "sync" mode (LaunchMode);
// errors abort with the kernel, the call and the shape. Nothing here
// allocates or waits otherwise (the scratch comes from the stream-ordered
// allocator), so a CUDA graph of the step can hold the calls.
//
// With ANVIL_CUDA_EMULATION defined, this file is plain C++ against
// runtime/test/cuda-emulation/CudaEmulation.h, which runs these kernels and
// this host side on the CPU (anvil-cuda-emulation-tests checks them against
// the CPU's reference there, without a GPU). The hooks, all marked
// ANVIL_CUDA_EMULATION: the emulator's header instead of the CUDA headers,
// ANVIL_DYNAMIC_SHARED (the `extern __shared__` array) in each kernel,
// mma16816's inline PTX, and launchOnStepStream's `<<<...>>>`. The CUDA
// build compiles the same kernels as without them.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Cuda.h"

#include "CudnnAttention.h"

#ifdef ANVIL_CUDA_EMULATION
#include "CudaEmulation.h"
#else
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#endif

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "KernelCall.h"

namespace {

using namespace anvil::rt::cuda::kernel_call;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
/// Rows a CTA owns: 16 per warp, one m16 MMA tile.
constexpr int kRows = 16 * kWarps;

/// A 4-D tensor where its layout (RuntimeABI.h) places it, the offset
/// folded into `data`. Every element lies within 2^31 - 1 of `data`
/// (checked on the host): the strides and the index arithmetic are 32-bit,
/// which keeps the kernels' 64-bit values (registers) to the pointers.
template <typename T> struct Strided {
  T *data = nullptr;
  int batch = 0, head = 0, row = 0;
  /// Row t of head h of batch b.
  __device__ __forceinline__ T *at(int b, int h, int t) const {
    return data + (b * batch + h * head + t * row);
  }
};

/// Everything a kernel reads; what a kernel does not use is null.
struct Params {
  Strided<const float> q, k, v, out, dOut;
  Strided<float> outW, dq, dk, dv;
  const float *lse, *delta; // (batch, heads, queries), contiguous
  const float *keyBias;     // (batch, keys), contiguous, or null
  float *lseW;
  int heads, kvHeads, queries, keys, dim, valueDim;
  float scale;
  int causal;
};

/// The kernels, for minBlocksPerSM.
enum class Kernel { Forward, KeyGrad, QueryGrad };

/// `__launch_bounds__`' minimum CTAs per SM of a kernel instantiation. 0
/// leaves the register count to ptxas, which aims at an occupancy and, for
/// two small instantiations, spills a few bytes to reach it (sm_90: dQ at
/// dim 16 with bf16 products, 96 registers; sm_80: the forward at dim 32
/// with bf16, 96); 4 CTAs (at most 128 registers) keeps everything in
/// registers there. test/Target/CUDA/kernels.test checks that no kernel a
/// step uses spills, from the ptxas report the build writes.
template <Kernel K, int DP, bool BF16> constexpr int minBlocksPerSM() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return K == Kernel::QueryGrad && DP == 16 && BF16 ? 4 : 0;
#elif defined(__CUDA_ARCH__)
  return K == Kernel::Forward && DP == 32 && BF16 ? 4 : 0;
#else
  return 0;
#endif
}

//===- Elements and fragments ---------------------------------------------===//

/// The element type of the shared-memory tiles: bf16 when the products read
/// bf16 operands, f32 otherwise.
template <bool BF16>
using Elem = std::conditional_t<BF16, __nv_bfloat16, float>;

/// Padding of a shared-memory row (elements): rows then start 16 bytes
/// apart modulo 128, so the 8 rows a fragment load touches hit distinct
/// banks; it keeps bf16 pairs 4-byte aligned.
template <bool BF16> constexpr int kPad = BF16 ? 8 : 4;

template <bool BF16> __device__ __forceinline__ Elem<BF16> toElem(float x) {
  if constexpr (BF16)
    return __float2bfloat16_rn(x);
  else
    return x;
}

/// `x` rounded to bf16 (to nearest even) and back.
__device__ __forceinline__ float roundBF16(float x) {
  return __bfloat162float(__float2bfloat16_rn(x));
}

/// Two consecutive bf16 of shared memory (the first in the low half).
__device__ __forceinline__ uint32_t load2(const __nv_bfloat16 *p) {
  return *reinterpret_cast<const uint32_t *>(p);
}

__device__ __forceinline__ uint32_t pack2(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  return static_cast<uint32_t>(__bfloat16_as_ushort(lo)) |
         (static_cast<uint32_t>(__bfloat16_as_ushort(hi)) << 16);
}

/// c (16x8, f32) += a (16x16, bf16) b (16x8, bf16) on the tensor cores.
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2]) {
#ifdef ANVIL_CUDA_EMULATION
  anvil::cuda_emulation::mmaM16N8K16Bf16(c, a, b);
#else
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                 "r"(b[1]));
#endif
}

/// The warp's C (16 x 8 NT) += A (16 x K) B (K x 8 NT), all operands in
/// shared memory. A is row-major (row r at a + r lda). B is stored as its
/// transpose, row n at b + n ldb (`transposedB`: B[k][n] = b[n ldb + k],
/// e.g. K for Q K^T), or as itself (B[k][n] = b[k ldb + n], e.g. V for P V).
/// c[j][e] is element (g + 8 (e / 2), 8 j + 2 t + e % 2) of C, g = lane / 4,
/// t = lane % 4: the C fragment of mma.m16n8k16 for each 8-column tile j.
/// bf16: A and B fragments per the PTX ISA's m16n8k16 .bf16 layouts (A: a0
/// a1 at row g, columns 2t, 2t+1; a2 a3 at row g+8; a4..a7 the same 8
/// columns on; B: b0 b1 at rows 2t, 2t+1 of column g, b2 b3 8 rows on).
/// f32: the same C elements by FMAs, in k order.
template <int K, bool BF16, bool transposedB, int NT>
__device__ __forceinline__ void warpGemm(float (&c)[NT][4], const Elem<BF16> *a,
                                         int lda, const Elem<BF16> *b,
                                         int ldb) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  if constexpr (BF16) {
    static_assert(K % 16 == 0, "bf16 MMAs step k by 16");
#pragma unroll 4
    for (int k0 = 0; k0 < K; k0 += 16) {
      uint32_t af[4];
      af[0] = load2(a + g * lda + k0 + 2 * t);
      af[1] = load2(a + (g + 8) * lda + k0 + 2 * t);
      af[2] = load2(a + g * lda + k0 + 8 + 2 * t);
      af[3] = load2(a + (g + 8) * lda + k0 + 8 + 2 * t);
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        uint32_t bf[2];
        if constexpr (transposedB) {
          const __nv_bfloat16 *bp = b + (8 * j + g) * ldb + k0 + 2 * t;
          bf[0] = load2(bp);
          bf[1] = load2(bp + 8);
        } else {
          const __nv_bfloat16 *bp = b + (k0 + 2 * t) * ldb + 8 * j + g;
          bf[0] = pack2(bp[0], bp[ldb]);
          bf[1] = pack2(bp[8 * ldb], bp[9 * ldb]);
        }
        mma16816(c[j], af, bf);
      }
    }
  } else {
#pragma unroll 4
    for (int k = 0; k < K; ++k) {
      float a0 = a[g * lda + k], a1 = a[(g + 8) * lda + k];
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        int n = 8 * j + 2 * t;
        float b0, b1;
        if constexpr (transposedB) {
          b0 = b[n * ldb + k];
          b1 = b[(n + 1) * ldb + k];
        } else {
          b0 = b[k * ldb + n];
          b1 = b[k * ldb + n + 1];
        }
        c[j][0] = fmaf(a0, b0, c[j][0]);
        c[j][1] = fmaf(a0, b1, c[j][1]);
        c[j][2] = fmaf(a1, b0, c[j][2]);
        c[j][3] = fmaf(a1, b1, c[j][3]);
      }
    }
  }
}

/// Shared-memory tile dst (rows x DP, row r at dst + r ld) = rows
/// [0, validRows) of the matrix whose row r has `cols` values at src + r
/// srcRow, zero in the rows and columns beyond; rounded to bf16 with bf16
/// products. All threads of the CTA take part.
template <int DP, bool BF16>
__device__ void loadTile(Elem<BF16> *dst, int ld, int rows, const float *src,
                         int srcRow, int validRows, int cols) {
  if (cols == DP && reinterpret_cast<uintptr_t>(src) % 16 == 0 &&
      srcRow % 4 == 0) {
    // Unpadded rows, every one 16-byte aligned: 4 floats per load.
    constexpr int quads = DP / 4;
    for (int i = threadIdx.x; i < rows * quads; i += kThreads) {
      int r = i / quads, c = i % quads * 4;
      float4 x = r < validRows
                     ? *reinterpret_cast<const float4 *>(src + r * srcRow + c)
                     : float4{0.0f, 0.0f, 0.0f, 0.0f};
      Elem<BF16> *d = dst + r * ld + c;
      d[0] = toElem<BF16>(x.x);
      d[1] = toElem<BF16>(x.y);
      d[2] = toElem<BF16>(x.z);
      d[3] = toElem<BF16>(x.w);
    }
    return;
  }
  for (int i = threadIdx.x; i < rows * DP; i += kThreads) {
    int r = i / DP, c = i % DP;
    float x = r < validRows && c < cols ? src[r * srcRow + c] : 0.0f;
    dst[r * ld + c] = toElem<BF16>(x);
  }
}

/// The maximum (or sum) of `x` over the 4 lanes of a quad, which hold one
/// row of a C fragment.
__device__ __forceinline__ float quadMax(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quadSum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

/// The stored score of a raw product q . k: rounded to bf16 first with bf16
/// products (the product's result, as the CPU rounds it), then scaled.
template <bool BF16>
__device__ __forceinline__ float score(float product, float scale) {
  return (BF16 ? roundBF16(product) : product) * scale;
}

/// The score of `key` (< keys) of batch element b: score() plus the key's
/// bias when the call has one.
template <bool BF16>
__device__ __forceinline__ float biasedScore(const Params &p, float product,
                                             int b, int key) {
  float x = score<BF16>(product, p.scale);
  return p.keyBias ? x + p.keyBias[b * p.keys + key] : x;
}

//===- Forward ------------------------------------------------------------===//

/// Tiles of the forward kernel: kRows queries, `cols` keys per step.
template <int DP, bool BF16> struct ForwardTiles {
  static constexpr int cols = (DP == 128 && !BF16) ? 32 : 64;
  static constexpr int ld = DP + kPad<BF16>;    // Q, K, V rows
  static constexpr int ldP = cols + kPad<BF16>; // P rows
  static constexpr size_t bytes =
      (kRows * ld + 2 * cols * ld + kRows * ldP) * sizeof(Elem<BF16>);
};

/// grid (batch * heads, query blocks, last block first); out and lse of
/// 64 queries of one head.
template <int DP, bool BF16>
__global__ void __launch_bounds__(kThreads,
                                  (minBlocksPerSM<Kernel::Forward, DP, BF16>()))
    attentionForward(Params p) {
  using Tiles = ForwardTiles<DP, BF16>;
  using E = Elem<BF16>;
  constexpr int BK = Tiles::cols, ld = Tiles::ld, ldP = Tiles::ldP;
  ANVIL_DYNAMIC_SHARED(smem);
  E *qs = reinterpret_cast<E *>(smem); // (kRows, ld)
  E *ks = qs + kRows * ld;             // (BK, ld)
  E *vs = ks + BK * ld;                // (BK, ld)
  E *ps = vs + BK * ld;                // (kRows, ldP), warp w: rows 16w..

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int bh = blockIdx.x, b = bh / p.heads, h = bh % p.heads;
  const int kvh = h / (p.heads / p.kvHeads);
  const int tq = p.queries, tk = p.keys;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * kRows;
  // Causal: key j is visible to query i iff j <= i + shift.
  const int shift = tk - tq;

  loadTile<DP, BF16>(qs, ld, kRows, p.q.at(b, h, q0), p.q.row,
                     min(kRows, tq - q0), p.dim);

  // This lane's two rows (queries) of the warp's 16.
  const int rowA = q0 + 16 * warp + g, rowB = rowA + 8;
  int kEnd = tk;
  if (p.causal)
    kEnd = min(tk, min(q0 + kRows, tq) + shift);

  float o[DP / 8][4] = {};              // (16, DP) unnormalized out
  float mA = -INFINITY, mB = -INFINITY; // running maxima of rows A, B
  float lA = 0.0f, lB = 0.0f;           // this lane's part of the running sums
  E *pw = ps + 16 * warp * ldP;
  for (int k0 = 0; k0 < kEnd; k0 += BK) {
    __syncthreads(); // every warp is done with the previous K, V (and Q)
    loadTile<DP, BF16>(ks, ld, BK, p.k.at(b, kvh, k0), p.k.row,
                       min(BK, tk - k0), p.dim);
    loadTile<DP, BF16>(vs, ld, BK, p.v.at(b, kvh, k0), p.v.row,
                       min(BK, tk - k0), p.valueDim);
    __syncthreads();

    float s[BK / 8][4] = {}; // (16, BK) scores
    warpGemm<DP, BF16, true>(s, qs + 16 * warp * ld, ld, ks, ld);
    float maxA = -INFINITY, maxB = -INFINITY;
#pragma unroll
    for (int j = 0; j < BK / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int key = k0 + 8 * j + 2 * t + (e & 1);
        int row = e < 2 ? rowA : rowB;
        bool visible = key < tk && (!p.causal || key <= row + shift);
        float x = visible ? biasedScore<BF16>(p, s[j][e], b, key) : -INFINITY;
        s[j][e] = x;
        if (e < 2)
          maxA = fmaxf(maxA, x);
        else
          maxB = fmaxf(maxB, x);
      }
    float newA = fmaxf(mA, quadMax(maxA)), newB = fmaxf(mB, quadMax(maxB));
    // A row that has seen no visible key yet (or only keys whose bias is
    // -inf) keeps m = -inf; exponentiate against 0 then (every p is 0).
    // Without a bias it cannot last: key 0 is visible to every row, and the
    // first block holds it.
    float baseA = newA == -INFINITY ? 0.0f : newA;
    float baseB = newB == -INFINITY ? 0.0f : newB;
    float alphaA = expf(mA - baseA), alphaB = expf(mB - baseB);
    mA = newA;
    mB = newB;
    lA *= alphaA;
    lB *= alphaB;
#pragma unroll
    for (int j = 0; j < DP / 8; ++j) {
      o[j][0] *= alphaA;
      o[j][1] *= alphaA;
      o[j][2] *= alphaB;
      o[j][3] *= alphaB;
    }
#pragma unroll
    for (int j = 0; j < BK / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float pr = expf(s[j][e] - (e < 2 ? baseA : baseB));
        if (e < 2)
          lA += pr;
        else
          lB += pr;
        pw[(g + 8 * (e / 2)) * ldP + 8 * j + 2 * t + (e & 1)] =
            toElem<BF16>(pr);
      }
    __syncwarp();
    warpGemm<BK, BF16, false>(o, pw, ldP, vs, ld);
  }

  lA = quadSum(lA);
  lB = quadSum(lB);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    int row = half ? rowB : rowA;
    if (row >= tq)
      continue;
    float l = half ? lB : lA, m = half ? mB : mA;
    int64_t at = static_cast<int64_t>(bh) * tq + row;
    float *out = p.outW.at(b, h, row);
#pragma unroll
    for (int j = 0; j < DP / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        int col = 8 * j + 2 * t + e;
        if (col < p.valueDim) {
          float x = o[j][2 * half + e] / l;
          out[col] = BF16 ? roundBF16(x) : x;
        }
      }
    if (t == 0)
      p.lseW[at] = m + logf(l);
  }
}

//===- Backward -----------------------------------------------------------===//

/// delta_i = dOut_i . out_i for each of the `rows` (batch, head, query)
/// rows, written contiguously; one warp per row, 8 rows per CTA.
__global__ void __launch_bounds__(256)
    attentionDelta(Params p, float *delta, int64_t rows) {
  int64_t row = static_cast<int64_t>(blockIdx.x) * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows)
    return; // the whole warp: rows are per warp
  int64_t bh = row / p.queries;
  int b = static_cast<int>(bh / p.heads), h = static_cast<int>(bh % p.heads),
      t = static_cast<int>(row % p.queries);
  const float *o = p.out.at(b, h, t), *d = p.dOut.at(b, h, t);
  float sum = 0.0f;
  for (int c = lane; c < p.valueDim; c += 32)
    sum = fmaf(o[c], d[c], sum);
  for (int offset = 16; offset > 0; offset /= 2)
    sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0)
    delta[row] = sum;
}

/// Tiles of the dK/dV kernel: kRows keys, `cols` queries per step (fewer
/// at dim 128: the dK and dV accumulators take 128 registers there; f32
/// tiles fit 99 KB of shared memory, sm_86/89's).
template <int DP, bool BF16> struct KeyGradTiles {
  static constexpr int cols =
      BF16 ? (DP == 128 ? 32 : 64) : (DP == 128 ? 16 : 32);
  static constexpr int ld = DP + kPad<BF16>;    // K, V, Q, dO rows
  static constexpr int ldS = cols + kPad<BF16>; // P^T, dS^T rows
  static constexpr size_t elems =
      2 * kRows * ld + 2 * cols * ld + 2 * kRows * ldS;
  static constexpr size_t bytes =
      elems * sizeof(Elem<BF16>) + 2 * cols * sizeof(float); // + lse, delta
};

/// grid (batch * kvHeads, key blocks); dK and dV of 64 keys of one
/// key/value head, summed over the query heads of its group.
template <int DP, bool BF16>
__global__ void __launch_bounds__(kThreads,
                                  (minBlocksPerSM<Kernel::KeyGrad, DP, BF16>()))
    attentionKeyGrad(Params p) {
  using Tiles = KeyGradTiles<DP, BF16>;
  using E = Elem<BF16>;
  constexpr int BQ = Tiles::cols, ld = Tiles::ld, ldS = Tiles::ldS;
  ANVIL_DYNAMIC_SHARED(smem);
  E *ks = reinterpret_cast<E *>(smem); // (kRows, ld)
  E *vs = ks + kRows * ld;             // (kRows, ld)
  E *qs = vs + kRows * ld;             // (BQ, ld)
  E *dos = qs + BQ * ld;               // (BQ, ld)
  E *pts = dos + BQ * ld;              // (kRows, ldS): P^T, warp w: 16w..
  E *dsts = pts + kRows * ldS;         // (kRows, ldS): dS^T
  float *lses = reinterpret_cast<float *>(dsts + kRows * ldS); // (BQ)
  float *deltas = lses + BQ;                                   // (BQ)

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int bkv = blockIdx.x, b = bkv / p.kvHeads, kvh = bkv % p.kvHeads;
  const int group = p.heads / p.kvHeads;
  const int tq = p.queries, tk = p.keys, shift = tk - tq;
  const int k0 = blockIdx.y * kRows;

  loadTile<DP, BF16>(ks, ld, kRows, p.k.at(b, kvh, k0), p.k.row,
                     min(kRows, tk - k0), p.dim);
  loadTile<DP, BF16>(vs, ld, kRows, p.v.at(b, kvh, k0), p.v.row,
                     min(kRows, tk - k0), p.valueDim);

  // This lane's two rows (keys) of the warp's 16, and their biases.
  const int keyA = k0 + 16 * warp + g, keyB = keyA + 8;
  const float biasA = p.keyBias && keyA < tk ? p.keyBias[b * tk + keyA] : 0.0f;
  const float biasB = p.keyBias && keyB < tk ? p.keyBias[b * tk + keyB] : 0.0f;
  // The first query that sees key k0 (causal), rounded down to a block.
  const int qStart = p.causal ? max(0, k0 - shift) / BQ * BQ : 0;

  float dk[DP / 8][4] = {}, dv[DP / 8][4] = {}; // (16, DP) each
  E *ptw = pts + 16 * warp * ldS, *dstw = dsts + 16 * warp * ldS;
  for (int r = 0; r < group; ++r) {
    const int h = kvh * group + r;
    const int64_t bh = static_cast<int64_t>(b) * p.heads + h;
    for (int q0 = qStart; q0 < tq; q0 += BQ) {
      __syncthreads(); // every warp is done with the previous Q, dO
      const int64_t row0 = bh * tq + q0; // of lse and delta
      loadTile<DP, BF16>(qs, ld, BQ, p.q.at(b, h, q0), p.q.row,
                         min(BQ, tq - q0), p.dim);
      loadTile<DP, BF16>(dos, ld, BQ, p.dOut.at(b, h, q0), p.dOut.row,
                         min(BQ, tq - q0), p.valueDim);
      for (int i = threadIdx.x; i < BQ; i += kThreads) {
        bool valid = q0 + i < tq;
        lses[i] = valid ? p.lse[row0 + i] : 0.0f;
        deltas[i] = valid ? p.delta[row0 + i] : 0.0f;
      }
      __syncthreads();

      float st[BQ / 8][4] = {}, dpt[BQ / 8][4] = {}; // (16, BQ) each
      warpGemm<DP, BF16, true>(st, ks + 16 * warp * ld, ld, qs, ld);
      warpGemm<DP, BF16, true>(dpt, vs + 16 * warp * ld, ld, dos, ld);
#pragma unroll
      for (int j = 0; j < BQ / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          int col = 8 * j + 2 * t + (e & 1), query = q0 + col;
          int key = e < 2 ? keyA : keyB;
          bool visible =
              query < tq && key < tk && (!p.causal || key <= query + shift);
          float pr = visible ? expf(score<BF16>(st[j][e], p.scale) +
                                    (e < 2 ? biasA : biasB) - lses[col])
                             : 0.0f;
          float dp = BF16 ? roundBF16(dpt[j][e]) : dpt[j][e];
          float ds = pr * (dp - deltas[col]) * p.scale;
          int at = (g + 8 * (e / 2)) * ldS + col;
          ptw[at] = toElem<BF16>(pr);
          dstw[at] = toElem<BF16>(ds);
        }
      __syncwarp();
      warpGemm<BQ, BF16, false>(dv, ptw, ldS, dos, ld);
      warpGemm<BQ, BF16, false>(dk, dstw, ldS, qs, ld);
    }
  }

#pragma unroll
  for (int half = 0; half < 2; ++half) {
    int key = half ? keyB : keyA;
    if (key >= tk)
      continue;
    float *dkRow = p.dk.at(b, kvh, key), *dvRow = p.dv.at(b, kvh, key);
#pragma unroll
    for (int j = 0; j < DP / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        int col = 8 * j + 2 * t + e;
        float x = dk[j][2 * half + e], y = dv[j][2 * half + e];
        if (col < p.dim)
          dkRow[col] = BF16 ? roundBF16(x) : x;
        if (col < p.valueDim)
          dvRow[col] = BF16 ? roundBF16(y) : y;
      }
  }
}

/// Tiles of the dQ kernel: kRows queries, `cols` keys per step (fewer with
/// f32 at dim 128, to fit 99 KB of shared memory).
template <int DP, bool BF16> struct QueryGradTiles {
  static constexpr int cols = BF16 ? 64 : (DP == 128 ? 16 : 64);
  static constexpr int ld = DP + kPad<BF16>;    // Q, dO, K, V rows
  static constexpr int ldS = cols + kPad<BF16>; // dS rows
  static constexpr size_t bytes =
      (2 * kRows * ld + 2 * cols * ld + kRows * ldS) * sizeof(Elem<BF16>);
};

/// grid (batch * heads, query blocks, last block first); dQ of 64 queries
/// of one head.
template <int DP, bool BF16>
__global__ void
__launch_bounds__(kThreads, (minBlocksPerSM<Kernel::QueryGrad, DP, BF16>()))
    attentionQueryGrad(Params p) {
  using Tiles = QueryGradTiles<DP, BF16>;
  using E = Elem<BF16>;
  constexpr int BK = Tiles::cols, ld = Tiles::ld, ldS = Tiles::ldS;
  ANVIL_DYNAMIC_SHARED(smem);
  E *qs = reinterpret_cast<E *>(smem); // (kRows, ld)
  E *dos = qs + kRows * ld;            // (kRows, ld)
  E *ks = dos + kRows * ld;            // (BK, ld)
  E *vs = ks + BK * ld;                // (BK, ld)
  E *dss = vs + BK * ld;               // (kRows, ldS), warp w: rows 16w..

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int bh = blockIdx.x, b = bh / p.heads, h = bh % p.heads;
  const int kvh = h / (p.heads / p.kvHeads);
  const int tq = p.queries, tk = p.keys, shift = tk - tq;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * kRows;
  const int64_t row0 = static_cast<int64_t>(bh) * tq + q0; // of lse, delta

  loadTile<DP, BF16>(qs, ld, kRows, p.q.at(b, h, q0), p.q.row,
                     min(kRows, tq - q0), p.dim);
  loadTile<DP, BF16>(dos, ld, kRows, p.dOut.at(b, h, q0), p.dOut.row,
                     min(kRows, tq - q0), p.valueDim);

  // This lane's two rows (queries) of the warp's 16.
  const int rowA = q0 + 16 * warp + g, rowB = rowA + 8;
  const float lseA = rowA < tq ? p.lse[row0 + rowA - q0] : 0.0f;
  const float lseB = rowB < tq ? p.lse[row0 + rowB - q0] : 0.0f;
  const float deltaA = rowA < tq ? p.delta[row0 + rowA - q0] : 0.0f;
  const float deltaB = rowB < tq ? p.delta[row0 + rowB - q0] : 0.0f;
  int kEnd = tk;
  if (p.causal)
    kEnd = min(tk, min(q0 + kRows, tq) + shift);

  float dq[DP / 8][4] = {}; // (16, DP)
  E *dsw = dss + 16 * warp * ldS;
  for (int k0 = 0; k0 < kEnd; k0 += BK) {
    __syncthreads(); // every warp is done with the previous K, V
    loadTile<DP, BF16>(ks, ld, BK, p.k.at(b, kvh, k0), p.k.row,
                       min(BK, tk - k0), p.dim);
    loadTile<DP, BF16>(vs, ld, BK, p.v.at(b, kvh, k0), p.v.row,
                       min(BK, tk - k0), p.valueDim);
    __syncthreads();

    float s[BK / 8][4] = {}, dpm[BK / 8][4] = {}; // (16, BK) each
    warpGemm<DP, BF16, true>(s, qs + 16 * warp * ld, ld, ks, ld);
    warpGemm<DP, BF16, true>(dpm, dos + 16 * warp * ld, ld, vs, ld);
#pragma unroll
    for (int j = 0; j < BK / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int key = k0 + 8 * j + 2 * t + (e & 1);
        int row = e < 2 ? rowA : rowB;
        bool visible =
            row < tq && key < tk && (!p.causal || key <= row + shift);
        float pr = visible ? expf(biasedScore<BF16>(p, s[j][e], b, key) -
                                  (e < 2 ? lseA : lseB))
                           : 0.0f;
        float dp = BF16 ? roundBF16(dpm[j][e]) : dpm[j][e];
        float ds = pr * (dp - (e < 2 ? deltaA : deltaB)) * p.scale;
        dsw[(g + 8 * (e / 2)) * ldS + 8 * j + 2 * t + (e & 1)] =
            toElem<BF16>(ds);
      }
    __syncwarp();
    warpGemm<BK, BF16, false>(dq, dsw, ldS, ks, ld);
  }

#pragma unroll
  for (int half = 0; half < 2; ++half) {
    int row = half ? rowB : rowA;
    if (row >= tq)
      continue;
    float *dqRow = p.dq.at(b, h, row);
#pragma unroll
    for (int j = 0; j < DP / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        int col = 8 * j + 2 * t + e;
        float x = dq[j][2 * half + e];
        if (col < p.dim)
          dqRow[col] = BF16 ? roundBF16(x) : x;
      }
  }
}

//===- Copies between f32 and bf16 tensors --------------------------------===//
//
// cuDNN's attention reads and writes bf16; calls on f32 tensors copy their
// operands to contiguous bf16 and the results back (attentionToBf16,
// attentionFromBf16), and calls on bf16 tensors that Anvil's kernels run
// widen theirs to contiguous f32 and round the results back
// (attentionWidenBf16, attentionNarrowToBf16).

__device__ __forceinline__ __nv_bfloat16 convertTo(float x, __nv_bfloat16 *) {
  return __float2bfloat16_rn(x);
}
__device__ __forceinline__ float convertTo(__nv_bfloat16 x, float *) {
  return __bfloat162float(x);
}

/// CTA (batch * heads, kRows rows): with Gather, the rows of `placed` into
/// the contiguous (batch, heads, rows, width) `flat`, converted; otherwise
/// the other way. Consecutive threads take consecutive columns (coalesced
/// on both sides).
template <bool Gather, typename Placed, typename Flat>
__device__ __forceinline__ void copyRows(Strided<Placed> placed, Flat *flat,
                                         int heads, int rows, int width) {
  int bh = blockIdx.x, b = bh / heads, h = bh % heads;
  int r0 = blockIdx.y * kRows;
  int n = (rows - r0 < kRows ? rows - r0 : kRows) * width;
  Flat *tile = flat + (static_cast<int64_t>(bh) * rows + r0) * width;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    Placed *at = placed.at(b, h, r0 + i / width) + i % width;
    if constexpr (Gather)
      tile[i] = convertTo(*at, static_cast<Flat *>(nullptr));
    else
      *at = convertTo(tile[i], static_cast<Placed *>(nullptr));
  }
}

__global__ void __launch_bounds__(kThreads)
    attentionToBf16(Strided<const float> src, __nv_bfloat16 *dst, int heads,
                    int rows, int width) {
  copyRows<true>(src, dst, heads, rows, width);
}

__global__ void __launch_bounds__(kThreads)
    attentionFromBf16(Strided<float> dst, const __nv_bfloat16 *src, int heads,
                      int rows, int width) {
  copyRows<false>(dst, src, heads, rows, width);
}

__global__ void __launch_bounds__(kThreads)
    attentionWidenBf16(Strided<const __nv_bfloat16> src, float *dst, int heads,
                       int rows, int width) {
  copyRows<true>(src, dst, heads, rows, width);
}

__global__ void __launch_bounds__(kThreads)
    attentionNarrowToBf16(Strided<__nv_bfloat16> dst, const float *src,
                          int heads, int rows, int width) {
  copyRows<false>(dst, src, heads, rows, width);
}

//===- Host side ----------------------------------------------------------===//

Call describe(const char *name, const char *pass, int64_t batch, int64_t heads,
              int64_t kvHeads, int64_t queries, int64_t keys, int64_t dim,
              int64_t valueDim, int32_t causal, int32_t bf16,
              const float *keyBias) {
  auto n = [](int64_t x) { return std::to_string(x); };
  Call c;
  c.name = name;
  c.shape = "batch " + n(batch) + ", heads " + n(heads) + ", kv heads " +
            n(kvHeads) + ", queries " + n(queries) + ", keys " + n(keys) +
            ", dim " + n(dim) + ", value dim " + n(valueDim) +
            (causal ? ", causal" : ", not causal") +
            (keyBias ? ", key bias" : "") +
            (bf16 ? ", bf16 products" : ", f32 products");
  c.profileName = std::string("attention ") + pass +
                  (bf16 ? " bf16 " : " f32 ") + (causal ? "causal " : "") +
                  (keyBias ? "biased " : "") + n(batch) + "x" + n(heads) + "/" +
                  n(kvHeads) + "x" + n(queries) + "x" + n(keys) + "x" + n(dim) +
                  (dim == valueDim ? "" : "/" + n(valueDim));
  c.start = std::chrono::steady_clock::now();
  return c;
}

/// Fails unless the kernels here support the shape.
void validate(const Call &c, int64_t batch, int64_t heads, int64_t kvHeads,
              int64_t queries, int64_t keys, int64_t dim, int64_t valueDim,
              int32_t causal) {
  if (batch < 0 || queries < 0 || keys < 0)
    failShape(c, "negative sizes");
  if (heads < 1 || kvHeads < 1 || heads % kvHeads != 0)
    failShape(c, "heads must be a positive multiple of kv heads");
  if (dim < 1 || dim > 128 || valueDim < 1 || valueDim > 128)
    failShape(c, "dim and value dim from 1 to 128 are supported");
  if (causal && keys < queries)
    failShape(c, "causal attention needs at least as many keys as queries");
  if (queries > 0 && keys == 0)
    failShape(c, "attention over no keys is undefined");
  int64_t maxBlocks = 65535; // gridDim.y
  if (queries > maxBlocks * kRows || keys > maxBlocks * kRows ||
      batch * heads > INT_MAX)
    failShape(c, "more than " + std::to_string(maxBlocks * kRows) +
                     " queries or keys, or more than 2^31 - 1 heads in all, "
                     "are not supported");
  // The gradient's delta kernel: 8 rows a CTA on a 1-D grid (gridDim.x).
  if ((batch * heads * queries + 7) / 8 > INT_MAX)
    failShape(c, "more than 2^34 query rows in all are not supported");
}

/// The bound on the element indices a launch computes in 32 bits (hook:
/// the emulator lowers it to test the batch chunks below).
int64_t indexLimit() {
#ifdef ANVIL_CUDA_EMULATION
  return anvil::cuda_emulation::options().attentionIndexLimit;
#else
  return INT_MAX;
#endif
}

/// A 4-D tensor argument: its name, start, layout and (heads, rows, width)
/// of each batch element.
struct TensorArg {
  const char *name;
  const anvil_rt_attention_layout &layout;
  int64_t heads, rows, width;
};

/// The most batch elements one launch may take: with that many, every
/// tensor's elements lie within indexLimit() of its first (Strided's 32-bit
/// arithmetic); larger batches run in several launches. Fails on a negative
/// offset or stride, or a batch element of a tensor spanning more.
int64_t batchChunk(const Call &c, std::initializer_list<TensorArg> tensors,
                   int64_t batch) {
  const int64_t limit = indexLimit();
  int64_t chunk = std::max<int64_t>(batch, 1);
  for (const TensorArg &t : tensors) {
    const anvil_rt_attention_layout &l = t.layout;
    if (l.offset < 0 || l.batch < 0 || l.head < 0 || l.row < 0)
      failShape(c, std::string(t.name) +
                       "'s layout has a negative offset or stride");
    // The last element of one batch element.
    int64_t last = t.width - 1, term = 0;
    bool overflow = false;
    for (auto [extent, stride] : {std::pair{t.heads, l.head}, {t.rows, l.row}})
      if (extent > 1)
        overflow |= __builtin_mul_overflow(extent - 1, stride, &term) ||
                    __builtin_add_overflow(last, term, &last);
    if (overflow || last > limit)
      failShape(c, std::string(t.name) +
                       ": one batch element spans more than " +
                       std::to_string(limit) + " elements");
    if (l.batch > 0)
      chunk = std::min(chunk, (limit - last) / l.batch + 1);
  }
  return chunk;
}

/// Batch elements [b0, b0 + chunk) of `base` placed by `l` (the batch
/// stride fits 32 bits when chunk > 1: batchChunk).
template <typename T>
Strided<T> chunkOf(T *base, const anvil_rt_attention_layout &l, int64_t b0,
                   int64_t chunk) {
  Strided<T> t;
  t.data = base + l.offset + b0 * l.batch;
  t.batch = chunk > 1 ? static_cast<int>(l.batch) : 0;
  t.head = static_cast<int>(l.head);
  t.row = static_cast<int>(l.row);
  return t;
}

/// The largest dynamic shared memory a CTA may opt into on this device.
int sharedMemoryLimit(const Call &c) {
  int device = 0, bytes = 0;
  check(cudaGetDevice(&device), "cudaGetDevice", c);
  check(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                               device),
        "cudaDeviceGetAttribute", c);
  return bytes;
}

/// Lets `kernel` use `smem` bytes of dynamic shared memory, once per
/// kernel and size (the first step's calls, before any graph capture).
template <typename Kernel>
void optIntoSharedMemory(Kernel kernel, const std::string &name, size_t smem,
                         const Call &c) {
  static std::mutex mutex;
  static std::map<const void *, size_t> granted;
  std::lock_guard<std::mutex> lock(mutex);
  size_t &bytes = granted[reinterpret_cast<const void *>(kernel)];
  if (bytes >= smem)
    return;
  check(cudaFuncSetAttribute(kernel,
                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem)),
        "cudaFuncSetAttribute", c, name);
  bytes = smem;
}

/// Launches `kernel` (named `name`) on the step stream with kThreads
/// threads per CTA and `smem` bytes of dynamic shared memory.
template <typename Kernel, typename... Args>
void launch(Kernel kernel, const std::string &name, dim3 grid, size_t smem,
            const Call &c, Args... args) {
  if (grid.x == 0 || grid.y == 0)
    return;
  if (smem > 48 * 1024) {
    int limit = sharedMemoryLimit(c);
    if (smem > static_cast<size_t>(limit))
      anvil::rt::cuda::failInStep(
          "kernel '" + name + "' needs " + std::to_string(smem) +
          " bytes of shared memory per block, this device allows " +
          std::to_string(limit) + ", for " + c.name + " (" + c.shape + ")");
    optIntoSharedMemory(kernel, name, smem, c);
  }
  launchOnStepStream(kernel, grid, kThreads, smem, args...);
  check(cudaGetLastError(), "the launch", c, name);
}

std::string kernelName(const char *kernel, int dp, bool bf16) {
  return std::string(kernel) + "<" + std::to_string(dp) +
         (bf16 ? ", bf16>" : ", f32>");
}

unsigned blocksOf(int64_t n) {
  return static_cast<unsigned>((n + kRows - 1) / kRows);
}

template <int DP, bool BF16>
void runForward(const Params &p, int64_t batch, const Call &c) {
  dim3 grid(static_cast<unsigned>(batch * p.heads), blocksOf(p.queries));
  launch(attentionForward<DP, BF16>, kernelName("attentionForward", DP, BF16),
         grid, ForwardTiles<DP, BF16>::bytes, c, p);
}

template <int DP, bool BF16>
void runBackward(const Params &p, int64_t batch, const Call &c) {
  dim3 keyGrid(static_cast<unsigned>(batch * p.kvHeads), blocksOf(p.keys));
  launch(attentionKeyGrad<DP, BF16>, kernelName("attentionKeyGrad", DP, BF16),
         keyGrid, KeyGradTiles<DP, BF16>::bytes, c, p);
  dim3 queryGrid(static_cast<unsigned>(batch * p.heads), blocksOf(p.queries));
  launch(attentionQueryGrad<DP, BF16>,
         kernelName("attentionQueryGrad", DP, BF16), queryGrid,
         QueryGradTiles<DP, BF16>::bytes, c, p);
}

using Runner = void (*)(const Params &, int64_t, const Call &);

/// The instantiations for dim and value dim up to `dp` (16, 32, 64, 128).
Runner pickForward(int64_t dp, bool bf16) {
  switch (dp) {
  case 16:
    return bf16 ? runForward<16, true> : runForward<16, false>;
  case 32:
    return bf16 ? runForward<32, true> : runForward<32, false>;
  case 64:
    return bf16 ? runForward<64, true> : runForward<64, false>;
  default:
    return bf16 ? runForward<128, true> : runForward<128, false>;
  }
}

Runner pickBackward(int64_t dp, bool bf16) {
  switch (dp) {
  case 16:
    return bf16 ? runBackward<16, true> : runBackward<16, false>;
  case 32:
    return bf16 ? runBackward<32, true> : runBackward<32, false>;
  case 64:
    return bf16 ? runBackward<64, true> : runBackward<64, false>;
  default:
    return bf16 ? runBackward<128, true> : runBackward<128, false>;
  }
}

/// The padded width of the tiles: the next of 16, 32, 64, 128.
int64_t paddedDim(int64_t dim, int64_t valueDim) {
  int64_t d = std::max(dim, valueDim);
  return d <= 16 ? 16 : d <= 32 ? 32 : d <= 64 ? 64 : 128;
}

/// Queues `kernel` (a copy above) over every batch element of a
/// (batch, heads, rows, width) tensor, in launches of batchChunk's size.
template <typename Kernel, typename Contiguous, typename Placed>
void copyAttentionTensor(Kernel kernel, const char *kernelName,
                         Contiguous *contiguous, Placed *base,
                         const anvil_rt_attention_layout &layout, int64_t batch,
                         int64_t heads, int64_t rows, int64_t width,
                         const char *caller) {
  Call c{caller, "", "", std::chrono::steady_clock::now()};
  for (int64_t x : {batch, heads, rows, width})
    c.shape += (c.shape.empty() ? "(" : ", ") + std::to_string(x);
  c.shape += ") copied between f32 and bf16 around the attention";
  if (batch * heads > INT_MAX || rows > 65535 * int64_t(kRows) ||
      rows * width > INT_MAX)
    failShape(c, "a tensor too large to copy");
  int64_t chunk =
      batchChunk(c, {{kernelName, layout, heads, rows, width}}, batch);
  for (int64_t b0 = 0; b0 < batch; b0 += chunk) {
    int64_t n = std::min(chunk, batch - b0);
    dim3 grid(static_cast<unsigned>(n * heads), blocksOf(rows));
    launch(kernel, kernelName, grid, 0, c, chunkOf(base, layout, b0, chunk),
           contiguous + b0 * heads * rows * width, static_cast<int>(heads),
           static_cast<int>(rows), static_cast<int>(width));
  }
}

} // namespace

void anvil::rt::cuda::copyAttentionTensorToBf16(
    const float *base, const anvil_rt_attention_layout &layout, int64_t batch,
    int64_t heads, int64_t rows, int64_t width, void *dst, const char *caller) {
  copyAttentionTensor(attentionToBf16, "attentionToBf16",
                      static_cast<__nv_bfloat16 *>(dst), base, layout, batch,
                      heads, rows, width, caller);
}

void anvil::rt::cuda::copyAttentionTensorFromBf16(
    const void *src, float *base, const anvil_rt_attention_layout &layout,
    int64_t batch, int64_t heads, int64_t rows, int64_t width,
    const char *caller) {
  copyAttentionTensor(attentionFromBf16, "attentionFromBf16",
                      static_cast<const __nv_bfloat16 *>(src), base, layout,
                      batch, heads, rows, width, caller);
}

void anvil::rt::cuda::widenAttentionTensor(
    const void *base, const anvil_rt_attention_layout &layout, int64_t batch,
    int64_t heads, int64_t rows, int64_t width, float *dst,
    const char *caller) {
  copyAttentionTensor(attentionWidenBf16, "attentionWidenBf16", dst,
                      static_cast<const __nv_bfloat16 *>(base), layout, batch,
                      heads, rows, width, caller);
}

void anvil::rt::cuda::narrowAttentionTensor(
    const float *src, void *base, const anvil_rt_attention_layout &layout,
    int64_t batch, int64_t heads, int64_t rows, int64_t width,
    const char *caller) {
  copyAttentionTensor(attentionNarrowToBf16, "attentionNarrowToBf16", src,
                      static_cast<__nv_bfloat16 *>(base), layout, batch, heads,
                      rows, width, caller);
}

namespace {

/// One attention problem's sizes, as the entry points take them.
struct Sizes {
  int64_t batch, heads, kvHeads, queries, keys, dim, valueDim;
  float scale;
  int32_t causal;

  /// The shape of a call with `keyBias` (or none).
  anvil::rt::cuda::AttentionShape shape(const float *keyBias) const {
    return {batch, heads,    kvHeads, queries,     keys,
            dim,   valueDim, scale,   causal != 0, keyBias != nullptr};
  }
  Params params() const {
    Params p{};
    p.heads = static_cast<int>(heads);
    p.kvHeads = static_cast<int>(kvHeads);
    p.queries = static_cast<int>(queries);
    p.keys = static_cast<int>(keys);
    p.dim = static_cast<int>(dim);
    p.valueDim = static_cast<int>(valueDim);
    p.scale = scale;
    p.causal = causal != 0;
    return p;
  }
};

/// Describes, validates and initializes the call; false when there is
/// nothing to compute (no queries for the forward, no keys for the
/// gradient).
bool begin(Call &c, const Sizes &z, bool backward,
           const anvil_rt_attention_layout *layouts) {
  validate(c, z.batch, z.heads, z.kvHeads, z.queries, z.keys, z.dim, z.valueDim,
           z.causal);
  if (!layouts)
    failShape(c, "no layouts");
  initialize(c);
  // No keys for the gradient: no queries either (validate), nothing to
  // write.
  return z.batch != 0 && (backward ? z.keys != 0 : z.queries != 0);
}

/// The key bias (batch, keys) as batchChunk sees it: a row per batch
/// element (its kernels index it in 32 bits too).
anvil_rt_attention_layout keyBiasLayout(const Sizes &z) {
  return {0, z.keys, 0, 0};
}

/// The forward on Anvil's kernels (f32 tensors).
void forwardOnKernels(const Call &c, const float *q, const float *k,
                      const float *v, const float *keyBias, float *out,
                      float *lse, const Sizes &z, bool bf16,
                      const anvil_rt_attention_layout *l) {
  anvil_rt_attention_layout biasLayout = keyBiasLayout(z);
  int64_t chunk = batchChunk(c,
                             {{"q", l[0], z.heads, z.queries, z.dim},
                              {"k", l[1], z.kvHeads, z.keys, z.dim},
                              {"v", l[2], z.kvHeads, z.keys, z.valueDim},
                              {"out", l[3], z.heads, z.queries, z.valueDim},
                              {"keyBias", biasLayout, 1, 1, z.keys}},
                             z.batch);
  Params p = z.params();
  Runner run = pickForward(paddedDim(z.dim, z.valueDim), bf16);
  for (int64_t b0 = 0; b0 < z.batch; b0 += chunk) {
    p.q = chunkOf(q, l[0], b0, chunk);
    p.k = chunkOf(k, l[1], b0, chunk);
    p.v = chunkOf(v, l[2], b0, chunk);
    p.outW = chunkOf(out, l[3], b0, chunk);
    p.keyBias = keyBias ? keyBias + b0 * z.keys : nullptr;
    p.lseW = lse + b0 * z.heads * z.queries;
    run(p, std::min(chunk, z.batch - b0), c);
  }
}

/// The gradient on Anvil's kernels (f32 tensors).
void backwardOnKernels(const Call &c, const float *q, const float *k,
                       const float *v, const float *keyBias, const float *out,
                       const float *lse, const float *dOut, float *dq,
                       float *dk, float *dv, const Sizes &z, bool bf16,
                       const anvil_rt_attention_layout *l) {
  int64_t heads = z.heads, kvHeads = z.kvHeads, queries = z.queries,
          keys = z.keys, dim = z.dim, valueDim = z.valueDim;
  int64_t chunk = batchChunk(c,
                             {{"q", l[0], heads, queries, dim},
                              {"k", l[1], kvHeads, keys, dim},
                              {"v", l[2], kvHeads, keys, valueDim},
                              {"out", l[3], heads, queries, valueDim},
                              {"dOut", l[4], heads, queries, valueDim},
                              {"dq", l[5], heads, queries, dim},
                              {"dk", l[6], kvHeads, keys, dim},
                              {"dv", l[7], kvHeads, keys, valueDim},
                              {"keyBias", keyBiasLayout(z), 1, 1, keys}},
                             z.batch);
  Params p = z.params();
  int64_t rows = z.batch * heads * queries;
  float *delta = nullptr; // (batch, heads, queries)
  if (rows > 0)
    check(cudaMallocAsync(reinterpret_cast<void **>(&delta),
                          static_cast<size_t>(rows) * sizeof(float),
                          stepStream()),
          "cudaMallocAsync", c);
  Runner run = pickBackward(paddedDim(dim, valueDim), bf16);
  for (int64_t b0 = 0; b0 < z.batch; b0 += chunk) {
    int64_t n = std::min(chunk, z.batch - b0), first = b0 * heads * queries;
    p.q = chunkOf(q, l[0], b0, chunk);
    p.k = chunkOf(k, l[1], b0, chunk);
    p.v = chunkOf(v, l[2], b0, chunk);
    p.out = chunkOf(out, l[3], b0, chunk);
    p.dOut = chunkOf(dOut, l[4], b0, chunk);
    p.dq = chunkOf(dq, l[5], b0, chunk);
    p.dk = chunkOf(dk, l[6], b0, chunk);
    p.dv = chunkOf(dv, l[7], b0, chunk);
    p.lse = lse + first;
    p.keyBias = keyBias ? keyBias + b0 * keys : nullptr;
    float *chunkDelta = delta ? delta + first : nullptr;
    p.delta = chunkDelta;
    if (int64_t chunkRows = n * heads * queries; chunkRows > 0) {
      launchOnStepStream(attentionDelta,
                         static_cast<unsigned>((chunkRows + 7) / 8), 256, 0, p,
                         chunkDelta, chunkRows);
      check(cudaGetLastError(), "the launch", c, "attentionDelta");
    }
    run(p, n, c);
  }
  if (delta)
    check(cudaFreeAsync(delta, stepStream()), "cudaFreeAsync", c);
}

/// Runs Anvil's kernels (`run`, given the copies and their contiguous
/// layouts) on a bf16 call's first `count` tensors (anvil_rt_attention_layout's
/// order: q, k, v, out, dOut, dq, dk, dv) as f32 copies from one
/// stream-ordered allocation: the first `inputs` widened before, the rest
/// rounded back into place after (exactly: they are bf16 values).
template <typename Run>
void onWideCopies(const Call &c, const Sizes &z, const void *const *tensors,
                  int inputs, int count,
                  const anvil_rt_attention_layout *layouts, Run run) {
  std::array<int64_t, 3> shapes[8];
  for (int i = 0; i < count; ++i)
    shapes[i] = anvil::rt::cuda::attentionTensorShape(z.shape(nullptr), i);
  anvil_rt_attention_layout wide[8];
  int64_t offsets[8], total = 0;
  for (int i = 0; i < count; ++i) {
    auto [heads, rows, width] = shapes[i];
    wide[i] = {0, heads * rows * width, rows * width, width};
    offsets[i] = total;
    total += (z.batch * heads * rows * width + 63) / 64 * 64;
  }
  float *base = nullptr;
  check(cudaMallocAsync(reinterpret_cast<void **>(&base),
                        static_cast<size_t>(total) * sizeof(float),
                        stepStream()),
        "cudaMallocAsync", c);
  if (!base)
    return; // recorded in a graph capture: the call queues nothing more
  float *copies[8];
  for (int i = 0; i < count; ++i)
    copies[i] = base + offsets[i];
  namespace cu = anvil::rt::cuda;
  for (int i = 0; i < inputs; ++i)
    cu::widenAttentionTensor(tensors[i], layouts[i], z.batch, shapes[i][0],
                             shapes[i][1], shapes[i][2], copies[i], c.name);
  run(copies, wide);
  for (int i = inputs; i < count; ++i)
    cu::narrowAttentionTensor(copies[i], const_cast<void *>(tensors[i]),
                              layouts[i], z.batch, shapes[i][0], shapes[i][1],
                              shapes[i][2], c.name);
  check(cudaFreeAsync(base, stepStream()), "cudaFreeAsync", c);
}

} // namespace

extern "C" void anvil_rt_cuda_attention_f32(
    const float *q, const float *k, const float *v, const float *keyBias,
    float *out, float *lse, int64_t batch, int64_t heads, int64_t kvHeads,
    int64_t queries, int64_t keys, int64_t dim, int64_t valueDim, float scale,
    int32_t causal, int32_t bf16, const anvil_rt_attention_layout *layouts) {
  Call c =
      describe("anvil_rt_cuda_attention_f32", "forward", batch, heads, kvHeads,
               queries, keys, dim, valueDim, causal, bf16, keyBias);
  Sizes z{batch, heads, kvHeads, queries, keys, dim, valueDim, scale, causal};
  if (!begin(c, z, /*backward=*/false, layouts))
    return;
#ifndef ANVIL_CUDA_EMULATION
  if (bf16 && anvil::rt::cuda::cudnnAttentionForward(q, k, v, keyBias, out, lse,
                                                     z.shape(keyBias), layouts))
    return;
#endif
  forwardOnKernels(c, q, k, v, keyBias, out, lse, z, bf16 != 0, layouts);
  finish(c);
}

extern "C" void anvil_rt_cuda_attention_grad_f32(
    const float *q, const float *k, const float *v, const float *keyBias,
    const float *out, const float *lse, const float *dOut, float *dq, float *dk,
    float *dv, int64_t batch, int64_t heads, int64_t kvHeads, int64_t queries,
    int64_t keys, int64_t dim, int64_t valueDim, float scale, int32_t causal,
    int32_t bf16, const anvil_rt_attention_layout *layouts) {
  Call c =
      describe("anvil_rt_cuda_attention_grad_f32", "backward", batch, heads,
               kvHeads, queries, keys, dim, valueDim, causal, bf16, keyBias);
  Sizes z{batch, heads, kvHeads, queries, keys, dim, valueDim, scale, causal};
  if (!begin(c, z, /*backward=*/true, layouts))
    return;
#ifndef ANVIL_CUDA_EMULATION
  if (bf16 && anvil::rt::cuda::cudnnAttentionBackward(
                  q, k, v, keyBias, out, lse, dOut, dq, dk, dv,
                  z.shape(keyBias), layouts))
    return;
#endif
  backwardOnKernels(c, q, k, v, keyBias, out, lse, dOut, dq, dk, dv, z,
                    bf16 != 0, layouts);
  finish(c);
}

extern "C" void anvil_rt_cuda_attention_bf16(
    const void *q, const void *k, const void *v, const float *keyBias,
    void *out, float *lse, int64_t batch, int64_t heads, int64_t kvHeads,
    int64_t queries, int64_t keys, int64_t dim, int64_t valueDim, float scale,
    int32_t causal, const anvil_rt_attention_layout *layouts) {
  const char *name = "anvil_rt_cuda_attention_bf16";
  Call c = describe(name, "forward", batch, heads, kvHeads, queries, keys, dim,
                    valueDim, causal, 1, keyBias);
  Sizes z{batch, heads, kvHeads, queries, keys, dim, valueDim, scale, causal};
  if (!begin(c, z, /*backward=*/false, layouts))
    return;
#ifndef ANVIL_CUDA_EMULATION
  if (anvil::rt::cuda::cudnnAttentionForwardBf16(q, k, v, keyBias, out, lse,
                                                 z.shape(keyBias), layouts))
    return;
#endif
  // Anvil's kernels on f32 copies (the results are bf16 values already).
  const void *tensors[4] = {q, k, v, out};
  onWideCopies(c, z, tensors, /*inputs=*/3, /*count=*/4, layouts,
               [&](float *const *t, const anvil_rt_attention_layout *wide) {
                 forwardOnKernels(c, t[0], t[1], t[2], keyBias, t[3], lse, z,
                                  /*bf16=*/true, wide);
               });
  finish(c);
}

extern "C" void anvil_rt_cuda_attention_grad_bf16(
    const void *q, const void *k, const void *v, const float *keyBias,
    const void *out, const float *lse, const void *dOut, void *dq, void *dk,
    void *dv, int64_t batch, int64_t heads, int64_t kvHeads, int64_t queries,
    int64_t keys, int64_t dim, int64_t valueDim, float scale, int32_t causal,
    const anvil_rt_attention_layout *layouts) {
  const char *name = "anvil_rt_cuda_attention_grad_bf16";
  Call c = describe(name, "backward", batch, heads, kvHeads, queries, keys, dim,
                    valueDim, causal, 1, keyBias);
  Sizes z{batch, heads, kvHeads, queries, keys, dim, valueDim, scale, causal};
  if (!begin(c, z, /*backward=*/true, layouts))
    return;
#ifndef ANVIL_CUDA_EMULATION
  if (anvil::rt::cuda::cudnnAttentionBackwardBf16(q, k, v, keyBias, out, lse,
                                                  dOut, dq, dk, dv,
                                                  z.shape(keyBias), layouts))
    return;
#endif
  const void *tensors[8] = {q, k, v, out, dOut, dq, dk, dv};
  onWideCopies(c, z, tensors, /*inputs=*/5, /*count=*/8, layouts,
               [&](float *const *t, const anvil_rt_attention_layout *wide) {
                 backwardOnKernels(c, t[0], t[1], t[2], keyBias, t[3], lse,
                                   t[4], t[5], t[6], t[7], z, /*bf16=*/true,
                                   wide);
               });
  finish(c);
}
