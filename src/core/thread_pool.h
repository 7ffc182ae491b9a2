// A fixed pool of kernel threads serving the forward pass (DESIGN.md section 2, "Threads").
//
// `parallel_for(n, fn)` splits [0, n) into contiguous chunks, runs fn(begin, end) on the pool's
// workers and the calling thread, and returns when every chunk is done. One parallel_for runs at
// a time per pool (the forward pass is a single caller); nested calls run inline.
//
// Hand-off: a decode step is a few hundred short parallel_for calls (tens of microseconds each),
// so waking sleeping workers through the kernel for each would cost about as much as the work.
// After a job, workers (and the caller, waiting for them) spin for up to `spin` on the job
// counter; only then do they sleep on a condition variable. Between steps and when idle the
// pool sleeps, so a spin costs at most `spin` of one core per thread after the last job.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace weft {

// Threads a pool of `0` threads gets: the CPUs this process may run on (its affinity mask, so
// taskset, cgroup cpusets and MPI/Slurm core binding count), shared among the ranks that
// OpenMPI says run on this host when they are not bound to their own cores. At least 1.
int default_thread_count();

class ThreadPool {
 public:
  // How long idle threads spin before sleeping, unless the pool is told otherwise.
  static constexpr std::chrono::microseconds kDefaultSpin{200};

  // `num_threads` counts the caller: 1 means everything runs inline. 0 means
  // default_thread_count(). `spin` 0 sleeps at once (the old behaviour).
  explicit ThreadPool(int num_threads = 0, std::chrono::microseconds spin = kDefaultSpin);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(begin, end) over [0, n): inline when n <= min_chunk; else in chunks of at least
  // `min_chunk` items, or, when n is at most min_chunk per thread, in one even chunk per thread.
  // `min_chunk` is a cost threshold (items worth a hand-off), never needed for correctness.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                    int64_t min_chunk = 1);

 private:
  void worker_loop();
  // Waits until the job counter differs from `seen` (or the pool stops); returns the counter.
  uint64_t wait_for_job(uint64_t seen);
  void wait_for_workers();
  void run_chunks(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int64_t chunk);

  const std::chrono::microseconds spin_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;  // workers sleeping for a job
  std::condition_variable done_;  // the caller sleeping for the workers
  // The current job: written by the caller before it bumps generation_ (release); read by a
  // worker after it sees the new generation (acquire). The caller changes them only once every
  // worker has finished the previous job (pending_workers_ == 0).
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_chunk_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int64_t> next_chunk_{0};
  std::atomic<int> pending_workers_{0};
  // Sleepers announce themselves before their last check (sequentially consistent on both
  // sides), so a notifier either sees them or they see its change: no lost wake-up.
  std::atomic<int> sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stopping_{false};
  bool in_job_ = false;  // touched by the calling thread only
};

}  // namespace weft
