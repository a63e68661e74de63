//===- Device.cpp - the CUDA driver at run time, MLIR's launches ---------===//
//
// The driver library is opened with dlopen and its entry points fetched
// through cuGetProcAddress (the versions of the CUDA 12.0 ABI, which every
// driver since has), so nothing here needs libcuda.so at link time. A
// process uses one device, its local rank's (0 in a world of one), through
// its primary context, and one stream for the work of its steps: kernels,
// library calls and copies run in the order the host code issues them.
//
// A training step whose host code only queues work on that stream (the
// compiler says so: anvil_rt_run_step's `capturable`) becomes a CUDA graph:
// the second call with the same buffers runs under stream capture, and
// later calls with those buffers launch the instantiated graph instead of
// the host code (one graph launch instead of a thousand kernel launches).
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Cuda.h"
#include "anvil/runtime/Dist.h"
#include "anvil/runtime/RuntimeABI.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cuda.h>
#include <dlfcn.h>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

using namespace anvil::rt;

namespace {

/// The driver entry points Anvil uses.
struct Driver {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDriverGetVersion) driverGetVersion = nullptr;
  decltype(&::cuDeviceGetCount) deviceGetCount = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDeviceGetName) deviceGetName = nullptr;
  decltype(&::cuDeviceTotalMem) deviceTotalMem = nullptr;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primaryCtxRetain = nullptr;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&::cuCtxSynchronize) ctxSynchronize = nullptr;
  decltype(&::cuModuleLoadData) moduleLoadData = nullptr;
  decltype(&::cuModuleUnload) moduleUnload = nullptr;
  decltype(&::cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;
  decltype(&::cuStreamCreate) streamCreate = nullptr;
  decltype(&::cuStreamSynchronize) streamSynchronize = nullptr;
  decltype(&::cuStreamDestroy) streamDestroy = nullptr;
  decltype(&::cuMemAllocManaged) memAllocManaged = nullptr;
  decltype(&::cuMemAlloc) memAlloc = nullptr;
  decltype(&::cuMemsetD8) memsetD8 = nullptr;
  decltype(&::cuMemcpy) memcpy = nullptr;
  decltype(&::cuMemcpyAsync) memcpyAsync = nullptr;
  decltype(&::cuStreamBeginCapture) streamBeginCapture = nullptr;
  decltype(&::cuStreamEndCapture) streamEndCapture = nullptr;
  decltype(&::cuGraphInstantiateWithFlags) graphInstantiate = nullptr;
  decltype(&::cuGraphLaunch) graphLaunch = nullptr;
  decltype(&::cuGraphGetNodes) graphGetNodes = nullptr;
  decltype(&::cuGraphExecDestroy) graphExecDestroy = nullptr;
  decltype(&::cuGraphDestroy) graphDestroy = nullptr;
  decltype(&::cuThreadExchangeStreamCaptureMode) exchangeCaptureMode = nullptr;
  /// Optional: placement advice for managed memory, the CUmemLocation
  /// forms of CUDA 12.2 drivers and newer (declared here, not from the
  /// headers, whose older versions declare the CUdevice forms); null where
  /// the driver lacks them or the device has no concurrent managed access.
  CUresult (*memAdvise)(CUdeviceptr, size_t, CUmem_advise,
                        CUmemLocation) = nullptr;
  CUresult (*memPrefetchAsync)(CUdeviceptr, size_t, CUmemLocation, unsigned,
                               CUstream) = nullptr;
  /// Optional: the device's free and total memory (the trainer's report),
  /// and events (a step's time on the device).
  decltype(&::cuMemGetInfo) memGetInfo = nullptr;
  decltype(&::cuEventCreate) eventCreate = nullptr;
  decltype(&::cuEventRecord) eventRecord = nullptr;
  decltype(&::cuEventSynchronize) eventSynchronize = nullptr;
  decltype(&::cuEventElapsedTime) eventElapsedTime = nullptr;
  decltype(&::cuEventDestroy) eventDestroy = nullptr;
  decltype(&::cuMemFree) memFree = nullptr;
  decltype(&::cuPointerGetAttribute) pointerGetAttribute = nullptr;
  decltype(&::cuGetErrorName) getErrorName = nullptr;
  decltype(&::cuGetErrorString) getErrorString = nullptr;
};

/// What a step's graph is for: the step function and its argument, result
/// and workspace pointers.
struct StepKey {
  anvil_rt_step_fn step = nullptr;
  std::vector<void *> pointers;
  bool operator<(const StepKey &o) const {
    return std::tie(step, pointers) < std::tie(o.step, o.pointers);
  }
};

/// A step's graph, for one StepKey.
struct StepGraph {
  int64_t calls = 0;          ///< Calls of the step with these pointers.
  CUgraphExec exec = nullptr; ///< Instantiated: replayed from now on.
};

