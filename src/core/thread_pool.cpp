#include "core/thread_pool.h"

#include <algorithm>

namespace weft {

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
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
  // A few chunks per thread balance uneven work without much scheduling overhead.
  int64_t chunk = std::max(min_chunk, (n + threads * 4 - 1) / (threads * 4));
  if (n <= threads * min_chunk) chunk = (n + threads - 1) / threads;
  chunk = std::max(chunk, min_chunk);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    job_chunk_ = chunk;
    next_chunk_.store(0, std::memory_order_relaxed);
    pending_workers_ = static_cast<int>(workers_.size());
    in_job_ = true;
    ++generation_;
  }
  wake_.notify_all();
  for (;;) {
    const int64_t begin = next_chunk_.fetch_add(chunk, std::memory_order_relaxed);
    if (begin >= n) break;
    fn(begin, std::min(n, begin + chunk));
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return pending_workers_ == 0; });
  job_ = nullptr;
  in_job_ = false;
}

void ThreadPool::worker_loop(int) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n, chunk;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
      chunk = job_chunk_;
    }
    for (;;) {
      const int64_t begin = next_chunk_.fetch_add(chunk, std::memory_order_relaxed);
      if (begin >= n) break;
      (*job)(begin, std::min(n, begin + chunk));
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_workers_ == 0) done_.notify_one();
    }
  }
}

}  // namespace weft
