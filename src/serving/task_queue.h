// A fixed pool of threads running tasks in submission order (one FIFO queue). The HTTP server
// hands request parsing, templating and tokenization to it, so one large body never stalls the
// event loop. The destructor drops tasks not yet started and joins the threads after their
// current task.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace weft {

class TaskQueue {
 public:
  explicit TaskQueue(int num_threads);  // at least one thread
  ~TaskQueue();
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  // Queues `task`; thread-safe. It runs on one of the pool's threads.
  void run(std::function<void()> task);

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace weft
