//===- CudnnAttention.cpp - fused attention through cuDNN's graph API -----===//
//
// The fused attention calls with bf16 products run here when
// attentionLibrary() is cuDNN and cuDNN takes the shape: one cuDNN graph of
// scaled-dot-product attention each (cuDNN's frontend: the `sdpa` and
// `sdpa_backward` nodes, which cuDNN runs as fused flash-attention
// engines), over bf16 (batch, heads, rows, width) tensors, f32 statistics
// and f32 compute:
//
// - forward: O and the statistics (each query row's log-sum-exp of its
//   scaled scores: the call's lse, written in place) of Q, K and V;
// - backward: dQ, dK and dV of Q, K, V, O, dO and the statistics, with
//   cuDNN's deterministic algorithm (no atomics: the same sums every run,
//   like Anvil's kernels); dK and dV summed over a group's query heads.
//
// anvil_rt_cuda_attention_bf16 and its gradient (bf16 tensors, the CUDA
// backend's default) hand cuDNN the tensors where their layouts place them
// (a graph per set of strides), when every start and stride is 16-byte
// aligned as cuDNN's tensors must be. anvil_rt_cuda_attention_f32 and its
// gradient with bf16 products copy their f32 operands to contiguous bf16
// scratch first and the results back (Attention.cu's attentionToBf16 /
// attentionFromBf16). The scratch and cuDNN's workspace are one allocation
// of the stream-ordered allocator, freed on the step stream after the last
// use, so a CUDA graph of the step holds the whole call. causal masks keys
// after a query's diagonal; with more keys than queries, the diagonal is
// the bottom-right one (as anvil_rt_attention_f32 says). A key bias is the
// sdpa nodes' bias, an f32 (batch, 1, 1, keys) tensor broadcast over the
// heads and queries and added to the scaled scores (it gets no gradient:
// no dBias); cuDNN's frontend refuses it with the bottom-right diagonal.
//
// Each shape's graph is built on its first call (a step's first run is
// eager), with cuDNN's heuristics (mode A) picking the engine. Where cuDNN
// refuses the shape (its support checks, no engine, a plan needing more
// than 1 GiB of workspace: the deterministic backward keeps a (queries x
// keys) bf16 matrix per head, 201 MB for GPT-2 124M's batch of 8 x 1024
// tokens), the call returns false and Anvil's kernels run it; that is said
// once per shape on stderr. So do they where lse (or, on bf16 tensors, a
// tensor's start or stride) is not 16-byte aligned.
// A failure to run a built plan aborts, naming the call and the shape (or
// is recorded during a graph capture).
//
// cuDNN's frontend is header-only; its cuDNN calls go through the library
// the runtime opened (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING: Cudnn.h's
// cudnnLibrary()), so an executable that never runs attention on cuDNN
// never needs it.
//
//===----------------------------------------------------------------------===//

#define NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING
#define CUDNN_FRONTEND_SKIP_JSON_LIB
#include <cudnn_frontend.h>

#include "anvil/runtime/Cuda.h"

#include "Cudnn.h"
#include "CudnnAttention.h"

#include <dlfcn.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

/// The frontend's cuDNN (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING): set from
/// cudnnLibrary() before any graph is made.
namespace cudnn_frontend {
void *cudnn_dlhandle = nullptr;
} // namespace cudnn_frontend

namespace fe = cudnn_frontend;
using anvil::rt::Expected;
using anvil::rt::Status;
using anvil::rt::cuda::AttentionLibrary;
using anvil::rt::cuda::AttentionShape;

namespace {

using anvil::rt::cuda::failInStep;

/// The most workspace a plan may take (cuDNN's deterministic backward keeps
/// a (queries x keys) bf16 matrix per head); past it Anvil's kernels run
/// the shape. As the convolutions' (Conv.cpp).
constexpr int64_t kMaxWorkspace = int64_t(1) << 30;

/// The graphs' tensors (their uids in a variant pack).
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV, kBias };
/// The bf16 ones in the calls' order (anvil_rt_attention_layout's: q, k, v,
/// out, then the gradient's dOut, dq, dk, dv).
constexpr Uid kTensorUids[8] = {kQ, kK, kV, kO, kDO, kDQ, kDK, kDV};

