//===- Parallel.cpp - the thread pool of generated CPU kernels ------------===//
//
// anvil_rt_parallel_for(n, fn, ctx) splits [0, n) into one contiguous chunk
// per thread (the same split every call, so results do not depend on
// timing) and runs fn(ctx, lo, hi) on each: chunk 0 on the calling thread,
// the others on persistent workers. Workers spin briefly for the next
// kernel (a step launches hundreds back to back), then sleep on a
// condition variable, so they cost nothing between steps or while BLAS
// runs.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/RuntimeABI.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include <cblas.h>

namespace {

using Kernel = void (*)(void *, int64_t, int64_t);

class Pool {
public:
  explicit Pool(int threads) : threads_(threads) {
    // Fewer threads than asked if the system refuses more.
    try {
      for (int t = 1; t < threads_; ++t)
        workers_.emplace_back([this, t] { work(t); });
    } catch (const std::system_error &) {
      threads_ = static_cast<int>(workers_.size()) + 1;
    }
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      ++generation_;
    }
    wake_.notify_all();
    for (std::thread &w : workers_)
      w.join();
  }
  int threads() const { return threads_; }

  void run(int64_t n, Kernel fn, void *ctx) {
    int parts = static_cast<int>(std::min<int64_t>(threads_, n));
    if (parts <= 1) {
      fn(ctx, 0, n);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn_ = fn;
      ctx_ = ctx;
      n_ = n;
      parts_ = parts;
      pending_.store(parts - 1);
      ++generation_;
    }
    wake_.notify_all();
    fn(ctx, 0, n / parts);
    while (pending_.load(std::memory_order_acquire) != 0)
      std::this_thread::yield();
  }

private:
  void work(int t) {
    uint64_t seen = 0;
    for (;;) {
      // Spin a little for the next kernel, then sleep.
      for (int i = 0; i < 4000 && generation_.load() == seen; ++i)
        std::this_thread::yield();
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      seen = generation_.load();
      if (stop_)
        return;
      Kernel fn = fn_;
      void *ctx = ctx_;
      int64_t n = n_;
      int parts = parts_;
      lock.unlock();
      if (t < parts) {
        fn(ctx, n * t / parts, n * (t + 1) / parts);
        pending_.fetch_sub(1, std::memory_order_release);
      }
    }
  }

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stop_ = false;
  Kernel fn_ = nullptr;
  void *ctx_ = nullptr;
  int64_t n_ = 0;
  int parts_ = 0;
};

int requestedThreads = 0;

Pool &pool() {
  static Pool p(requestedThreads > 0
                    ? requestedThreads
                    : static_cast<int>(
                          std::max(1u, std::thread::hardware_concurrency())));
  return p;
}

} // namespace

extern "C" void anvil_rt_parallel_for(int64_t n, Kernel fn, void *ctx) {
  pool().run(n, fn, ctx);
}

extern "C" void anvil_rt_set_num_threads(int32_t threads) {
  requestedThreads = threads;
  if (threads > 0)
    openblas_set_num_threads(threads);
}
