#include "core/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// Spins until `ready()` or `budget` has passed; returns whether it became ready. Checks the
// clock every few dozen pauses. It does not sched_yield: under CFS a yield hands the core to
// any runnable thread, niced ones included, for a whole time slice (measured: 8.7 ms per
// hand-off with a niced build running beside it, against 52 us for sleeping at once).
template <typename Ready>
bool spin_until(const Ready& ready, std::chrono::microseconds budget) {
  if (budget.count() <= 0) return ready();
  const Clock::time_point deadline = Clock::now() + budget;
  for (;;) {
    for (int i = 0; i < 32; ++i) {
      if (ready()) return true;
      cpu_relax();
    }
    if (Clock::now() >= deadline) return ready();
  }
}

}  // namespace

int default_thread_count() {
  cpu_set_t set;
  int cpus = 0;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  if (cpus <= 0) cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Ranks that OpenMPI did not bind to cores of their own (--oversubscribe, --bind-to none)
  // all see the whole host: give each its share rather than every rank a thread per core.
  const int host_cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"); local && cpus >= host_cpus) {
    const int ranks = std::atoi(local);
    if (ranks > 1) cpus = cpus / ranks;
  }
  return std::max(1, cpus);
}

ThreadPool::ThreadPool(int num_threads, std::chrono::microseconds spin) : spin_(spin) {
  if (num_threads <= 0) num_threads = default_thread_count();
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks(const std::function<void(int64_t, int64_t)>& fn, int64_t n,
                            int64_t chunk) {
  for (;;) {
    const int64_t begin = next_chunk_.fetch_add(chunk, std::memory_order_relaxed);
    if (begin >= n) break;
    fn(begin, std::min(n, begin + chunk));
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                              int64_t min_chunk) {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(1, min_chunk);
  const int64_t threads = num_threads();
  if (threads == 1 || n <= min_chunk || in_job_) {
    fn(0, n);
    return;
  }
  // A few chunks per thread balance uneven work without much scheduling overhead. Work too small
  // for a chunk of min_chunk per thread is split evenly: min_chunk items to one thread and the
  // rest to another would leave the step waiting on min_chunk items rather than n / threads (the
  // default model's down_proj at batch 1: 8 tasks of min_chunk 5 went 5 + 3; 4 + 4 decodes 3-4%
  // faster).
  int64_t chunk = std::max(min_chunk, (n + threads * 4 - 1) / (threads * 4));
  if (n <= threads * min_chunk) chunk = (n + threads - 1) / threads;

  in_job_ = true;
  job_ = &fn;
  job_n_ = n;
  job_chunk_ = chunk;
  next_chunk_.store(0, std::memory_order_relaxed);
  pending_workers_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1);  // seq_cst: publishes the job, ordered before the sleeper check
  if (sleeping_workers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_all();
  }
  run_chunks(fn, n, chunk);
  wait_for_workers();
  job_ = nullptr;
  in_job_ = false;
}

void ThreadPool::wait_for_workers() {
  const auto done = [this] { return pending_workers_.load(std::memory_order_acquire) == 0; };
  if (spin_until(done, spin_)) return;
  std::unique_lock<std::mutex> lock(mutex_);
  caller_sleeping_.store(true);
  done_.wait(lock, [this] { return pending_workers_.load() == 0; });
  caller_sleeping_.store(false);
}

uint64_t ThreadPool::wait_for_job(uint64_t seen) {
  uint64_t g = seen;
  const auto changed = [&] {
    g = generation_.load(std::memory_order_acquire);
    return g != seen;
  };
  if (spin_until(changed, spin_)) return g;
  std::unique_lock<std::mutex> lock(mutex_);
  sleeping_workers_.fetch_add(1);
  wake_.wait(lock, [&] { return generation_.load() != seen; });
  sleeping_workers_.fetch_sub(1);
  return generation_.load(std::memory_order_acquire);
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    seen = wait_for_job(seen);
    if (stopping_.load()) return;
    run_chunks(*job_, job_n_, job_chunk_);
    if (pending_workers_.fetch_sub(1) == 1 && caller_sleeping_.load()) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
    }
  }
}

}  // namespace weft