/// "batch 8, heads 12, kv heads 12, queries 1024, keys 1024, dim 64, value
/// dim 64, causal".
std::string describe(const AttentionShape &s) {
  auto n = [](int64_t x) { return std::to_string(x); };
  return "batch " + n(s.batch) + ", heads " + n(s.heads) + ", kv heads " +
         n(s.kvHeads) + ", queries " + n(s.queries) + ", keys " + n(s.keys) +
         ", dim " + n(s.dim) + ", value dim " + n(s.valueDim) +
         (s.causal ? ", causal" : ", not causal") +
         (s.keyBias ? ", key bias" : "");
}

/// The bf16 elements of a contiguous (batch, heads, rows, width) tensor.
int64_t elements(const AttentionShape &s, int64_t heads, int64_t rows,
                 int64_t width) {
  return s.batch * heads * rows * width;
}

/// The batch, head and row strides (in elements) of the graph's bf16
/// tensors, by uid (kQ .. kDV; a row's elements are contiguous).
using Strides = std::array<std::array<int64_t, 3>, kDV + 1>;

/// Every tensor contiguous (batch, heads, rows, width): the copies'.
Strides contiguousStrides(const AttentionShape &s) {
  Strides t{};
  for (int i = 0; i < 8; ++i) {
    auto [heads, rows, width] = anvil::rt::cuda::attentionTensorShape(s, i);
    t[kTensorUids[i]] = {heads * rows * width, rows * width, width};
  }
  return t;
}

/// Makes `g` the graph of `s`'s forward (or backward), its bf16 tensors laid
/// out by `strides`, and validates it.
fe::error_t describeGraph(fe::graph::Graph &g, const AttentionShape &s,
                          bool backward, const Strides &strides) {
  g.set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  using Tensor = std::shared_ptr<fe::graph::Tensor_attributes>;
  auto place = [&](fe::graph::Tensor_attributes &t, Uid uid, int64_t heads,
                   int64_t rows, int64_t width) {
    const std::array<int64_t, 3> &at = strides[uid];
    t.set_dim({s.batch, heads, rows, width})
        .set_stride({at[0], at[1], at[2], 1});
  };
  auto input = [&](const char *name, Uid uid, int64_t heads, int64_t rows,
                   int64_t width) {
    fe::graph::Tensor_attributes t;
    t.set_name(name).set_uid(uid);
    place(t, uid, heads, rows, width);
    return g.tensor(t);
  };
  auto output = [&](const Tensor &t, Uid uid, int64_t heads, int64_t rows,
                    int64_t width) {
    t->set_output(true).set_uid(uid);
    place(*t, uid, heads, rows, width);
  };
  // The statistics: (batch, heads, queries, 1) f32, the call's lse.
  auto statistics = [&](fe::graph::Tensor_attributes &t) {
    t.set_uid(kStats)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim({s.batch, s.heads, s.queries, 1})
        .set_stride({s.heads * s.queries, s.queries, 1, 1});
  };
  Tensor q = input("q", kQ, s.heads, s.queries, s.dim);
  Tensor k = input("k", kK, s.kvHeads, s.keys, s.dim);
  Tensor v = input("v", kV, s.kvHeads, s.keys, s.valueDim);
  // The key bias: (batch, keys) f32, broadcast over heads and queries.
  Tensor bias;
  if (s.keyBias)
    bias = g.tensor(fe::graph::Tensor_attributes()
                        .set_name("key_bias")
                        .set_uid(kBias)
                        .set_data_type(fe::DataType_t::FLOAT)
                        .set_dim({s.batch, 1, 1, s.keys})
                        .set_stride({s.keys, s.keys, s.keys, 1}));
  bool bottomRight = s.causal && s.keys != s.queries;
  if (!backward) {
    auto options = fe::graph::SDPA_attributes()
                       .set_name("anvil_attention")
                       .set_generate_stats(true)
                       .set_attn_scale(s.scale);
    if (bottomRight)
      options.set_causal_mask_bottom_right(true);
    else if (s.causal)
      options.set_causal_mask(true);
    if (bias)
      options.set_bias(bias);
    auto [o, stats] = g.sdpa(q, k, v, options);
    output(o, kO, s.heads, s.queries, s.valueDim);
    stats->set_output(true);
    statistics(*stats);
  } else {
    Tensor o = input("o", kO, s.heads, s.queries, s.valueDim);
    Tensor dO = input("dO", kDO, s.heads, s.queries, s.valueDim);
    fe::graph::Tensor_attributes statsAttributes;
    statsAttributes.set_name("stats");
    statistics(statsAttributes);
    Tensor stats = g.tensor(statsAttributes);
    auto options = fe::graph::SDPA_backward_attributes()
                       .set_name("anvil_attention_grad")
                       .set_attn_scale(s.scale)
                       .set_deterministic_algorithm(true);
    if (bottomRight)
      options.set_causal_mask_bottom_right(true);
    else if (s.causal)
      options.set_causal_mask(true);
    if (bias)
      options.set_bias(bias);
    auto [dq, dk, dv] = g.sdpa_backward(q, k, v, o, dO, stats, options);
    output(dq, kDQ, s.heads, s.queries, s.dim);
    output(dk, kDK, s.kvHeads, s.keys, s.dim);
    output(dv, kDV, s.kvHeads, s.keys, s.valueDim);
  }
  return g.validate();
}

