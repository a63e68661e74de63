//===- MockDriver.cpp - a CUDA driver of the host, for tests -------------===//
//
// libcuda.so.1 for machines without a GPU: the entry points the runtime's
// Device.cpp fetches through cuGetProcAddress_v2, with the semantics of the
// driver that its stream and graph logic depends on, run on the host:
//
// - one device; memory is host memory (managed and device alike);
// - a module's kernels are the host kernels below, found by the name of
//   the PTX entry (`scale` of runtime/test/ScaleKernel.h);
// - work runs when it is issued, in order (every stream is synchronous);
// - a stream under capture records kernels (their parameters copied, as
//   the driver does) and asynchronous copies instead of running them; a
//   wait, a synchronous copy, a memset, a free, or an allocation (unless
//   the thread exchanged its capture mode for relaxed) while a capture is
//   active fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and
//   invalidates the capture,
//   after which launches on the stream fail with
//   CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and cuStreamEndCapture returns
//   that error and no graph;
// - an instantiated graph runs its recorded work at each cuGraphLaunch.
//
// anvilMockCounts reports what ran, for the tests to see how (eagerly or
// as a graph). Not thread-safe: the tests issue from one thread.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace {

/// A host kernel: `run` over grid * block threads of a 1-D launch, its
/// parameters' sizes in order.
struct Kernel {
  const char *name;
  std::vector<size_t> paramSizes;
  void (*run)(const std::vector<std::vector<char>> &params, uint64_t threads);
};

void runScale(const std::vector<std::vector<char>> &params, uint64_t threads) {
  float *x;
  float a;
  int32_t n;
  std::memcpy(&x, params[0].data(), sizeof x);
  std::memcpy(&a, params[1].data(), sizeof a);
  std::memcpy(&n, params[2].data(), sizeof n);
  for (uint64_t i = 0; i < threads && i < static_cast<uint64_t>(n); ++i)
    x[i] *= a;
}

const Kernel kKernels[] = {{"scale", {8, 4, 4}, runScale}};

struct Launch {
  const Kernel *kernel;
  std::vector<std::vector<char>> params;
  uint64_t threads;
};
struct Copy {
  void *dst;
  const void *src;
  size_t bytes;
};
using Work = std::variant<Launch, Copy>;

struct Stream {
  bool capturing = false;
  bool invalidated = false;
  std::vector<Work> captured;
};

struct Graph {
  std::vector<Work> work;
};

struct Counts {
  int64_t kernelsRun = 0;    ///< Kernels run when launched.
  int64_t graphLaunches = 0; ///< cuGraphLaunch calls.
  int64_t captures = 0;      ///< Captures that made a graph.
} counts;

std::set<Stream *> streams;
std::set<void *> allocations;
/// The bytes of each live allocation (cuMemGetInfo's used memory).
std::map<void *, size_t> allocationBytes;
/// cuThreadExchangeStreamCaptureMode's mode of the (one) thread.
CUstreamCaptureMode threadMode = CU_STREAM_CAPTURE_MODE_GLOBAL;

void run(const Work &w) {
  if (const Launch *l = std::get_if<Launch>(&w))
    l->kernel->run(l->params, l->threads);
  else {
    const Copy &c = std::get<Copy>(w);
    std::memmove(c.dst, c.src, c.bytes);
  }
}

/// The active capture, if any (one thread: thread-local mode is global).
Stream *capturing() {
  for (Stream *s : streams)
    if (s->capturing)
      return s;
  return nullptr;
}

/// A call that a capture cannot hold: fails and invalidates it.
bool refusedInCapture() {
  Stream *s = capturing();
  if (!s)
    return false;
  s->invalidated = true;
  return true;
}

/// Where `stream`'s work goes: recorded (true) or run now (false);
/// `result` is set when the stream's capture was invalidated.
bool record(CUstream stream, const Work &w, CUresult &result) {
  auto *s = reinterpret_cast<Stream *>(stream);
  result = CUDA_SUCCESS;
  if (!s || !s->capturing)
    return false;
  if (s->invalidated)
    result = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  else
    s->captured.push_back(w);
  return true;
}

