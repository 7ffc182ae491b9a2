#include "parallel/step_watchdog.h"

#include "absl/strings/str_cat.h"

namespace weft {

StepWatchdog::StepWatchdog(int rank, ExpireFn on_expire)
    : rank_(rank), on_expire_(std::move(on_expire)) {
  thread_ = std::thread([this] { loop(); });
}

StepWatchdog::~StepWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void StepWatchdog::arm(int64_t step_id, std::chrono::milliseconds deadline) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = true;
    ++generation_;
    step_id_ = step_id;
    deadline_ = deadline;
    due_ = std::chrono::steady_clock::now() + deadline;
  }
  cv_.notify_all();
}

void StepWatchdog::disarm() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = false;
    ++generation_;
  }
  cv_.notify_all();
}

int64_t StepWatchdog::expirations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return expirations_;
}

std::string StepWatchdog::expiry_message(int rank, int64_t step_id,
                                         std::chrono::milliseconds deadline) {
  return absl::StrCat("rank ", rank, ": step ", step_id, " exceeded its deadline of ",
                      static_cast<double>(deadline.count()) / 1000.0, " s");
}

void StepWatchdog::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (!armed_) {
      cv_.wait(lock, [this] { return stop_ || armed_; });
      continue;
    }
    const uint64_t generation = generation_;
    const auto due = due_;
    const bool changed = cv_.wait_until(
        lock, due, [this, generation] { return stop_ || generation_ != generation; });
    if (changed) continue;
    // Still the same arming and past its due time: fire once, outside the lock so the action
    // (or a disarm racing with it) cannot deadlock against us.
    armed_ = false;
    ++expirations_;
    const std::string message = expiry_message(rank_, step_id_, deadline_);
    lock.unlock();
    on_expire_(message);
    lock.lock();
  }
}

}  // namespace weft