/// Gives the frontend the runtime's cuDNN, or says why there is none.
Status openCudnn() {
  Expected<void *> library = anvil::rt::cuda::cudnnLibrary();
  if (!library.hasValue())
    return library.status();
  fe::cudnn_dlhandle = *library;
  // The frontend opens a CUDA runtime of its own choosing (the first of
  // libcudart.so.12 and .13 it finds) unless told which: this process's.
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&cudaGetDevice), &info) && info.dli_fname)
    setenv("CUDNN_FRONTEND_CUDART_LIB_NAME", info.dli_fname, 0);
  return Status::ok();
}

/// A shape's built graph and the workspace its plan needs.
struct Plan {
  fe::graph::Graph graph;
  int64_t workspace = 0;
};

/// The plan of `s`'s forward (or backward) on tensors laid out by
/// `strides`, built on first use; null where cuDNN cannot take it (said
/// once on stderr).
Plan *planOf(const AttentionShape &s, bool backward, const Strides &strides,
             const char *caller) {
  constexpr size_t kShape = 11;
  std::array<int64_t, kShape + 3 * (kDV + 1)> key = {
      s.batch,    s.heads,  s.kvHeads, s.queries, s.keys,   s.dim,
      s.valueDim, s.causal, backward,  0,         s.keyBias};
  std::memcpy(&key[9], &s.scale, sizeof(s.scale));
  for (size_t uid = 0; uid < strides.size(); ++uid)
    std::copy(strides[uid].begin(), strides[uid].end(),
              key.begin() + kShape + 3 * uid);
  static std::mutex mutex;
  static std::map<decltype(key), std::unique_ptr<Plan>> plans;
  std::lock_guard<std::mutex> lock(mutex);
  auto [slot, inserted] = plans.try_emplace(key);
  if (!inserted)
    return slot->second.get();
  auto refuse = [&](const std::string &why) -> Plan * {
    std::fprintf(stderr,
                 "anvil: %s: cuDNN's fused attention does not take the "
                 "%s (%s): Anvil's kernels run it\n",
                 caller,
                 ((backward ? "gradient of " : "") + describe(s)).c_str(),
                 why.c_str());
    return nullptr;
  };
  if (Status st = openCudnn(); !st.isOk())
    return refuse(st.message());
  cudnnHandle_t handle = anvil::rt::cuda::cudnnHandle(caller);
  auto plan = std::make_unique<Plan>();
  fe::graph::Graph &g = plan->graph;
  // The frontend reports most failures as error_t, some (a cuDNN entry
  // point it cannot find) as exceptions.
  try {
    if (fe::error_t e = describeGraph(g, s, backward, strides); e.is_bad())
      return refuse(e.get_message());
    if (fe::error_t e = g.build_operation_graph(handle); e.is_bad())
      return refuse("build_operation_graph: " + e.get_message());
    if (fe::error_t e = g.create_execution_plans({fe::HeurMode_t::A});
        e.is_bad())
      return refuse("create_execution_plans: " + e.get_message());
    if (fe::error_t e = g.check_support(handle); e.is_bad())
      return refuse("check_support: " + e.get_message());
    if (fe::error_t e = g.build_plans(handle); e.is_bad())
      return refuse("build_plans: " + e.get_message());
    if (fe::error_t e = g.get_workspace_size(plan->workspace); e.is_bad())
      return refuse("get_workspace_size: " + e.get_message());
    if (plan->workspace > kMaxWorkspace)
      return refuse("its plan needs " + std::to_string(plan->workspace) +
                    " bytes of workspace, more than 1 GiB");
  } catch (const std::exception &e) {
    return refuse(e.what());
  }
  slot->second = std::move(plan);
  return slot->second.get();
}

