// A fixed pool of kernel threads serving the forward pass (DESIGN.md section 2, "Threads").
//
// `parallel_for(n, fn)` splits [0, n) into contiguous chunks, runs fn(begin, end) on the pool's
// workers and the calling thread, and returns when every chunk is done. One parallel_for runs at
// a time per pool (the forward pass is a single caller); nested calls run inline.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace weft {

class ThreadPool {
 public:
  // `num_threads` counts the caller: 1 means everything runs inline. 0 means hardware threads.
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(begin, end) over [0, n) in chunks of at least `min_chunk` items.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                    int64_t min_chunk = 1);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  // Current job, published under mutex_ with a new generation number.
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_chunk_ = 0;
  uint64_t generation_ = 0;
  std::atomic<int64_t> next_chunk_{0};
  int pending_workers_ = 0;
  bool stopping_ = false;
  bool in_job_ = false;
};

}  // namespace weft