struct State {
  std::once_flag once;
  Status status;
  Driver driver;
  CUdevice device = 0;
  int ordinal = 0;
  CUcontext context = nullptr;
  cuda::LaunchMode mode = cuda::LaunchMode::Graph;
  /// The step stream (stepStream()).
  CUstream stream = nullptr;
  /// Whether the step stream is being captured (by `capturingThread`), the
  /// first call that failed in the capture (recordCaptureFailure), and the
  /// frees the capture put off.
  /// (Read by any thread that calls into the runtime: atomic.)
  std::atomic<bool> capturing{false};
  std::atomic<std::thread::id> capturingThread;
  std::string captureFailure;
  std::vector<void *> deferredFrees;
  /// The steps' graphs (the trainer's state alternates between two
  /// generations: two graphs).
  std::map<StepKey, StepGraph> graphs;
  /// Step functions whose capture failed: they run without graphs.
  std::set<anvil_rt_step_fn> refused;
  std::mutex namesLock;
  std::unordered_map<void *, std::string> kernelNames;
  /// The managed allocations of anvil_rt_buffer_alloc (address, bytes),
  /// moved to the device before the first step.
  std::mutex buffersLock;
  std::map<CUdeviceptr, size_t> buffers;
  bool prefetched = false;
  /// Events on the step stream just before a step's work is queued and at
  /// its end (made once, when `eventsTried` first; null where the driver
  /// cannot), and the device's time between them for the last step (-1:
  /// none).
  CUevent stepStart = nullptr, stepEnd = nullptr;
  bool eventsTried = false, stepStarted = false;
  double stepSeconds = -1;
};

State &state() {
  static State s;
  return s;
}

thread_local int64_t currentStep = -1;
/// The last kernel of generated code launched in the current step (a
/// CUfunction; null before the first): a library call's report says what
/// it came after.
thread_local void *lastKernel = nullptr;

/// Whether the calling thread is capturing the step stream.
bool capturingHere() {
  State &s = state();
  return s.capturing && s.capturingThread == std::this_thread::get_id();
}

Status unavailable(const std::string &why) {
  return Status::error(ErrorCode::Unavailable, "CUDA: " + why);
}

