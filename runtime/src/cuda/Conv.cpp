//===- Conv.cpp - convolutions and their gradients through cuDNN ----------===//
//
// anvil_rt_cuda_conv: anvil_rt_conv's contract (RuntimeABI.h) on device
// pointers, one cuDNN call each: cudnnConvolutionForward, ...BackwardData
// (x's gradient: anvil.conv_transpose) and ...BackwardFilter (w's
// gradient). cuDNN is opened at run time (dlopen of libcudnn.so.9, like
// NCCL), so executables without convolutions never need it and one that
// has them says so when it is missing.
//
// A problem maps onto cuDNN's legacy N-d descriptors as it is: NCHW (or
// NCDHW) contiguous tensors, a KCRS filter of C / groups channels and the
// group count, cross-correlation (anvil.conv does not flip the filter), one
// padding per dimension (anvil-library-convs passes only convolutions
// whose padding is the same on both sides), f32 compute. A 1-D problem
// gets a unit height (cuDNN's descriptors start at 4-D). f32 data runs
// with CUDNN_FMA_MATH (no TF32, as Anvil's f32 GEMMs); bf16 data on the
// tensor cores, f32 accumulation, the result rounded once.
//
// Each problem's descriptors and algorithm are made on its first call (a
// step's first run is eager; a CUDA graph captures later ones): the
// algorithm is the first of cuDNN's heuristic ranking (the _v7 queries; no
// timing runs) that is deterministic, sums exact products (no FFT or
// Winograd transforms), fits the f32 rule above and needs at most
// kMaxWorkspace bytes, so a step gives the same sums every run, like
// Anvil's attention kernels; its workspace is asked for with the math type
// it runs with. The workspace comes from the stream-ordered
// allocator on the step stream (capture-safe); the call is queued there
// and waited for only in "sync" mode, where ANVIL_PROFILE=1 also times it.
// Errors abort, naming the call, cuDNN's message and the problem (or are
// recorded during a graph capture).
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Cuda.h"
#include "anvil/runtime/RuntimeABI.h"

#include "Cudnn.h"
#include "DynamicLibrary.h"
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

using namespace anvil::rt;

