// Failure detection for engine steps: a background thread that, while armed with (step id,
// deadline), calls an expiry action if the step is not disarmed in time. In an MPI job the
// action is MpiWorld::abort (see MpiWorld::make_watchdog), which kills every rank: a rank stuck
// in a collective because a peer hung cannot otherwise get out.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace weft {

class StepWatchdog {
 public:
  // Called on the watchdog thread with "rank R: step S exceeded its deadline of N s". In
  // production it does not return (it aborts the job); if it does, the watchdog is disarmed.
  using ExpireFn = std::function<void(const std::string& message)>;

  // `rank` is only used in the message. Starts the thread (unarmed).
  StepWatchdog(int rank, ExpireFn on_expire);
  // Stops and joins the thread without calling the action.
  ~StepWatchdog();
  StepWatchdog(const StepWatchdog&) = delete;
  StepWatchdog& operator=(const StepWatchdog&) = delete;

  // Arms for `step_id`, due `deadline` from now; replaces any earlier arming.
  void arm(int64_t step_id, std::chrono::milliseconds deadline);
  // Disarms; the action will not run for the current arming (unless it is already running).
  void disarm();
  // How many times the action has run.
  int64_t expirations() const;

  // The message the action receives (exposed for tests and for logs).
  static std::string expiry_message(int rank, int64_t step_id,
                                    std::chrono::milliseconds deadline);

 private:
  void loop();

  const int rank_;
  const ExpireFn on_expire_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool armed_ = false;
  uint64_t generation_ = 0;  // bumped by every arm/disarm so a stale wait does not fire
  int64_t step_id_ = 0;
  std::chrono::milliseconds deadline_{0};
  std::chrono::steady_clock::time_point due_;
  int64_t expirations_ = 0;
  std::thread thread_;
};

}  // namespace weft
