// Next-token masks of constrained sequences filled ahead, on a thread of their own, while the
// step that will sample them runs its forward pass (DESIGN.md section 2: the kernel pool is busy
// with the forward then, and one parallel_for runs at a time per pool, so the masks need another
// thread).
//
// The engine starts a sequence's job when it submits a plan in which the sequence samples: its
// constraint is then in the state after its last accepted token, which is the state the mask of
// that sample needs. Sampling takes the mask: a finished job's, the running job's once it is done,
// or -- a job not started yet -- it claims the job and fills the mask itself (on the kernel pool,
// like before), so the worst case is no overlap, never a wait for a queue.
//
// Contract with the engine: between start(seq, ...) and the take() or forget() of that sequence,
// nobody else touches its constraint (the engine accepts tokens only after sampling, and plans in
// flight together hold disjoint sequences). Each job carries the constraint's version (the
// engine counts its accepts and rollbacks); take() refills when the versions differ, so a stale
// mask is never used. Thread-safe: take() for distinct sequences may run concurrently.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "sampling/token_constraint.h"

namespace weft {

class MaskPrefetcher {
 public:
  // Masks of `words` 32-bit words (mask_words(vocab)).
  explicit MaskPrefetcher(int32_t words);
  // Waits for the job in progress; queued jobs are dropped.
  ~MaskPrefetcher();
  MaskPrefetcher(const MaskPrefetcher&) = delete;
  MaskPrefetcher& operator=(const MaskPrefetcher&) = delete;

  // Queues the mask of `constraint` in its current state for sequence `seq_id` (replacing an
  // earlier job of the sequence, after it finished).
  void start(int64_t seq_id, uint64_t version, TokenConstraint* constraint);
  // Writes the mask of `constraint` (at `version`) into `row` (words() words) and returns what
  // TokenConstraint::fill_next_allowed returns; the sequence's job is done with.
  absl::StatusOr<bool> take(int64_t seq_id, uint64_t version, TokenConstraint& constraint, std::span<uint32_t> row);
  // Drops the sequence's job (waiting for it when running): call before its constraint changes
  // other than by sampling, or goes away.
  void forget(int64_t seq_id);

  int32_t words() const { return words_; }
  // Masks taken that the worker had finished or was filling (the rest were filled by take()).
  int64_t num_prefetched() const;

 private:
  enum class State { kQueued, kRunning, kDone, kClaimed };
  struct Job {
    int64_t seq_id = 0;
    uint64_t version = 0;
    TokenConstraint* constraint = nullptr;
    State state = State::kQueued;
    std::vector<uint32_t> row;
    absl::StatusOr<bool> result = false;
  };
  void worker_loop();
  // Removes the sequence's job, waiting while it runs; returns it (null: none). Holds `lock`.
  std::shared_ptr<Job> remove_locked(int64_t seq_id, std::unique_lock<std::mutex>& lock);

  const int32_t words_;
  mutable std::mutex mutex_;
  std::condition_variable queued_;  // the worker waits for jobs
  std::condition_variable done_;    // take()/forget() wait for a running job
  std::map<int64_t, std::shared_ptr<Job>> jobs_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  int64_t num_prefetched_ = 0;
  std::thread worker_;  // last: started after every other member exists
};

}  // namespace weft