Status loadDriver(State &s) {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return unavailable(std::string("no CUDA driver (libcuda.so.1): ") +
                       dlerror());
  using GetProcAddress = CUresult (*)(const char *, void **, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult *);
  auto getProcAddress =
      reinterpret_cast<GetProcAddress>(dlsym(library, "cuGetProcAddress_v2"));
  if (!getProcAddress)
    return unavailable("the driver is older than CUDA 12 (no "
                       "cuGetProcAddress_v2); Anvil needs a CUDA 12 driver or "
                       "newer");
  Driver &d = s.driver;
  std::string missing;
  auto get = [&](auto &fn, const char *name) {
    void *p = nullptr;
    CUdriverProcAddressQueryResult found;
    if (getProcAddress(name, &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found) !=
            CUDA_SUCCESS ||
        !p)
      missing += (missing.empty() ? "" : ", ") + std::string(name);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  get(d.init, "cuInit");
  get(d.driverGetVersion, "cuDriverGetVersion");
  get(d.deviceGetCount, "cuDeviceGetCount");
  get(d.deviceGet, "cuDeviceGet");
  get(d.deviceGetName, "cuDeviceGetName");
  get(d.deviceTotalMem, "cuDeviceTotalMem");
  get(d.deviceGetAttribute, "cuDeviceGetAttribute");
  get(d.primaryCtxRetain, "cuDevicePrimaryCtxRetain");
  get(d.ctxSetCurrent, "cuCtxSetCurrent");
  get(d.ctxSynchronize, "cuCtxSynchronize");
  get(d.moduleLoadData, "cuModuleLoadData");
  get(d.moduleUnload, "cuModuleUnload");
  get(d.moduleGetFunction, "cuModuleGetFunction");
  get(d.launchKernel, "cuLaunchKernel");
  get(d.streamCreate, "cuStreamCreate");
  get(d.streamSynchronize, "cuStreamSynchronize");
  get(d.pointerGetAttribute, "cuPointerGetAttribute");
  get(d.streamDestroy, "cuStreamDestroy");
  get(d.memAllocManaged, "cuMemAllocManaged");
  get(d.memFree, "cuMemFree");
  get(d.memAlloc, "cuMemAlloc");
  get(d.memsetD8, "cuMemsetD8");
  get(d.memcpy, "cuMemcpy");
  get(d.memcpyAsync, "cuMemcpyAsync");
  get(d.streamBeginCapture, "cuStreamBeginCapture");
  get(d.streamEndCapture, "cuStreamEndCapture");
  get(d.graphInstantiate, "cuGraphInstantiateWithFlags");
  get(d.graphLaunch, "cuGraphLaunch");
  get(d.graphGetNodes, "cuGraphGetNodes");
  get(d.graphExecDestroy, "cuGraphExecDestroy");
  get(d.graphDestroy, "cuGraphDestroy");
  get(d.exchangeCaptureMode, "cuThreadExchangeStreamCaptureMode");
  get(d.getErrorName, "cuGetErrorName");
  get(d.getErrorString, "cuGetErrorString");
  if (!missing.empty())
    return unavailable("the driver lacks " + missing);
  // Optional: the CUmemLocation forms (12.2's _v2, the CUDA 13 headers'
  // plain names), and cuMemGetInfo.
  for (auto [fn, name] :
       {std::pair<void **, const char *>{
            reinterpret_cast<void **>(&d.memAdvise), "cuMemAdvise"},
        {reinterpret_cast<void **>(&d.memPrefetchAsync), "cuMemPrefetchAsync"},
        {reinterpret_cast<void **>(&d.memGetInfo), "cuMemGetInfo"},
        {reinterpret_cast<void **>(&d.eventCreate), "cuEventCreate"},
        {reinterpret_cast<void **>(&d.eventRecord), "cuEventRecord"},
        {reinterpret_cast<void **>(&d.eventSynchronize), "cuEventSynchronize"},
        {reinterpret_cast<void **>(&d.eventElapsedTime), "cuEventElapsedTime"},
        {reinterpret_cast<void **>(&d.eventDestroy), "cuEventDestroy"}}) {
    CUdriverProcAddressQueryResult found;
    if (getProcAddress(name, fn, 12020, CU_GET_PROC_ADDRESS_DEFAULT, &found) !=
        CUDA_SUCCESS)
      *fn = nullptr;
  }
  return Status::ok();
}

/// ANVIL_CUDA_LAUNCHES (LaunchMode); ANVIL_PROFILE=1 times every launch.
Expected<cuda::LaunchMode> launchModeFromEnvironment() {
  const char *v = std::getenv("ANVIL_CUDA_LAUNCHES");
  std::string value = v ? v : "";
  if (value != "" && value != "graph" && value != "async" && value != "sync")
    return Status::error(ErrorCode::InvalidArgument,
                         "CUDA: ANVIL_CUDA_LAUNCHES='" + value +
                             "': expected graph (the default), async or sync");
  if (cuda::profiling() || value == "sync")
    return cuda::LaunchMode::Sync;
  return value == "async" ? cuda::LaunchMode::Async : cuda::LaunchMode::Graph;
}

Status startDevice(State &s) {
  Expected<cuda::LaunchMode> mode = launchModeFromEnvironment();
  if (!mode)
    return mode.status();
  s.mode = *mode;
  if (Status st = loadDriver(s); !st.isOk())
    return st;
  Driver &d = s.driver;
  if (CUresult r = d.init(0); r != CUDA_SUCCESS)
    return unavailable(cuda::describeDriverError(r, "cuInit", ""));
  int count = 0;
  if (CUresult r = d.deviceGetCount(&count); r != CUDA_SUCCESS)
    return unavailable(cuda::describeDriverError(r, "cuDeviceGetCount", ""));
  if (count == 0)
    return unavailable("the driver sees no device");
  // The rank's device among this machine's: its local rank by whichever
  // launcher started it (mpirun, srun, anvil-run, torchrun), as the
  // trainer reads the world.
  if (Expected<WorldInfo> world = worldFromEnvironment(); world.hasValue())
    s.ordinal = world->localRank % count;
  if (CUresult r = d.deviceGet(&s.device, s.ordinal); r != CUDA_SUCCESS)
    return unavailable(cuda::describeDriverError(r, "cuDeviceGet", ""));
  // Placement advice needs concurrent managed access (not under WSL2, some
  // vGPUs): without it, managed memory works unadvised.
  int concurrent = 0;
  if (d.deviceGetAttribute(&concurrent,
                           CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
                           s.device) != CUDA_SUCCESS ||
      !concurrent) {
    d.memAdvise = nullptr;
    d.memPrefetchAsync = nullptr;
  }
  if (CUresult r = d.primaryCtxRetain(&s.context, s.device); r != CUDA_SUCCESS)
    return unavailable(
        cuda::describeDriverError(r, "cuDevicePrimaryCtxRetain", ""));
  if (CUresult r = d.ctxSetCurrent(s.context); r != CUDA_SUCCESS)
    return unavailable(cuda::describeDriverError(r, "cuCtxSetCurrent", ""));
  // Non-blocking: nothing on the legacy default stream (prefetches between
  // steps) waits for it, or it for them.
  if (CUresult r = d.streamCreate(&s.stream, CU_STREAM_NON_BLOCKING);
      r != CUDA_SUCCESS)
    return unavailable(
        cuda::describeDriverError(r, "cuStreamCreate", "the step stream"));
  return Status::ok();
}

/// The started device for a call from generated code: aborts with the
/// reason when there is none (generated code has no error path).
Driver &driverOrAbort(const char *call) {
  Status st = cuda::initialize();
  if (!st.isOk()) {
    std::fprintf(stderr, "anvil: %s: %s\n", call, st.message().c_str());
    std::abort();
  }
  return state().driver; // initialize() made the context current
}

/// Aborts with the report of `result` unless it is success.
void check(CUresult result, const char *call, const std::string &what) {
  if (result == CUDA_SUCCESS)
    return;
  std::fprintf(stderr, "anvil: %s\n",
               cuda::describeDriverError(result, call, what).c_str());
  std::abort();
}

} // namespace

Status cuda::initialize() {
  State &s = state();
  std::call_once(s.once, [&] { s.status = startDevice(s); });
  // The context is current per thread: once on each thread that calls in
  // (launches may come from another thread than the one that started the
  // device), not once per launch.
  thread_local bool current = false;
  if (s.status.isOk() && s.context && !current)
    current = s.driver.ctxSetCurrent(s.context) == CUDA_SUCCESS;
  return s.status;
}

Expected<cuda::DeviceInfo> cuda::currentDevice() {
  if (Status st = initialize(); !st.isOk())
    return st;
  State &s = state();
  Driver &d = s.driver;
  DeviceInfo info;
  info.ordinal = s.ordinal;
  char name[256] = {};
  d.deviceGetName(name, sizeof name, s.device);
  info.name = name;
  size_t bytes = 0;
  d.deviceTotalMem(&bytes, s.device);
  info.memoryBytes = static_cast<int64_t>(bytes);
  d.deviceGetAttribute(&info.computeMajor,
                       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, s.device);
  d.deviceGetAttribute(&info.computeMinor,
                       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, s.device);
  d.deviceGetAttribute(&info.multiprocessors,
                       CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, s.device);
  return info;
}