std::atomic<int64_t> calls{0};

/// ANVIL_CUDA_ATTENTION, read once (an override from the tests wins).
std::atomic<int> library{-1};

/// One call, named in errors: "anvil_rt_cuda_attention_f32 on cuDNN (batch
/// 8, ...)", made only when an error needs it.
struct Call {
  const char *caller;
  const AttentionShape &shape;
  std::string what() const {
    return std::string(caller) + " on cuDNN (" + describe(shape) + ")";
  }
};

/// Aborts with `message` about `call` (in a graph capture, records it).
void report(const std::string &message, const Call &call) {
  std::string full = message + ", for " + call.what();
  if (!anvil::rt::cuda::recordCaptureFailure(full))
    failInStep(full);
}

cudaStream_t stepStream() {
  return static_cast<cudaStream_t>(anvil::rt::cuda::stepStream());
}

/// One call's scratch: bf16 copies and cuDNN's workspace carved from one
/// stream-ordered allocation (each piece 256-byte aligned).
class Scratch {
public:
  /// Reserves `bytes` and returns its offset.
  size_t reserve(int64_t bytes) {
    size_t at = size;
    size += (static_cast<size_t>(bytes) + 255) / 256 * 256;
    return at;
  }
  /// What allocate() did.
  enum Outcome { Allocated, OutOfMemory, Recorded };
  /// Allocates everything reserved on the step stream. Out of memory
  /// outside a graph capture, says so (the call can go to Anvil's kernels,
  /// which need less); in a capture a failure is recorded (the capture is
  /// dropped); any other failure aborts.
  Outcome allocate(const Call &call) {
    if (size == 0)
      return Allocated;
    cudaError_t e = cudaMallocAsync(&base, size, stepStream());
    if (e == cudaSuccess)
      return Allocated;
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    if (e == cudaErrorMemoryAllocation &&
        cudaStreamIsCapturing(stepStream(), &capturing) == cudaSuccess &&
        capturing == cudaStreamCaptureStatusNone) {
      (void)cudaGetLastError(); // not the next launch's error
      base = nullptr;
      std::fprintf(stderr,
                   "anvil: %s: no memory for cuDNN's %zu bytes of scratch "
                   "and workspace: Anvil's kernels run this call\n",
                   call.what().c_str(), size);
      return OutOfMemory;
    }
    report("cudaMallocAsync of " + std::to_string(size) +
               " bytes failed: " + cudaGetErrorString(e),
           call);
    return Recorded;
  }
  void *at(size_t offset) const { return static_cast<char *>(base) + offset; }
  /// Frees the allocation after the work queued so far.
  void release(const Call &call) {
    if (base)
      if (cudaError_t e = cudaFreeAsync(base, stepStream()); e != cudaSuccess)
        report(std::string("cudaFreeAsync failed: ") + cudaGetErrorString(e),
               call);
  }

private:
  void *base = nullptr;
  size_t size = 0;
};