CUresult init(unsigned) { return CUDA_SUCCESS; }
CUresult driverGetVersion(int *v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult deviceGetCount(int *n) {
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult deviceGet(CUdevice *d, int ordinal) {
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult deviceGetName(char *name, int length, CUdevice) {
  std::strncpy(name, "Anvil mock CUDA driver", static_cast<size_t>(length));
  return CUDA_SUCCESS;
}
CUresult deviceTotalMem(size_t *bytes, CUdevice) {
  *bytes = size_t(1) << 30;
  return CUDA_SUCCESS;
}
CUresult deviceGetAttribute(int *value, CUdevice_attribute attribute,
                            CUdevice) {
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = 9;
    break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *value = 1;
    break;
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    *value = 1; // as on Linux with a Pascal or newer GPU: prefetches
    break;
  default:
    *value = 0;
  }
  return CUDA_SUCCESS;
}
CUresult primaryCtxRetain(CUcontext *c, CUdevice) {
  static int context;
  *c = reinterpret_cast<CUcontext>(&context);
  return CUDA_SUCCESS;
}
CUresult ctxSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult ctxSynchronize() {
  return refusedInCapture() ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
                            : CUDA_SUCCESS;
}
CUresult moduleLoadData(CUmodule *module, const void *image) {
  *module = reinterpret_cast<CUmodule>(
      new std::string(static_cast<const char *>(image)));
  return CUDA_SUCCESS;
}
CUresult moduleUnload(CUmodule module) {
  delete reinterpret_cast<std::string *>(module);
  return CUDA_SUCCESS;
}
CUresult moduleGetFunction(CUfunction *f, CUmodule module, const char *name) {
  const std::string &ptx = *reinterpret_cast<std::string *>(module);
  if (ptx.find(".entry " + std::string(name) + "(") == std::string::npos)
    return CUDA_ERROR_NOT_FOUND;
  for (const Kernel &k : kKernels)
    if (std::strcmp(k.name, name) == 0) {
      *f = reinterpret_cast<CUfunction>(const_cast<Kernel *>(&k));
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}
CUresult launchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned,
                      CUstream stream, void **params, void **) {
  if (bx * by * bz > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  const auto *k = reinterpret_cast<const Kernel *>(f);
  Launch l{k, {}, uint64_t(gx) * gy * gz * bx * by * bz};
  for (size_t i = 0; i < k->paramSizes.size(); ++i) {
    const char *p = static_cast<const char *>(params[i]);
    l.params.emplace_back(p, p + k->paramSizes[i]);
  }
  CUresult result;
  if (record(stream, l, result))
    return result;
  ++counts.kernelsRun;
  run(l);
  return CUDA_SUCCESS;
}
CUresult streamCreate(CUstream *stream, unsigned) {
  auto *s = new Stream();
  streams.insert(s);
  *stream = reinterpret_cast<CUstream>(s);
  return CUDA_SUCCESS;
}
CUresult streamSynchronize(CUstream) {
  return refusedInCapture() ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
                            : CUDA_SUCCESS;
}
CUresult streamDestroy(CUstream stream) {
  auto *s = reinterpret_cast<Stream *>(stream);
  streams.erase(s);
  delete s;
  return CUDA_SUCCESS;
}
CUresult memAllocHost(CUdeviceptr *p, size_t bytes) {
  if (threadMode != CU_STREAM_CAPTURE_MODE_RELAXED && refusedInCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  void *m = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!m)
    return CUDA_ERROR_OUT_OF_MEMORY;
  allocations.insert(m);
  allocationBytes[m] = bytes;
  *p = reinterpret_cast<CUdeviceptr>(m);
  return CUDA_SUCCESS;
}
CUresult memAllocManaged(CUdeviceptr *p, size_t bytes, unsigned) {
  return memAllocHost(p, bytes);
}
CUresult memAlloc(CUdeviceptr *p, size_t bytes) {
  return memAllocHost(p, bytes);
}
/// Events: the host's clock when recorded (the mock runs work as it is
/// launched, so everything queued before has run).
struct Event {
  std::chrono::steady_clock::time_point at;
  bool recorded = false;
};
CUresult eventCreate(CUevent *event, unsigned) {
  *event = reinterpret_cast<CUevent>(new Event());
  return CUDA_SUCCESS;
}
CUresult eventRecord(CUevent event, CUstream) {
  if (refusedInCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  auto *e = reinterpret_cast<Event *>(event);
  e->at = std::chrono::steady_clock::now();
  e->recorded = true;
  return CUDA_SUCCESS;
}
CUresult eventSynchronize(CUevent event) {
  return reinterpret_cast<Event *>(event)->recorded ? CUDA_SUCCESS
                                                    : CUDA_ERROR_INVALID_VALUE;
}
CUresult eventElapsedTime(float *ms, CUevent start, CUevent end) {
  auto *a = reinterpret_cast<Event *>(start);
  auto *b = reinterpret_cast<Event *>(end);
  if (!a->recorded || !b->recorded)
    return CUDA_ERROR_INVALID_HANDLE;
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return CUDA_SUCCESS;
}
/// Prefetches (the CUmemLocation form): counted, nothing moves.
int64_t prefetchedBytes = 0;
CUresult memPrefetchAsync(CUdeviceptr, size_t bytes, CUmemLocation, unsigned,
                          CUstream) {
  prefetchedBytes += static_cast<int64_t>(bytes);
  return CUDA_SUCCESS;
}
/// The device's 1 GiB (deviceTotalMem) less what is allocated.
CUresult memGetInfo(size_t *free, size_t *total) {
  size_t used = 0;
  for (const auto &entry : allocationBytes)
    used += entry.second;
  deviceTotalMem(total, 0);
  *free = *total > used ? *total - used : 0;
  return CUDA_SUCCESS;
}
CUresult memsetD8(CUdeviceptr p, unsigned char value, size_t n) {
  if (refusedInCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::memset(reinterpret_cast<void *>(p), value, n);
  return CUDA_SUCCESS;
}
CUresult memcpySync(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  if (refusedInCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::memmove(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src),
               bytes);
  return CUDA_SUCCESS;
}
CUresult memcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                     CUstream stream) {
  Copy c{reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src),
         bytes};
  CUresult result;
  if (record(stream, c, result))
    return result;
  run(c);
  return CUDA_SUCCESS;
}
CUresult memFree(CUdeviceptr p) {
  if (refusedInCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  void *m = reinterpret_cast<void *>(p);
  if (!allocations.erase(m))
    return CUDA_ERROR_INVALID_VALUE;
  allocationBytes.erase(m);
  std::free(m);
  return CUDA_SUCCESS;
}
CUresult pointerGetAttribute(void *data, CUpointer_attribute attribute,
                             CUdeviceptr p) {
  if (!allocations.count(reinterpret_cast<void *>(p)))
    return CUDA_ERROR_INVALID_VALUE;
  if (attribute == CU_POINTER_ATTRIBUTE_IS_MANAGED)
    *static_cast<unsigned *>(data) = 1;
  else if (attribute == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
    *static_cast<CUmemorytype *>(data) = CU_MEMORYTYPE_DEVICE;
  else
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
CUresult streamBeginCapture(CUstream stream, CUstreamCaptureMode) {
  auto *s = reinterpret_cast<Stream *>(stream);
  if (!s || s->capturing)
    return CUDA_ERROR_ILLEGAL_STATE;
  *s = Stream{true, false, {}};
  return CUDA_SUCCESS;
}
CUresult streamEndCapture(CUstream stream, CUgraph *graph) {
  auto *s = reinterpret_cast<Stream *>(stream);
  if (!s || !s->capturing)
    return CUDA_ERROR_ILLEGAL_STATE;
  bool invalidated = s->invalidated;
  std::vector<Work> work = std::move(s->captured);
  *s = Stream();
  if (invalidated) {
    *graph = nullptr;
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  *graph = reinterpret_cast<CUgraph>(new Graph{std::move(work)});
  ++counts.captures;
  return CUDA_SUCCESS;
}
CUresult graphInstantiate(CUgraphExec *exec, CUgraph graph,
                          unsigned long long) {
  *exec = reinterpret_cast<CUgraphExec>(
      new Graph(*reinterpret_cast<Graph *>(graph)));
  return CUDA_SUCCESS;
}
CUresult graphLaunch(CUgraphExec exec, CUstream stream) {
  auto *s = reinterpret_cast<Stream *>(stream);
  if (s && s->capturing)
    return CUDA_ERROR_NOT_SUPPORTED; // not needed by the runtime
  ++counts.graphLaunches;
  for (const Work &w : reinterpret_cast<Graph *>(exec)->work)
    run(w);
  return CUDA_SUCCESS;
}
CUresult graphGetNodes(CUgraph graph, CUgraphNode *nodes, size_t *count) {
  if (nodes)
    return CUDA_ERROR_NOT_SUPPORTED; // counts only
  *count = reinterpret_cast<Graph *>(graph)->work.size();
  return CUDA_SUCCESS;
}
CUresult graphExecDestroy(CUgraphExec exec) {
  delete reinterpret_cast<Graph *>(exec);
  return CUDA_SUCCESS;
}
CUresult exchangeCaptureMode(CUstreamCaptureMode *mode) {
  std::swap(*mode, threadMode);
  return CUDA_SUCCESS;
}
CUresult graphDestroy(CUgraph graph) {
  delete reinterpret_cast<Graph *>(graph);
  return CUDA_SUCCESS;
}

const std::map<CUresult, std::pair<const char *, const char *>> kErrors = {
    {CUDA_SUCCESS, {"CUDA_SUCCESS", "no error"}},
    {CUDA_ERROR_INVALID_VALUE,
     {"CUDA_ERROR_INVALID_VALUE", "invalid argument"}},
    {CUDA_ERROR_OUT_OF_MEMORY, {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"}},
    {CUDA_ERROR_NOT_FOUND, {"CUDA_ERROR_NOT_FOUND", "named symbol not found"}},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
     {"CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
      "operation not permitted when stream is capturing"}},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
     {"CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
      "operation failed due to a previous error during capture"}},
};
CUresult getErrorName(CUresult e, const char **name) {
  auto it = kErrors.find(e);
  *name = it == kErrors.end() ? "CUDA_ERROR_UNKNOWN" : it->second.first;
  return CUDA_SUCCESS;
}
CUresult getErrorString(CUresult e, const char **text) {
  auto it = kErrors.find(e);
  *text = it == kErrors.end() ? "unknown error" : it->second.second;
  return CUDA_SUCCESS;
}

const std::map<std::string, void *> kEntries = {
    {"cuInit", reinterpret_cast<void *>(init)},
    {"cuDriverGetVersion", reinterpret_cast<void *>(driverGetVersion)},
    {"cuDeviceGetCount", reinterpret_cast<void *>(deviceGetCount)},
    {"cuDeviceGet", reinterpret_cast<void *>(deviceGet)},
    {"cuDeviceGetName", reinterpret_cast<void *>(deviceGetName)},
    {"cuDeviceTotalMem", reinterpret_cast<void *>(deviceTotalMem)},
    {"cuDeviceGetAttribute", reinterpret_cast<void *>(deviceGetAttribute)},
    {"cuDevicePrimaryCtxRetain", reinterpret_cast<void *>(primaryCtxRetain)},
    {"cuCtxSetCurrent", reinterpret_cast<void *>(ctxSetCurrent)},
    {"cuCtxSynchronize", reinterpret_cast<void *>(ctxSynchronize)},
    {"cuModuleLoadData", reinterpret_cast<void *>(moduleLoadData)},
    {"cuModuleUnload", reinterpret_cast<void *>(moduleUnload)},
    {"cuModuleGetFunction", reinterpret_cast<void *>(moduleGetFunction)},
    {"cuLaunchKernel", reinterpret_cast<void *>(launchKernel)},
    {"cuStreamCreate", reinterpret_cast<void *>(streamCreate)},
    {"cuStreamSynchronize", reinterpret_cast<void *>(streamSynchronize)},
    {"cuStreamDestroy", reinterpret_cast<void *>(streamDestroy)},
    {"cuPointerGetAttribute", reinterpret_cast<void *>(pointerGetAttribute)},
    {"cuMemAllocManaged", reinterpret_cast<void *>(memAllocManaged)},
    {"cuMemAlloc", reinterpret_cast<void *>(memAlloc)},
    {"cuMemFree", reinterpret_cast<void *>(memFree)},
    {"cuMemGetInfo", reinterpret_cast<void *>(memGetInfo)},
    {"cuMemPrefetchAsync", reinterpret_cast<void *>(memPrefetchAsync)},
    {"cuEventCreate", reinterpret_cast<void *>(eventCreate)},
    {"cuEventRecord", reinterpret_cast<void *>(eventRecord)},
    {"cuEventSynchronize", reinterpret_cast<void *>(eventSynchronize)},
    {"cuEventElapsedTime", reinterpret_cast<void *>(eventElapsedTime)},
    {"cuMemsetD8", reinterpret_cast<void *>(memsetD8)},
    {"cuMemcpy", reinterpret_cast<void *>(memcpySync)},
    {"cuMemcpyAsync", reinterpret_cast<void *>(memcpyAsync)},
    {"cuStreamBeginCapture", reinterpret_cast<void *>(streamBeginCapture)},
    {"cuStreamEndCapture", reinterpret_cast<void *>(streamEndCapture)},
    {"cuGraphInstantiateWithFlags", reinterpret_cast<void *>(graphInstantiate)},
    {"cuGraphLaunch", reinterpret_cast<void *>(graphLaunch)},
    {"cuGraphGetNodes", reinterpret_cast<void *>(graphGetNodes)},
    {"cuGraphExecDestroy", reinterpret_cast<void *>(graphExecDestroy)},
    {"cuGraphDestroy", reinterpret_cast<void *>(graphDestroy)},
    {"cuThreadExchangeStreamCaptureMode",
     reinterpret_cast<void *>(exchangeCaptureMode)},
    {"cuGetErrorName", reinterpret_cast<void *>(getErrorName)},
    {"cuGetErrorString", reinterpret_cast<void *>(getErrorString)},
};

} // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult
cuGetProcAddress_v2(const char *symbol, void **pfn, int, cuuint64_t,
                    CUdriverProcAddressQueryResult *status) {
  auto it = kEntries.find(symbol);
  *pfn = it == kEntries.end() ? nullptr : it->second;
  if (status)
    *status = it == kEntries.end() ? CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
                                   : CU_GET_PROC_ADDRESS_SUCCESS;
  return it == kEntries.end() ? CUDA_ERROR_NOT_FOUND : CUDA_SUCCESS;
}

/// What ran so far (the tests' view of the mock).
__attribute__((visibility("default"))) void
anvilMockCounts(int64_t *kernelsRun, int64_t *graphLaunches,
                int64_t *captures) {
  *kernelsRun = counts.kernelsRun;
  *graphLaunches = counts.graphLaunches;
  *captures = counts.captures;
}

/// The bytes prefetched so far (cuMemPrefetchAsync).
__attribute__((visibility("default"))) int64_t anvilMockPrefetchedBytes() {
  return prefetchedBytes;
}

} // extern "C"