void cuda::setCurrentStep(int64_t step) {
  currentStep = step;
  lastKernel = nullptr;
}

std::string cuda::whereInStep() {
  if (currentStep < 0)
    return "";
  std::string where = ", at step " + std::to_string(currentStep);
  if (lastKernel)
    where += ", after kernel '" + kernelName(lastKernel) + "'";
  return where;
}

void cuda::failInStep(const std::string &message) {
  std::fprintf(stderr, "anvil: %s%s\n", message.c_str(), whereInStep().c_str());
  std::abort();
}

bool cuda::isDeviceAddressable(const void *ptr) {
  if (!initialize().isOk())
    return false;
  unsigned managed = 0;
  CUmemorytype type = CU_MEMORYTYPE_HOST;
  Driver &d = state().driver;
  auto address = reinterpret_cast<CUdeviceptr>(ptr);
  if (d.pointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                            address) == CUDA_SUCCESS &&
      managed)
    return true;
  return d.pointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                               address) == CUDA_SUCCESS &&
         type == CU_MEMORYTYPE_DEVICE;
}

cuda::LaunchMode cuda::launchMode() {
  (void)initialize();
  return state().mode;
}

void *cuda::stepStream() {
  (void)driverOrAbort("the step stream");
  return state().stream;
}

Status cuda::synchronizeStepStream(const char *after) {
  if (Status st = initialize(); !st.isOk())
    return st;
  State &s = state();
  if (recordCaptureFailure(std::string("a wait for the device, after ") +
                           after))
    return Status::ok();
  if (CUresult r = s.driver.streamSynchronize(s.stream); r != CUDA_SUCCESS)
    return Status::error(ErrorCode::IOError,
                         describeDriverError(r, "cuStreamSynchronize", after));
  return Status::ok();
}

bool cuda::recordCaptureFailure(const std::string &what) {
  State &s = state();
  if (!capturingHere())
    return false;
  if (s.captureFailure.empty())
    s.captureFailure = what;
  return true;
}

std::string cuda::describeDriverError(int result, const char *call,
                                      const std::string &what) {
  const char *name = nullptr, *text = nullptr;
  Driver &d = state().driver;
  if (d.getErrorName)
    d.getErrorName(static_cast<CUresult>(result), &name);
  if (d.getErrorString)
    d.getErrorString(static_cast<CUresult>(result), &text);
  std::string message = std::string(call) + " failed: " +
                        (name ? name : "CUDA error " + std::to_string(result));
  if (text)
    message += std::string(" (") + text + ")";
  if (!what.empty())
    message += ", for " + what;
  if (currentStep >= 0)
    message += ", at step " + std::to_string(currentStep);
  return message;
}

std::string cuda::kernelName(void *function) {
  State &s = state();
  std::lock_guard<std::mutex> guard(s.namesLock);
  auto it = s.kernelNames.find(function);
  return it == s.kernelNames.end() ? std::string() : it->second;
}

//===- The mesh axes' communicators ---------------------------------------===//

std::unique_ptr<Communicator>
anvil::rt::deviceAxisCommunicator(std::unique_ptr<Communicator> axis) {
  // ANVIL_NCCL=0 keeps the collectives on the host transport (to compare);
  // every rank takes part in the agreement either way.
  const char *use = std::getenv("ANVIL_NCCL");
  bool wanted = !(use && std::string(use) == "0");
  Expected<std::unique_ptr<Communicator>> nccl =
      cuda::makeNCCLCommunicator(axis, wanted);
  if (nccl)
    return std::move(*nccl);
  // Each rank says why it could not (rank 0 also when another could not).
  if (wanted && (axis->rank() == 0 || nccl.status().message().find(
                                          "another rank") == std::string::npos))
    std::fprintf(stderr,
                 "anvil: rank %d: %s; the collectives of this mesh axis (%d "
                 "ranks) go over %s\n",
                 axis->rank(), nccl.status().message().c_str(), axis->size(),
                 axis->transport().c_str());
  return axis;
}

//===- MLIR's launch ABI --------------------------------------------------===//

extern "C" void *mgpuModuleLoad(void *data, uint64_t bytes) {
  // Generated code loads its kernels from a constructor, before main: on a
  // machine without a GPU the executable must still start (--help, and the
  // trainer's own report of why it cannot train), so this is not an error
  // yet; a launch is.
  if (!cuda::initialize().isOk())
    return nullptr;
  Driver &d = driverOrAbort("mgpuModuleLoad");
  CUmodule module = nullptr;
  check(d.moduleLoadData(&module, data), "cuModuleLoadData",
        "the kernels' module (" + std::to_string(bytes) + " bytes)");
  return module;
}

extern "C" void mgpuModuleUnload(void *module) {
  // At exit the driver may already be shutting down: nothing to report.
  State &s = state();
  if (module && s.status.isOk() && s.driver.moduleUnload)
    s.driver.moduleUnload(static_cast<CUmodule>(module));
}

