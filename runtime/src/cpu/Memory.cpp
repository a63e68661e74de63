//===- Memory.cpp - the counting allocator of generated code --------------===//
//
// Generated code allocates through these functions only for buffers the
// static memory plan could not place in the step's workspace. Each block
// carries a 64-byte header holding its size (64 keeps the payload aligned
// for vector loads), so frees can be counted; the counters are atomic
// because kernels may run on several threads.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/RuntimeABI.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace {

constexpr uint64_t kHeader = 64;
std::atomic<int64_t> allocated{0};
std::atomic<int64_t> peak{0};

void *allocate(uint64_t alignment, uint64_t bytes) {
  uint64_t align = std::max<uint64_t>(alignment, kHeader);
  uint64_t total = (kHeader + bytes + align - 1) / align * align;
  auto *block = static_cast<unsigned char *>(std::aligned_alloc(align, total));
  if (!block)
    return nullptr;
  std::memcpy(block, &bytes, sizeof bytes);
  int64_t now = allocated += static_cast<int64_t>(bytes);
  int64_t seen = peak.load();
  while (now > seen && !peak.compare_exchange_weak(seen, now)) {
  }
  return block + kHeader;
}

} // namespace

extern "C" void *_mlir_memref_to_llvm_alloc(uint64_t bytes) {
  return allocate(kHeader, bytes);
}

extern "C" void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment,
                                                    uint64_t bytes) {
  return allocate(alignment, bytes);
}

extern "C" void _mlir_memref_to_llvm_free(void *ptr) {
  if (!ptr)
    return;
  auto *block = static_cast<unsigned char *>(ptr) - kHeader;
  uint64_t bytes;
  std::memcpy(&bytes, block, sizeof bytes);
  allocated -= static_cast<int64_t>(bytes);
  std::free(block);
}

extern "C" int64_t anvil_rt_allocated_bytes(void) { return allocated.load(); }
extern "C" int64_t anvil_rt_peak_bytes(void) { return peak.load(); }
extern "C" void anvil_rt_reset_peak_bytes(void) { peak = allocated.load(); }