/// Whether cuDNN may run `s` at all: chosen, something to compute (Anvil's
/// kernels handle the empty cases), and lse and the key bias's rows (if
/// any) on the 16-byte boundaries cuDNN's tensors assume (the other
/// tensors are the scratch's, or placeBf16 checks them).
bool wanted(const AttentionShape &s, const float *lse, const float *keyBias) {
  return anvil::rt::cuda::attentionLibrary() == AttentionLibrary::Cudnn &&
         s.batch > 0 && s.queries > 0 && s.keys > 0 &&
         reinterpret_cast<uintptr_t>(lse) % 16 == 0 &&
         (!keyBias || (reinterpret_cast<uintptr_t>(keyBias) % 16 == 0 &&
                       (s.batch == 1 || s.keys % 4 == 0)));
}

/// Queues `plan` on the step stream with the tensors of `pack`; a failure
/// aborts (or is recorded in a capture).
void execute(Plan &plan, std::unordered_map<int64_t, void *> &pack,
             void *workspace, const Call &call) {
  cudnnHandle_t handle = anvil::rt::cuda::cudnnHandle(call.caller);
  std::string failure;
  try {
    if (fe::error_t e = plan.graph.execute(handle, pack, workspace); e.is_bad())
      failure = e.get_message();
  } catch (const std::exception &e) {
    failure = e.what();
  }
  // A launch error cuDNN left is its, not the next copy's.
  if (cudaError_t e = cudaGetLastError(); failure.empty() && e != cudaSuccess)
    failure = cudaGetErrorString(e);
  if (!failure.empty())
    report("cuDNN's fused attention failed: " + failure, call);
  ++calls;
}

/// In "sync" mode, waits for the call and adds its time to the profile.
void finish(const Call &call, const char *pass,
            std::chrono::steady_clock::time_point start) {
  if (anvil::rt::cuda::launchMode() != anvil::rt::cuda::LaunchMode::Sync)
    return;
  if (cudaError_t e = cudaStreamSynchronize(stepStream()); e != cudaSuccess)
    failInStep("cudaStreamSynchronize failed: " +
               std::string(cudaGetErrorString(e)) + ", for " + call.what());
  if (anvil::rt::cuda::profiling())
    anvil::rt::cuda::profileAdd(
        std::string("cudnn attention ") + pass + " " + describe(call.shape),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
}

} // namespace

AttentionLibrary anvil::rt::cuda::attentionLibrary() {
  int chosen = library.load();
  if (chosen < 0) {
    const char *v = std::getenv("ANVIL_CUDA_ATTENTION");
    std::string value = v ? v : "";
    if (value != "" && value != "cudnn" && value != "anvil")
      failInStep("CUDA: ANVIL_CUDA_ATTENTION='" + value +
                 "': expected cudnn (the default) or anvil");
    chosen = static_cast<int>(value == "anvil" ? AttentionLibrary::Anvil
                                               : AttentionLibrary::Cudnn);
    int unset = -1;
    library.compare_exchange_strong(unset, chosen);
    chosen = library.load();
  }
  return static_cast<AttentionLibrary>(chosen);
}

void anvil::rt::cuda::setAttentionLibrary(AttentionLibrary chosen) {
  library.store(static_cast<int>(chosen));
}

int64_t anvil::rt::cuda::cudnnAttentionCalls() { return calls.load(); }

