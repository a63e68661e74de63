//===- Memory.cpp - the counting allocator of generated code --------------===//
//
// Generated code allocates through these functions only for buffers the
// static memory plan could not place in the step's workspace. Each block
// carries a header (at least 64 bytes, as large as the alignment asked
// for) holding its size, so frees can be counted; the counters are atomic
// because kernels may run on several threads.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Dist.h"
#include "anvil/runtime/RuntimeABI.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace {

std::atomic<int64_t> allocated{0};
std::atomic<int64_t> peak{0};

// A block is [header][payload]: the header is `align` bytes (at least 64,
// a power of two), so the payload keeps the requested alignment; the
// payload size and the header size sit in the 16 bytes before it.
void *allocate(uint64_t alignment, uint64_t bytes) {
  uint64_t align = 64;
  while (align < alignment)
    align *= 2;
  if (bytes > (uint64_t(1) << 62) - 2 * align)
    return nullptr;
  uint64_t total = (align + bytes + align - 1) / align * align;
  auto *block =
      static_cast<unsigned char *>(anvil_rt_buffer_alloc(align, total));
  if (!block)
    return nullptr;
  unsigned char *payload = block + align;
  std::memcpy(payload - 8, &bytes, sizeof bytes);
  std::memcpy(payload - 16, &align, sizeof align);
  int64_t now = allocated += static_cast<int64_t>(bytes);
  int64_t seen = peak.load();
  while (now > seen && !peak.compare_exchange_weak(seen, now)) {
  }
  return payload;
}

} // namespace

extern "C" void *_mlir_memref_to_llvm_alloc(uint64_t bytes) {
  return allocate(64, bytes);
}

extern "C" void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment,
                                                    uint64_t bytes) {
  return allocate(alignment, bytes);
}

extern "C" void _mlir_memref_to_llvm_free(void *ptr) {
  if (!ptr)
    return;
  auto *payload = static_cast<unsigned char *>(ptr);
  uint64_t bytes, align;
  std::memcpy(&bytes, payload - 8, sizeof bytes);
  std::memcpy(&align, payload - 16, sizeof align);
  allocated -= static_cast<int64_t>(bytes);
  anvil_rt_buffer_free(payload - align);
}

// Host memory; weak, for a device library to replace (RuntimeABI.h).
extern "C" __attribute__((weak)) void *anvil_rt_buffer_alloc(uint64_t alignment,
                                                             uint64_t bytes) {
  uint64_t align = alignment < 64 ? 64 : alignment;
  uint64_t total = (std::max<uint64_t>(bytes, 1) + align - 1) / align * align;
  return std::aligned_alloc(align, total);
}

extern "C" __attribute__((weak)) void anvil_rt_buffer_free(void *ptr) {
  std::free(ptr);
}

extern "C" __attribute__((weak)) void *
anvil_rt_workspace_alloc(uint64_t bytes) {
  void *p = anvil_rt_buffer_alloc(64, bytes);
  if (p)
    std::memset(p, 0, std::max<uint64_t>(bytes, 1));
  return p;
}

extern "C" __attribute__((weak)) void anvil_rt_workspace_free(void *ptr) {
  anvil_rt_buffer_free(ptr);
}

extern "C" __attribute__((weak)) void
anvil_rt_device_copy(void *dst, const void *src, uint64_t bytes) {
  std::memmove(dst, src, bytes);
}

extern "C" __attribute__((weak)) void anvil_rt_begin_step(int64_t) {}

extern "C" __attribute__((weak)) void anvil_rt_device_synchronize(void) {}

extern "C" __attribute__((weak)) void
anvil_rt_run_step(anvil_rt_step_fn step, void **args, int64_t, void **results,
                  int64_t, void *workspace, int32_t) {
  step(args, results, workspace);
}

extern "C" int64_t anvil_rt_allocated_bytes(void) { return allocated.load(); }
extern "C" int64_t anvil_rt_peak_bytes(void) { return peak.load(); }
extern "C" void anvil_rt_reset_peak_bytes(void) { peak = allocated.load(); }

extern "C" __attribute__((weak)) const char *anvil_rt_device_open(void) {
  return nullptr;
}

extern "C" __attribute__((weak)) const char *anvil_rt_device_description(void) {
  return "";
}

extern "C" __attribute__((weak)) int64_t anvil_rt_device_memory_used(void) {
  return -1;
}

extern "C" __attribute__((weak)) void anvil_rt_device_stage(const void *,
                                                            uint64_t) {}

extern "C" __attribute__((weak)) double anvil_rt_device_step_seconds(void) {
  return -1;
}

__attribute__((weak)) std::unique_ptr<anvil::rt::Communicator>
anvil::rt::deviceAxisCommunicator(std::unique_ptr<Communicator> axis) {
  return axis;
}