extern "C" void *mgpuModuleGetFunction(void *module, const char *name) {
  Driver &d = driverOrAbort("mgpuModuleGetFunction");
  CUfunction function = nullptr;
  check(d.moduleGetFunction(&function, static_cast<CUmodule>(module), name),
        "cuModuleGetFunction", std::string("kernel '") + name + "'");
  State &s = state();
  std::lock_guard<std::mutex> guard(s.namesLock);
  s.kernelNames[function] = name;
  return function;
}

namespace {

/// ANVIL_PROFILE's table: per name, calls and seconds.
struct Profile {
  std::mutex mutex;
  std::map<std::string, std::pair<int64_t, double>> entries;
  /// The kernel launched last and when, until the synchronization after it.
  std::string pending;
  std::chrono::steady_clock::time_point launched;

  ~Profile() {
    if (entries.empty())
      return;
    std::vector<std::pair<std::string, std::pair<int64_t, double>>> rows(
        entries.begin(), entries.end());
    std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
      return a.second.second > b.second.second;
    });
    double total = 0;
    for (const auto &row : rows)
      total += row.second.second;
    std::fprintf(stderr,
                 "anvil profile: %.3f s in %zu kernels and library calls\n",
                 total, rows.size());
    std::fprintf(stderr, "%10s %7s %8s %6s  %s\n", "ms", "calls", "us/call",
                 "share", "name");
    for (size_t i = 0; i < rows.size() && i < 40; ++i) {
      const auto &[name, stats] = rows[i];
      std::fprintf(stderr, "%10.2f %7lld %8.1f %5.1f%%  %s\n",
                   stats.second * 1e3, static_cast<long long>(stats.first),
                   stats.second * 1e6 / static_cast<double>(stats.first),
                   100 * stats.second / total, name.c_str());
    }
  }
};

Profile &profile() {
  static Profile p;
  return p;
}

} // namespace

bool cuda::profiling() {
  static const bool on = [] {
    const char *v = std::getenv("ANVIL_PROFILE");
    return v && std::string(v) == "1";
  }();
  return on;
}

void cuda::profileAdd(const std::string &name, double seconds) {
  Profile &p = profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  auto &[calls, total] = p.entries[name];
  ++calls;
  total += seconds;
}

extern "C" void mgpuLaunchKernel(void *function, int64_t gridX, int64_t gridY,
                                 int64_t gridZ, int64_t blockX, int64_t blockY,
                                 int64_t blockZ, int32_t sharedBytes,
                                 void *stream, void **params, void **extra,
                                 int64_t /*paramCount*/) {
  Driver &d = driverOrAbort("mgpuLaunchKernel");
  lastKernel = function;
  if (cuda::profiling()) {
    Profile &p = profile();
    std::lock_guard<std::mutex> lock(p.mutex);
    p.pending = cuda::kernelName(function);
    p.launched = std::chrono::steady_clock::now();
  }
  CUresult r = d.launchKernel(
      static_cast<CUfunction>(function), static_cast<unsigned>(gridX),
      static_cast<unsigned>(gridY), static_cast<unsigned>(gridZ),
      static_cast<unsigned>(blockX), static_cast<unsigned>(blockY),
      static_cast<unsigned>(blockZ), static_cast<unsigned>(sharedBytes),
      static_cast<CUstream>(stream), params, extra);
  if (r != CUDA_SUCCESS) {
    std::string what = "kernel '" + cuda::kernelName(function) + "' (grid " +
                       std::to_string(gridX) + "x" + std::to_string(gridY) +
                       "x" + std::to_string(gridZ) + ", block " +
                       std::to_string(blockX) + "x" + std::to_string(blockY) +
                       "x" + std::to_string(blockZ) + ")";
    std::string report = cuda::describeDriverError(r, "cuLaunchKernel", what);
    if (cuda::recordCaptureFailure(report))
      return;
    // An error of an earlier kernel surfaces at the next call.
    if (cuda::launchMode() != cuda::LaunchMode::Sync)
      report += " (launches are asynchronous: the error may be an earlier "
                "kernel's, which ANVIL_CUDA_LAUNCHES=sync names)";
    std::fprintf(stderr, "anvil: %s\n", report.c_str());
    std::abort();
  }
}

// Every launch of generated code goes on the step stream, in order with
// the library calls between them.
extern "C" void *mgpuStreamCreate(void) { return cuda::stepStream(); }

extern "C" void mgpuStreamSynchronize(void *stream) {
  if (cuda::launchMode() != cuda::LaunchMode::Sync)
    return; // the step's end waits for everything
  Driver &d = driverOrAbort("mgpuStreamSynchronize");
  // An error of a kernel surfaces here: name the last one launched.
  check(d.streamSynchronize(static_cast<CUstream>(stream)),
        "cuStreamSynchronize", "the kernels launched before it");
  if (cuda::profiling()) {
    Profile &p = profile();
    std::string name;
    double seconds = 0;
    {
      std::lock_guard<std::mutex> lock(p.mutex);
      if (p.pending.empty())
        return;
      name = std::move(p.pending);
      p.pending.clear();
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                              p.launched)
                    .count();
    }
    cuda::profileAdd(name, seconds);
  }
}

extern "C" void mgpuStreamDestroy(void *) {
  // The step stream lives as long as the process.
}