Status anvil::rt::cuda::cudnnAttentionSupport(const AttentionShape &shape,
                                              bool backward, int sm) {
  if (Status st = openCudnn(); !st.isOk())
    return st;
  fe::graph::Graph g;
  g.set_sm_version(sm);
  std::string failure;
  try {
    if (fe::error_t e =
            describeGraph(g, shape, backward, contiguousStrides(shape));
        e.is_bad())
      failure = e.get_message();
  } catch (const std::exception &e) {
    failure = e.what();
  }
  if (!failure.empty())
    return Status::error(anvil::rt::ErrorCode::InvalidArgument, failure);
  return Status::ok();
}

namespace {

/// One of a call's f32 tensors (its index in the layouts' order) that
/// cuDNN reads (`in`) or writes (`out`) through a contiguous bf16 copy in
/// the scratch.
struct Copied {
  int index;
  const float *in;
  float *out;
};

/// Runs `call`'s forward (or backward) on cuDNN over its bf16 tensors,
/// laid out by `strides`: each at `placed[uid]`, or for those in `copied`,
/// in the scratch (copied in from, or out to, where `layouts` place them).
/// False, with nothing queued, where cuDNN does not take the shape.
bool attend(const Call &call, bool backward, const Strides &strides,
            const std::array<void *, kDV + 1> &placed,
            std::initializer_list<Copied> copied, float *lse,
            const float *keyBias, const anvil_rt_attention_layout *layouts) {
  auto start = std::chrono::steady_clock::now();
  const AttentionShape &s = call.shape;
  Plan *plan = planOf(s, backward, strides, call.caller);
  if (!plan)
    return false;
  Scratch scratch;
  std::array<size_t, 8> at{};
  for (const Copied &c : copied) {
    auto [heads, rows, width] =
        anvil::rt::cuda::attentionTensorShape(s, c.index);
    at[c.index] = scratch.reserve(2 * elements(s, heads, rows, width));
  }
  size_t workspace = scratch.reserve(plan->workspace);
  switch (scratch.allocate(call)) {
  case Scratch::Allocated:
    break;
  case Scratch::OutOfMemory:
    return false; // nothing queued: Anvil's kernels run it
  case Scratch::Recorded:
    return true; // recorded in the capture, which is dropped
  }
  std::unordered_map<int64_t, void *> pack = {{kStats, lse}};
  if (keyBias)
    pack[kBias] = const_cast<float *>(keyBias);
  // The forward's tensors are the first four of the backward's.
  for (int i = 0; i < (backward ? 8 : 4); ++i)
    pack[kTensorUids[i]] = placed[kTensorUids[i]];
  for (const Copied &c : copied) {
    void *copy = pack[kTensorUids[c.index]] = scratch.at(at[c.index]);
    auto [heads, rows, width] =
        anvil::rt::cuda::attentionTensorShape(s, c.index);
    if (c.in)
      anvil::rt::cuda::copyAttentionTensorToBf16(c.in, layouts[c.index],
                                                 s.batch, heads, rows, width,
                                                 copy, call.caller);
  }
  execute(*plan, pack, plan->workspace ? scratch.at(workspace) : nullptr, call);
  for (const Copied &c : copied) {
    auto [heads, rows, width] =
        anvil::rt::cuda::attentionTensorShape(s, c.index);
    if (c.out)
      anvil::rt::cuda::copyAttentionTensorFromBf16(
          scratch.at(at[c.index]), c.out, layouts[c.index], s.batch, heads,
          rows, width, call.caller);
  }
  scratch.release(call);
  finish(call, backward ? "backward" : "forward", start);
  return true;
}

/// The strides of a bf16 call's tensors as its layouts give them (q, k, v,
/// out, dOut, dq, dk, dv: layouts[0..count)) into `strides` (the
/// contiguous ones on entry) and the tensors' starts, by uid: false where
/// a start or stride is not 16-byte aligned, as cuDNN's tensors must be.
bool placeBf16(const AttentionShape &s, const void *const *bases,
               const anvil_rt_attention_layout *l, int count, Strides &strides,
               std::array<void *, kDV + 1> &placed) {
  for (int i = 0; i < count; ++i) {
    // A dimension of extent 1 is never stepped along: it takes the
    // contiguous layout's stride (`strides` on entry), aligned, and one
    // plan serves every layout that differs there only.
    Uid uid = kTensorUids[i];
    auto [heads, rows, width] = anvil::rt::cuda::attentionTensorShape(s, i);
    anvil_rt_attention_layout t = l[i];
    t.batch = s.batch > 1 ? t.batch : strides[uid][0];
    t.head = heads > 1 ? t.head : strides[uid][1];
    t.row = rows > 1 ? t.row : strides[uid][2];
    char *start =
        static_cast<char *>(const_cast<void *>(bases[i])) + 2 * t.offset;
    // (A negative offset or stride is left to Anvil's path, which fails
    // on it naming the tensor.)
    if (t.offset < 0 || t.batch < 0 || t.head < 0 || t.row < 0 ||
        reinterpret_cast<uintptr_t>(start) % 16 || t.batch % 8 || t.head % 8 ||
        t.row % 8)
      return false;
    strides[kTensorUids[i]] = {t.batch, t.head, t.row};
    placed[kTensorUids[i]] = start;
  }
  return true;
}

} // namespace