namespace {

/// The most workspace an algorithm may take (cuDNN ranks faster ones that
/// need more first; past this the next one is taken).
constexpr size_t kMaxWorkspace = size_t(1) << 30;

using anvil::rt::cuda::failInStep;

/// The cuDNN entry points Anvil uses.
struct Cudnn {
  void *library = nullptr; // dlopen's handle
  decltype(&::cudnnGetVersion) getVersion = nullptr;
  decltype(&::cudnnGetErrorString) getErrorString = nullptr;
  decltype(&::cudnnCreate) create = nullptr;
  decltype(&::cudnnSetStream) setStream = nullptr;
  decltype(&::cudnnCreateTensorDescriptor) createTensor = nullptr;
  decltype(&::cudnnSetTensorNdDescriptor) setTensor = nullptr;
  decltype(&::cudnnCreateFilterDescriptor) createFilter = nullptr;
  decltype(&::cudnnSetFilterNdDescriptor) setFilter = nullptr;
  decltype(&::cudnnCreateConvolutionDescriptor) createConv = nullptr;
  decltype(&::cudnnSetConvolutionNdDescriptor) setConv = nullptr;
  decltype(&::cudnnSetConvolutionGroupCount) setGroupCount = nullptr;
  decltype(&::cudnnSetConvolutionMathType) setMathType = nullptr;
  decltype(&::cudnnGetConvolutionNdForwardOutputDim) forwardOutputDim = nullptr;
  decltype(&::cudnnGetConvolutionForwardAlgorithm_v7) forwardAlgorithms =
      nullptr;
  decltype(&::cudnnGetConvolutionBackwardDataAlgorithm_v7) dataAlgorithms =
      nullptr;
  decltype(&::cudnnGetConvolutionBackwardFilterAlgorithm_v7) filterAlgorithms =
      nullptr;
  decltype(&::cudnnGetConvolutionForwardWorkspaceSize) forwardWorkspace =
      nullptr;
  decltype(&::cudnnGetConvolutionBackwardDataWorkspaceSize) dataWorkspace =
      nullptr;
  decltype(&::cudnnGetConvolutionBackwardFilterWorkspaceSize) filterWorkspace =
      nullptr;
  decltype(&::cudnnConvolutionForward) forward = nullptr;
  decltype(&::cudnnConvolutionBackwardData) backwardData = nullptr;
  decltype(&::cudnnConvolutionBackwardFilter) backwardFilter = nullptr;
};

/// Opens cuDNN once; the failure, if any, is remembered.
Expected<const Cudnn *> cudnn() {
  static std::once_flag once;
  static Cudnn c;
  static Status status;
  std::call_once(once, [] {
    auto unavailable = [](const std::string &why) {
      return Status::error(ErrorCode::Unavailable, "cuDNN: " + why);
    };
    // The loader's path first, then the CUDA toolkit's.
    cuda::DynamicLibrary library({"libcudnn.so.9",
                                  "/usr/local/cuda/lib64/libcudnn.so.9",
                                  "/usr/local/cuda/lib/libcudnn.so.9"});
    if (!library.isOpen()) {
      status = unavailable("libcudnn.so.9 not found (" + library.tried() + ")");
      return;
    }
    c.library = library.native();
    auto get = [&](auto &fn, const char *name) { library.get(fn, name); };
    get(c.getVersion, "cudnnGetVersion");
    get(c.getErrorString, "cudnnGetErrorString");
    get(c.create, "cudnnCreate");
    get(c.setStream, "cudnnSetStream");
    get(c.createTensor, "cudnnCreateTensorDescriptor");
    get(c.setTensor, "cudnnSetTensorNdDescriptor");
    get(c.createFilter, "cudnnCreateFilterDescriptor");
    get(c.setFilter, "cudnnSetFilterNdDescriptor");
    get(c.createConv, "cudnnCreateConvolutionDescriptor");
    get(c.setConv, "cudnnSetConvolutionNdDescriptor");
    get(c.setGroupCount, "cudnnSetConvolutionGroupCount");
    get(c.setMathType, "cudnnSetConvolutionMathType");
    get(c.forwardOutputDim, "cudnnGetConvolutionNdForwardOutputDim");
    get(c.forwardAlgorithms, "cudnnGetConvolutionForwardAlgorithm_v7");
    get(c.dataAlgorithms, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    get(c.filterAlgorithms, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    get(c.forwardWorkspace, "cudnnGetConvolutionForwardWorkspaceSize");
    get(c.dataWorkspace, "cudnnGetConvolutionBackwardDataWorkspaceSize");
    get(c.filterWorkspace, "cudnnGetConvolutionBackwardFilterWorkspaceSize");
    get(c.forward, "cudnnConvolutionForward");
    get(c.backwardData, "cudnnConvolutionBackwardData");
    get(c.backwardFilter, "cudnnConvolutionBackwardFilter");
    if (!library.missing().empty()) {
      status = unavailable("libcudnn.so.9 lacks " + library.missing());
      return;
    }
    // The structures of the _v7 queries are cuDNN 9's (CUDNN_VERSION is
    // major * 10000 + minor * 100 + patch since 9).
    size_t v = c.getVersion();
    if (v < 90000 || v >= 100000)
      status = unavailable("version " + std::to_string(v) +
                           " is not a cuDNN 9 (this runtime was built "
                           "against " +
                           std::to_string(CUDNN_VERSION) + ")");
  });
  if (!status.isOk())
    return status;
  return &c;
}

/// A problem of anvil_rt_conv, for messages: "forward of bf16 N 8, C 64,
/// K 64, groups 1, x 56x56, y 56x56, kernel 3x3, stride 1x1, pad 1x1,
/// dilation 1x1".
std::string describe(int32_t kind, bool bf16, const int64_t *p) {
  static const char *kinds[] = {"forward", "data gradient", "filter gradient"};
  std::string s = std::string(kind >= 0 && kind < 3 ? kinds[kind] : "?") +
                  " of " + (bf16 ? "bf16" : "f32") + " N " +
                  std::to_string(p[1]) + ", C " + std::to_string(p[2]) +
                  ", K " + std::to_string(p[3]) + ", groups " +
                  std::to_string(p[4]);
  static const char *fields[] = {"x",      "y",   "kernel",
                                 "stride", "pad", "dilation"};
  for (int f = 0; f < 6; ++f) {
    s += std::string(", ") + fields[f] + " ";
    for (int64_t i = 0; i < p[0]; ++i) {
      if (i)
        s += 'x';
      s += std::to_string(p[5 + 6 * i + f]);
    }
  }
  return s;
}

/// A problem's cuDNN descriptors (kept for the process: a step calls the
/// same problems every time) and its algorithm.
struct Plan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int algorithm = -1;
  size_t workspace = 0;
};

/// Fills `plan`'s descriptors for problem `p`; `check` reports a failed
/// call (and returns false).
template <typename Check>
bool describeProblem(const Cudnn &c, const int64_t *p, bool bf16, Plan &plan,
                     Check check) {
  int64_t s = p[0];
  int dims = static_cast<int>(s < 2 ? 2 : s); // cuDNN's spatial dimensions
  std::vector<int> x = {static_cast<int>(p[1]), static_cast<int>(p[2])},
                   y = {static_cast<int>(p[1]), static_cast<int>(p[3])},
                   w = {static_cast<int>(p[3]), static_cast<int>(p[2] / p[4])};
  std::vector<int> pad, stride, dilation;
  if (s == 1) { // a unit height in front
    x.push_back(1), y.push_back(1), w.push_back(1);
    pad.push_back(0), stride.push_back(1), dilation.push_back(1);
  }
  for (int64_t i = 0; i < s; ++i) {
    const int64_t *f = p + 5 + 6 * i;
    x.push_back(static_cast<int>(f[0]));
    y.push_back(static_cast<int>(f[1]));
    w.push_back(static_cast<int>(f[2]));
    stride.push_back(static_cast<int>(f[3]));
    pad.push_back(static_cast<int>(f[4]));
    dilation.push_back(static_cast<int>(f[5]));
  }
  auto strides = [](const std::vector<int> &shape) {
    std::vector<int> st(shape.size(), 1);
    for (size_t i = shape.size() - 1; i-- > 0;)
      st[i] = st[i + 1] * shape[i + 1];
    return st;
  };
  cudnnDataType_t type = bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
  int rank = dims + 2;
  std::vector<int> xs = strides(x), ys = strides(y);
  return check(c.createTensor(&plan.x), "cudnnCreateTensorDescriptor") &&
         check(c.setTensor(plan.x, type, rank, x.data(), xs.data()),
               "cudnnSetTensorNdDescriptor(x)") &&
         check(c.createTensor(&plan.y), "cudnnCreateTensorDescriptor") &&
         check(c.setTensor(plan.y, type, rank, y.data(), ys.data()),
               "cudnnSetTensorNdDescriptor(y)") &&
         check(c.createFilter(&plan.w), "cudnnCreateFilterDescriptor") &&
         check(c.setFilter(plan.w, type, CUDNN_TENSOR_NCHW, rank, w.data()),
               "cudnnSetFilterNdDescriptor(w)") &&
         check(c.createConv(&plan.conv), "cudnnCreateConvolutionDescriptor") &&
         check(c.setConv(plan.conv, dims, pad.data(), stride.data(),
                         dilation.data(), CUDNN_CROSS_CORRELATION,
                         CUDNN_DATA_FLOAT),
               "cudnnSetConvolutionNdDescriptor") &&
         check(c.setGroupCount(plan.conv, static_cast<int>(p[4])),
               "cudnnSetConvolutionGroupCount") &&
         check(c.setMathType(plan.conv,
                             bf16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
               "cudnnSetConvolutionMathType");
}

/// Whether an algorithm sums exact products (implicit GEMMs and direct
/// sums), as anvil_rt_conv's contract says: not FFT or Winograd, whose
/// transforms round differently.
bool exactProducts(cudnnConvolutionFwdAlgo_t a) {
  return a != CUDNN_CONVOLUTION_FWD_ALGO_FFT &&
         a != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD &&
         a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool exactProducts(cudnnConvolutionBwdDataAlgo_t a) {
  return a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT &&
         a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD &&
         a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool exactProducts(cudnnConvolutionBwdFilterAlgo_t a) {
  return a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT &&
         a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

/// The first of cuDNN's ranked algorithms that Anvil takes (see the file
/// comment), with its math type, or false when none is. f32 keeps the
/// descriptor's CUDNN_FMA_MATH (no TF32, whatever math type the ranking
/// lists with the algorithm); bf16 takes the ranked entry's.
template <typename Perf>
bool choose(const Perf *perf, int count, bool bf16, Plan &plan,
            cudnnMathType_t &math) {
  for (int i = 0; i < count; ++i) {
    const Perf &r = perf[i];
    if (r.status != CUDNN_STATUS_SUCCESS ||
        r.determinism != CUDNN_DETERMINISTIC || r.memory > kMaxWorkspace ||
        !exactProducts(r.algo))
      continue;
    if (!bf16 && r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      continue; // f32 data converted for the tensor cores
    plan.algorithm = static_cast<int>(r.algo);
    math = bf16 ? r.mathType : CUDNN_FMA_MATH;
    return true;
  }
  return false;
}

} // namespace

Expected<void *> anvil::rt::cuda::cudnnLibrary() {
  Expected<const Cudnn *> c = cudnn();
  if (!c.hasValue())
    return c.status();
  return (*c)->library;
}

cudnnHandle_t anvil::rt::cuda::cudnnHandle(const char *caller) {
  static std::once_flag once;
  static cudnnHandle_t h = nullptr;
  std::call_once(once, [&] {
    Expected<const Cudnn *> loaded = cudnn();
    if (!loaded.hasValue())
      failInStep(std::string(caller) + ": " + loaded.status().message());
    const Cudnn &c = **loaded;
    // The process's device current on this thread first (cuDNN's handle
    // and the workspace's pool belong to it).
    if (Status st = anvil::rt::cuda::initialize(); !st.isOk())
      failInStep(std::string(caller) + ": " + st.message());
    if (cudnnStatus_t s = c.create(&h); s != CUDNN_STATUS_SUCCESS)
      failInStep(std::string(caller) +
                 ": cudnnCreate failed: " + c.getErrorString(s));
    if (cudnnStatus_t s = c.setStream(
            h, static_cast<cudaStream_t>(anvil::rt::cuda::stepStream()));
        s != CUDNN_STATUS_SUCCESS)
      failInStep(std::string(caller) +
                 ": cudnnSetStream failed: " + c.getErrorString(s));
  });
  return h;
}

Expected<std::vector<int64_t>>
anvil::rt::cuda::cudnnForwardDims(const int64_t *problem, bool bf16) {
  Expected<const Cudnn *> c = cudnn();
  if (!c.hasValue())
    return c.status();
  Plan plan;
  std::string failure;
  auto check = [&](cudnnStatus_t s, const char *call) {
    if (s != CUDNN_STATUS_SUCCESS)
      failure = std::string(call) + " failed: " + (*c)->getErrorString(s);
    return s == CUDNN_STATUS_SUCCESS;
  };
  int rank = static_cast<int>(problem[0] < 2 ? 4 : problem[0] + 2);
  std::vector<int> dims(static_cast<size_t>(rank));
  if (describeProblem(**c, problem, bf16, plan, check))
    check((*c)->forwardOutputDim(plan.conv, plan.x, plan.w, rank, dims.data()),
          "cudnnGetConvolutionNdForwardOutputDim");
  if (!failure.empty())
    return Status::error(ErrorCode::InvalidArgument, failure);
  // (The descriptors of a query are not kept; a handful of bytes.)
  return std::vector<int64_t>(dims.begin(), dims.end());
}

extern "C" void anvil_rt_cuda_conv(int32_t kind, int32_t bf16,
                                   const int64_t *problem, const void *a,
                                   const void *b, void *out) {
  Expected<const Cudnn *> loaded = cudnn();
  if (!loaded.hasValue())
    failInStep(
        "anvil_rt_cuda_conv: " + loaded.status().message() +
        " (compile with --library-convs=off to run convolutions as Anvil's "
        "kernels)");
  const Cudnn &c = **loaded;
  bool isBF16 = bf16 != 0;
  auto what = [&] { return describe(kind, isBF16, problem); };
  // A failure in a graph capture is recorded, and sets `failed` (the call
  // then returns without queuing anything); otherwise it aborts.
  bool failed = false;
  auto check = [&](cudnnStatus_t s, const char *call) {
    if (s == CUDNN_STATUS_SUCCESS || failed)
      return !failed;
    std::string message = "anvil_rt_cuda_conv: " + std::string(call) +
                          " failed: " + c.getErrorString(s) + ", for the " +
                          what();
    if (!anvil::rt::cuda::recordCaptureFailure(message))
      failInStep(message);
    failed = true;
    return false;
  };
  if (kind < ANVIL_RT_CONV_FORWARD || kind > ANVIL_RT_CONV_FILTER_GRAD ||
      problem[0] < 1 || problem[0] > 3)
    failInStep("anvil_rt_cuda_conv: not a problem of anvil_rt_conv: kind " +
               std::to_string(kind) + ", " + std::to_string(problem[0]) +
               " spatial dimensions");
  cudnnHandle_t h = anvil::rt::cuda::cudnnHandle("anvil_rt_cuda_conv");

  // The plan, once per problem (the key: kind, bf16 and the problem, the
  // unused spatial entries zero; no allocation per call).
  std::array<int64_t, 2 + 5 + 6 * 3> key{};
  key[0] = kind;
  key[1] = bf16;
  std::copy(problem, problem + 5 + 6 * problem[0], key.begin() + 2);
  static std::mutex mutex;
  static std::map<std::array<int64_t, 2 + 5 + 6 * 3>, std::unique_ptr<Plan>>
      plans;
  Plan *plan = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    std::unique_ptr<Plan> &slot = plans[key];
    if (!slot) {
      auto made = std::make_unique<Plan>();
      if (!describeProblem(c, problem, isBF16, *made, check))
        return;
      bool found = false;
      int count = 0;
      cudnnMathType_t math = CUDNN_FMA_MATH;
      if (kind == ANVIL_RT_CONV_FORWARD) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        if (!check(c.forwardAlgorithms(h, made->x, made->w, made->conv, made->y,
                                       CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count,
                                       perf),
                   "cudnnGetConvolutionForwardAlgorithm_v7"))
          return;
        found = choose(perf, count, isBF16, *made, math);
      } else if (kind == ANVIL_RT_CONV_DATA_GRAD) {
        cudnnConvolutionBwdDataAlgoPerf_t
            perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        if (!check(c.dataAlgorithms(h, made->w, made->y, made->conv, made->x,
                                    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                    &count, perf),
                   "cudnnGetConvolutionBackwardDataAlgorithm_v7"))
          return;
        found = choose(perf, count, isBF16, *made, math);
      } else {
        cudnnConvolutionBwdFilterAlgoPerf_t
            perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        if (!check(c.filterAlgorithms(h, made->x, made->y, made->conv, made->w,
                                      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                                      &count, perf),
                   "cudnnGetConvolutionBackwardFilterAlgorithm_v7"))
          return;
        found = choose(perf, count, isBF16, *made, math);
      }
      if (!found)
        failInStep(
            "anvil_rt_cuda_conv: cuDNN has no deterministic algorithm of "
            "exact products with at most 1 GiB of workspace" +
            std::string(isBF16 ? "" : " and without TF32") + " for the " +
            what() + " (compile with --library-convs=off)");
      // The workspace of the algorithm with the math type it runs with.
      if (!check(c.setMathType(made->conv, math),
                 "cudnnSetConvolutionMathType"))
        return;
      bool sized = false;
      if (kind == ANVIL_RT_CONV_FORWARD)
        sized =
            check(c.forwardWorkspace(
                      h, made->x, made->w, made->conv, made->y,
                      static_cast<cudnnConvolutionFwdAlgo_t>(made->algorithm),
                      &made->workspace),
                  "cudnnGetConvolutionForwardWorkspaceSize");
      else if (kind == ANVIL_RT_CONV_DATA_GRAD)
        sized =
            check(c.dataWorkspace(h, made->w, made->y, made->conv, made->x,
                                  static_cast<cudnnConvolutionBwdDataAlgo_t>(
                                      made->algorithm),
                                  &made->workspace),
                  "cudnnGetConvolutionBackwardDataWorkspaceSize");
      else
        sized = check(
            c.filterWorkspace(
                h, made->x, made->y, made->conv, made->w,
                static_cast<cudnnConvolutionBwdFilterAlgo_t>(made->algorithm),
                &made->workspace),
            "cudnnGetConvolutionBackwardFilterWorkspaceSize");
      if (!sized)
        return;
      slot = std::move(made);
    }
    plan = slot.get();
  }

  auto stream = static_cast<cudaStream_t>(anvil::rt::cuda::stepStream());
  void *workspace = nullptr;
  if (plan->workspace) {
    if (cudaError_t e = cudaMallocAsync(&workspace, plan->workspace, stream);
        e != cudaSuccess) {
      std::string message =
          "anvil_rt_cuda_conv: cudaMallocAsync of " +
          std::to_string(plan->workspace) +
          " bytes of workspace failed: " + cudaGetErrorString(e) +
          ", for the " + what();
      if (!anvil::rt::cuda::recordCaptureFailure(message))
        failInStep(message);
      return;
    }
  }
  const float one = 1.0f, zero = 0.0f;
  auto start = std::chrono::steady_clock::now();
  switch (kind) {
  case ANVIL_RT_CONV_FORWARD:
    check(c.forward(h, &one, plan->x, a, plan->w, b, plan->conv,
                    static_cast<cudnnConvolutionFwdAlgo_t>(plan->algorithm),
                    workspace, plan->workspace, &zero, plan->y, out),
          "cudnnConvolutionForward");
    break;
  case ANVIL_RT_CONV_DATA_GRAD:
    check(c.backwardData(
              h, &one, plan->w, b, plan->y, a, plan->conv,
              static_cast<cudnnConvolutionBwdDataAlgo_t>(plan->algorithm),
              workspace, plan->workspace, &zero, plan->x, out),
          "cudnnConvolutionBackwardData");
    break;
  default:
    check(c.backwardFilter(
              h, &one, plan->x, a, plan->y, b, plan->conv,
              static_cast<cudnnConvolutionBwdFilterAlgo_t>(plan->algorithm),
              workspace, plan->workspace, &zero, plan->w, out),
          "cudnnConvolutionBackwardFilter");
    break;
  }
  if (workspace)
    if (cudaError_t e = cudaFreeAsync(workspace, stream); e != cudaSuccess) {
      // (In a capture the call above may have ended it: recorded then.)
      std::string message =
          std::string("anvil_rt_cuda_conv: cudaFreeAsync failed: ") +
          cudaGetErrorString(e) + ", for the " + what();
      if (!anvil::rt::cuda::recordCaptureFailure(message))
        failInStep(message);
      failed = true;
    }
  if (failed ||
      anvil::rt::cuda::launchMode() != anvil::rt::cuda::LaunchMode::Sync)
    return; // queued on the step stream; the step's end waits for it
  std::string call = "cuDNN convolution " + what();
  if (Status st = anvil::rt::cuda::synchronizeStepStream(call.c_str());
      !st.isOk())
    failInStep(st.message());
  if (anvil::rt::cuda::profiling())
    anvil::rt::cuda::profileAdd(
        call,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
}