namespace {

/// Drops the graphs of steps that use the memory at `ptr`: a later buffer
/// at the same address is not theirs. Waits for the device first (a graph
/// may be running).
void dropGraphsOf(void *ptr) {
  State &s = state();
  for (auto it = s.graphs.begin(); it != s.graphs.end();) {
    const std::vector<void *> &p = it->first.pointers;
    if (std::find(p.begin(), p.end(), ptr) == p.end()) {
      ++it;
      continue;
    }
    if (it->second.exec) {
      check(s.driver.ctxSynchronize(), "cuCtxSynchronize",
            "the step's CUDA graph, before its buffers are freed");
      s.driver.graphExecDestroy(it->second.exec);
    }
    it = s.graphs.erase(it);
  }
}

} // namespace

extern "C" void *anvil_rt_cuda_alloc(int64_t bytes) {
  Driver &d = driverOrAbort("anvil_rt_cuda_alloc");
  CUdeviceptr p = 0;
  size_t size = static_cast<size_t>(bytes > 0 ? bytes : 1);
  if (cuda::recordCaptureFailure("an allocation in the step (" +
                                 std::to_string(bytes) + " bytes)")) {
    // Allowed in relaxed mode; the step runs again without the capture.
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    d.exchangeCaptureMode(&mode);
    CUresult r = d.memAllocManaged(&p, size, CU_MEM_ATTACH_GLOBAL);
    d.exchangeCaptureMode(&mode);
    check(r, "cuMemAllocManaged", std::to_string(bytes) + " bytes");
    return reinterpret_cast<void *>(p);
  }
  check(d.memAllocManaged(&p, size, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged",
        std::to_string(bytes) + " bytes");
  return reinterpret_cast<void *>(p);
}

extern "C" void anvil_rt_cuda_free(void *ptr) {
  if (!ptr)
    return;
  Driver &d = driverOrAbort("anvil_rt_cuda_free");
  State &s = state();
  if (cuda::recordCaptureFailure("a free in the step")) {
    s.deferredFrees.push_back(ptr); // freed when the capture ends
    return;
  }
  dropGraphsOf(ptr);
  check(d.memFree(reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree", "");
}

//===- The trainer's buffers and generated code's allocations -------------===//

// Managed memory replaces the CPU device's host memory (RuntimeABI.h): the
// trainer fills and reads buffers on the host between steps, the kernels
// use them during a step. Managed allocations are aligned to at least 256
// bytes. Each prefers the device: the host's accesses between steps move
// pages to the host, and the kernels' first touch moves them back, rather
// than the kernels reading them over the bus; the first step begins by
// moving every buffer the trainer wrote (parameters, restored state) to
// the device in one go.
extern "C" void *anvil_rt_buffer_alloc(uint64_t alignment, uint64_t bytes) {
  if (alignment > 256) {
    std::fprintf(stderr,
                 "anvil: anvil_rt_buffer_alloc: an alignment of %llu bytes "
                 "(managed memory gives 256)\n",
                 static_cast<unsigned long long>(alignment));
    std::abort();
  }
  void *p = anvil_rt_cuda_alloc(static_cast<int64_t>(bytes));
  State &s = state();
  size_t size = static_cast<size_t>(bytes > 0 ? bytes : 1);
  if (s.driver.memAdvise) {
    CUmemLocation device = {CU_MEM_LOCATION_TYPE_DEVICE, s.ordinal};
    // Advice only: where it is refused, the buffer works as it is.
    (void)s.driver.memAdvise(reinterpret_cast<CUdeviceptr>(p), size,
                             CU_MEM_ADVISE_SET_PREFERRED_LOCATION, device);
  }
  std::lock_guard<std::mutex> guard(s.buffersLock);
  s.buffers[reinterpret_cast<CUdeviceptr>(p)] = size;
  return p;
}

extern "C" void anvil_rt_device_synchronize(void) {
  Driver &d = driverOrAbort("anvil_rt_device_synchronize");
  if (cuda::recordCaptureFailure(
          "a wait for the device in the step (a collective over the host's "
          "transport, or a free)"))
    return;
  std::string what = "the kernels and library calls queued before it";
  if (cuda::launchMode() != cuda::LaunchMode::Sync)
    what += " (ANVIL_CUDA_LAUNCHES=sync names the kernel that failed)";
  check(d.ctxSynchronize(), "cuCtxSynchronize", what);
}

extern "C" void anvil_rt_buffer_free(void *ptr) {
  // Kernels queued before may still read it (in a capture: put off until
  // the capture ends, by anvil_rt_cuda_free).
  if (ptr && !capturingHere())
    anvil_rt_device_synchronize();
  {
    State &s = state();
    std::lock_guard<std::mutex> guard(s.buffersLock);
    s.buffers.erase(reinterpret_cast<CUdeviceptr>(ptr));
  }
  anvil_rt_cuda_free(ptr);
}

// Device memory (RuntimeABI.h): the arena is the bulk of a step's traffic
// (the activations), which the kernels should read at the memory's speed,
// not through managed memory's faults and page tables; nothing but the
// kernels and the libraries they call touches it.
extern "C" void *anvil_rt_workspace_alloc(uint64_t bytes) {
  Driver &d = driverOrAbort("anvil_rt_workspace_alloc");
  size_t size = static_cast<size_t>(bytes > 0 ? bytes : 1);
  CUdeviceptr p = 0;
  // Out of memory is the caller's to report (RuntimeABI.h: null).
  if (CUresult r = d.memAlloc(&p, size); r == CUDA_ERROR_OUT_OF_MEMORY)
    return nullptr;
  else
    check(r, "cuMemAlloc",
          "the workspace (" + std::to_string(bytes) + " bytes)");
  check(d.memsetD8(p, 0, size), "cuMemsetD8", "the workspace");
  check(d.ctxSynchronize(), "cuCtxSynchronize", "the workspace's memset");
  return reinterpret_cast<void *>(p);
}

extern "C" void anvil_rt_workspace_free(void *ptr) { anvil_rt_cuda_free(ptr); }

// Unified addressing: cuMemcpyAsync finds where each side lives (device or
// managed memory); on the step stream, the copy runs after the kernels
// that wrote `src` and before those that read `dst`. The callers copy
// between distinct buffers (it is not memmove).
extern "C" void anvil_rt_device_copy(void *dst, const void *src,
                                     uint64_t bytes) {
  if (bytes == 0 || dst == src)
    return;
  Driver &d = driverOrAbort("anvil_rt_device_copy");
  State &s = state();
  std::string what = std::to_string(bytes) + " bytes between device buffers";
  CUresult r =
      d.memcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                    reinterpret_cast<CUdeviceptr>(src), bytes, s.stream);
  if (r != CUDA_SUCCESS && cuda::recordCaptureFailure(cuda::describeDriverError(
                               r, "cuMemcpyAsync", what)))
    return;
  check(r, "cuMemcpyAsync", what);
  if (s.mode == cuda::LaunchMode::Sync)
    check(d.streamSynchronize(s.stream), "cuStreamSynchronize",
          "a copy of " + what);
}

extern "C" void anvil_rt_begin_step(int64_t step) {
  State &s = state();
  Driver &d = s.driver;
  // The end of a step (-1): with asynchronous launches, everything it
  // queued completes before the trainer reads or writes its buffers; the
  // events around it give its time on the device.
  if (step < 0) {
    bool timed =
        s.stepStarted && d.eventRecord(s.stepEnd, s.stream) == CUDA_SUCCESS;
    s.stepStarted = false;
    anvil_rt_device_synchronize();
    float ms = 0;
    s.stepSeconds =
        timed && d.eventSynchronize(s.stepEnd) == CUDA_SUCCESS &&
                d.eventElapsedTime(&ms, s.stepStart, s.stepEnd) == CUDA_SUCCESS
            ? ms / 1e3
            : -1;
  }
  cuda::setCurrentStep(step);
  if (step < 0)
    return;
  if (!s.prefetched && d.memPrefetchAsync) {
    // Once, before the first step: every buffer to the device.
    std::lock_guard<std::mutex> guard(s.buffersLock);
    CUmemLocation device = {CU_MEM_LOCATION_TYPE_DEVICE, s.ordinal};
    for (auto [address, size] : s.buffers)
      (void)d.memPrefetchAsync(address, size, device, 0, nullptr);
    check(d.ctxSynchronize(), "cuCtxSynchronize",
          "the buffers' move to the device");
    s.prefetched = true;
  }
}

namespace {

/// Records the step's start event on the step stream, just before its
/// work is queued (the graph launched, or the step function called): the
/// events are made on the first call, where the driver has them (a failure
/// leaves every step untimed).
void startStepTimer(State &s) {
  Driver &d = s.driver;
  if (!s.eventsTried) {
    s.eventsTried = true;
    bool made = d.eventCreate && d.eventRecord && d.eventSynchronize &&
                d.eventElapsedTime &&
                d.eventCreate(&s.stepStart, CU_EVENT_DEFAULT) == CUDA_SUCCESS;
    if (made && d.eventCreate(&s.stepEnd, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
      if (d.eventDestroy)
        (void)d.eventDestroy(s.stepStart);
      made = false;
    }
    if (!made)
      s.stepStart = s.stepEnd = nullptr;
  }
  s.stepStarted =
      s.stepStart && d.eventRecord(s.stepStart, s.stream) == CUDA_SUCCESS;
}

} // namespace

extern "C" void anvil_rt_device_stage(const void *ptr, uint64_t bytes) {
  if (!ptr || bytes == 0 || !cuda::initialize().isOk())
    return;
  State &s = state();
  if (!s.driver.memPrefetchAsync || capturingHere())
    return;
  // Advice only: where it is refused, the kernels fault the pages over.
  CUmemLocation device = {CU_MEM_LOCATION_TYPE_DEVICE, s.ordinal};
  (void)s.driver.memPrefetchAsync(reinterpret_cast<CUdeviceptr>(ptr),
                                  static_cast<size_t>(bytes), device, 0,
                                  s.stream);
}

extern "C" double anvil_rt_device_step_seconds(void) {
  return state().stepSeconds;
}

//===- The step as a CUDA graph -------------------------------------------===//

namespace {

/// At most a few sets of pointers get a graph (the trainer's state has two
/// generations); a caller that keeps changing them runs without.
constexpr size_t kMaxGraphs = 4;

/// Captures one call of `step` on the step stream into `g`: on success
/// `g.exec` is the instantiated graph (not launched yet) and the result is
/// empty; on failure nothing of the call has run, and the result says
/// why.
std::string capture(StepGraph &g, anvil_rt_step_fn step, void **args,
                    void **results, void *workspace) {
  State &s = state();
  Driver &d = s.driver;
  // Thread-local: a call on this thread that a graph cannot hold (a
  // synchronous allocation or copy, a wait) fails, and invalidates the
  // capture, instead of running; other threads are not this step's.
  if (CUresult r =
          d.streamBeginCapture(s.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
      r != CUDA_SUCCESS)
    return cuda::describeDriverError(r, "cuStreamBeginCapture", "");
  s.capturingThread = std::this_thread::get_id();
  s.capturing = true;
  s.captureFailure.clear();
  step(args, results, workspace);
  s.capturing = false;
  CUgraph graph = nullptr;
  CUresult r = d.streamEndCapture(s.stream, &graph);
  // What the step freed during the capture (the capture refused it, so the
  // capture has failed and `g` is not touched below: a free may drop it).
  for (void *ptr : std::exchange(s.deferredFrees, {}))
    anvil_rt_buffer_free(ptr);
  std::string why = s.captureFailure;
  if (why.empty() && r != CUDA_SUCCESS)
    why = cuda::describeDriverError(r, "cuStreamEndCapture", "");
  if (why.empty()) {
    if (CUresult i = d.graphInstantiate(&g.exec, graph, 0); i != CUDA_SUCCESS) {
      why = cuda::describeDriverError(i, "cuGraphInstantiate", "");
      g.exec = nullptr;
    }
  }
  size_t nodes = 0;
  if (graph) {
    if (why.empty())
      (void)d.graphGetNodes(graph, nullptr, &nodes);
    d.graphDestroy(graph); // the instantiated graph keeps what it needs
  }
  if (!why.empty())
    return why;
  // One line per graph (at most kMaxGraphs).
  std::fprintf(stderr,
               "anvil: step %lld captured as a CUDA graph of %zu nodes, "
               "replayed for its buffers from now on\n",
               static_cast<long long>(currentStep), nodes);
  return "";
}

} // namespace

extern "C" void anvil_rt_run_step(anvil_rt_step_fn step, void **args,
                                  int64_t numArgs, void **results,
                                  int64_t numResults, void *workspace,
                                  int32_t capturable) {
  Driver &d = driverOrAbort("anvil_rt_run_step");
  State &s = state();
  if (!capturable || s.mode != cuda::LaunchMode::Graph ||
      s.refused.count(step)) {
    startStepTimer(s);
    step(args, results, workspace);
    return;
  }
  StepKey key{step, std::vector<void *>(args, args + numArgs)};
  key.pointers.insert(key.pointers.end(), results, results + numResults);
  key.pointers.push_back(workspace);
  // Sets of pointers seen once and never again (a caller that changes
  // them every step) do not pile up.
  constexpr size_t kMaxEntries = 64;
  if (s.graphs.size() >= kMaxEntries && !s.graphs.count(key))
    for (auto it = s.graphs.begin(); it != s.graphs.end();)
      it = it->second.exec ? std::next(it) : s.graphs.erase(it);
  StepGraph &g = s.graphs[key]; // dropped when one of its buffers is freed
  if (g.exec) {
    startStepTimer(s);
    check(d.graphLaunch(g.exec, s.stream), "cuGraphLaunch",
          "the training step's CUDA graph");
    return;
  }
  // The first call runs as it is: what is made once (cuBLAS's handle and
  // workspace, kernels' attributes, the allocator's pool) is made outside
  // the capture. Beyond kMaxGraphs graphs, steps run as they are.
  size_t graphs = 0;
  for (const auto &entry : s.graphs)
    graphs += entry.second.exec != nullptr;
  if (g.calls++ == 0 || graphs >= kMaxGraphs) {
    startStepTimer(s);
    step(args, results, workspace);
    return;
  }
  if (std::string why = capture(g, step, args, results, workspace);
      !why.empty()) {
    s.refused.insert(step);
    std::fprintf(stderr,
                 "anvil: the training step could not be captured as a CUDA "
                 "graph (%s); it runs without one (ANVIL_CUDA_LAUNCHES=async "
                 "does so without trying)\n",
                 why.c_str());
    startStepTimer(s);
    step(args, results, workspace); // the capture ran none of it
    return;
  }
  startStepTimer(s);
  check(d.graphLaunch(g.exec, s.stream), "cuGraphLaunch",
        "the training step's CUDA graph");
}

extern "C" int64_t anvil_rt_device_memory_used(void) {
  if (!cuda::initialize().isOk())
    return -1;
  Driver &d = state().driver;
  size_t free = 0, total = 0;
  if (!d.memGetInfo || d.memGetInfo(&free, &total) != CUDA_SUCCESS ||
      free > total)
    return -1;
  return static_cast<int64_t>(total - free);
}

extern "C" const char *anvil_rt_device_open(void) {
  static std::string why;
  Status st = cuda::initialize();
  if (st.isOk())
    return nullptr;
  why = st.message() + " (this executable was compiled with --target=cuda)";
  return why.c_str();
}

extern "C" const char *anvil_rt_device_description(void) {
  static std::string text;
  Expected<cuda::DeviceInfo> info = cuda::currentDevice();
  if (!info.hasValue())
    return "";
  char line[512];
  std::snprintf(line, sizeof line, "%s (device %d, sm_%d%d, %.1f GiB, %d SMs)",
                info->name.c_str(), info->ordinal, info->computeMajor,
                info->computeMinor,
                static_cast<double>(info->memoryBytes) / (1 << 30),
                info->multiprocessors);
  text = line;
  return text.c_str();
}