bool anvil::rt::cuda::cudnnAttentionForward(
    const float *q, const float *k, const float *v, const float *keyBias,
    float *out, float *lse, const AttentionShape &s,
    const anvil_rt_attention_layout *l) {
  if (!wanted(s, lse, keyBias))
    return false;
  return attend(
      {"anvil_rt_cuda_attention_f32", s}, /*backward=*/false,
      contiguousStrides(s), {},
      {{0, q, nullptr}, {1, k, nullptr}, {2, v, nullptr}, {3, nullptr, out}},
      lse, keyBias, l);
}

bool anvil::rt::cuda::cudnnAttentionBackward(
    const float *q, const float *k, const float *v, const float *keyBias,
    const float *out, const float *lse, const float *dOut, float *dq, float *dk,
    float *dv, const AttentionShape &s, const anvil_rt_attention_layout *l) {
  if (!wanted(s, lse, keyBias))
    return false;
  return attend({"anvil_rt_cuda_attention_grad_f32", s}, /*backward=*/true,
                contiguousStrides(s), {},
                {{0, q, nullptr},
                 {1, k, nullptr},
                 {2, v, nullptr},
                 {3, out, nullptr},
                 {4, dOut, nullptr},
                 {5, nullptr, dq},
                 {6, nullptr, dk},
                 {7, nullptr, dv}},
                const_cast<float *>(lse), keyBias, l);
}

bool anvil::rt::cuda::cudnnAttentionForwardBf16(
    const void *q, const void *k, const void *v, const float *keyBias,
    void *out, float *lse, const AttentionShape &s,
    const anvil_rt_attention_layout *layouts) {
  Strides strides = contiguousStrides(s);
  std::array<void *, kDV + 1> placed{};
  const void *bases[4] = {q, k, v, out};
  if (!wanted(s, lse, keyBias) ||
      !placeBf16(s, bases, layouts, 4, strides, placed))
    return false;
  return attend({"anvil_rt_cuda_attention_bf16", s}, /*backward=*/false,
                strides, placed, {}, lse, keyBias, layouts);
}

bool anvil::rt::cuda::cudnnAttentionBackwardBf16(
    const void *q, const void *k, const void *v, const float *keyBias,
    const void *out, const float *lse, const void *dOut, void *dq, void *dk,
    void *dv, const AttentionShape &s,
    const anvil_rt_attention_layout *layouts) {
  Strides strides = contiguousStrides(s);
  std::array<void *, kDV + 1> placed{};
  const void *bases[8] = {q, k, v, out, dOut, dq, dk, dv};
  if (!wanted(s, lse, keyBias) ||
      !placeBf16(s, bases, layouts, 8, strides, placed))
    return false;
  return attend({"anvil_rt_cuda_attention_grad_bf16", s}, /*backward=*/true,
                strides, placed, {}, const_cast<float *>(lse), keyBias,
                layouts);
}
