#include "engine/mask_prefetcher.h"

#include <algorithm>

namespace weft {

MaskPrefetcher::MaskPrefetcher(int32_t words) : words_(words), worker_([this] { worker_loop(); }) {}

MaskPrefetcher::~MaskPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_all();
  worker_.join();
}

void MaskPrefetcher::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    const std::shared_ptr<Job> job = std::move(queue_.front());
    queue_.pop_front();
    if (job->state != State::kQueued) continue;  // claimed by take() or dropped meanwhile
    job->state = State::kRunning;
    lock.unlock();
    job->row.assign(static_cast<size_t>(words_), 0);
    absl::StatusOr<bool> result = job->constraint->fill_next_allowed(job->row);
    lock.lock();
    job->result = std::move(result);
    job->state = State::kDone;
    done_.notify_all();
  }
}

std::shared_ptr<MaskPrefetcher::Job> MaskPrefetcher::remove_locked(int64_t seq_id,
                                                                   std::unique_lock<std::mutex>& lock) {
  auto it = jobs_.find(seq_id);
  if (it == jobs_.end()) return nullptr;
  std::shared_ptr<Job> job = it->second;
  jobs_.erase(it);
  if (job->state == State::kQueued) job->state = State::kClaimed;  // the worker skips it
  done_.wait(lock, [&] { return job->state != State::kRunning; });
  return job;
}

void MaskPrefetcher::start(int64_t seq_id, uint64_t version, TokenConstraint* constraint) {
  auto job = std::make_shared<Job>();
  job->seq_id = seq_id;
  job->version = version;
  job->constraint = constraint;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    remove_locked(seq_id, lock);
    jobs_[seq_id] = job;
    queue_.push_back(job);
  }
  queued_.notify_one();
}

absl::StatusOr<bool> MaskPrefetcher::take(int64_t seq_id, uint64_t version, TokenConstraint& constraint,
                                          std::span<uint32_t> row) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    const std::shared_ptr<Job> job = remove_locked(seq_id, lock);
    if (job != nullptr && job->state == State::kDone && job->version == version &&
        job->constraint == &constraint) {
      ++num_prefetched_;
      lock.unlock();
      std::copy(job->row.begin(), job->row.end(), row.begin());
      return job->result;
    }
  }
  // No job, one not started yet (claimed above), or a stale one: fill it here.
  std::fill(row.begin(), row.end(), 0u);
  return constraint.fill_next_allowed(row);
}

void MaskPrefetcher::forget(int64_t seq_id) {
  std::unique_lock<std::mutex> lock(mutex_);
  remove_locked(seq_id, lock);
}

int64_t MaskPrefetcher::num_prefetched() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return num_prefetched_;
}

}  // namespace weft
