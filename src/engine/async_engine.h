// The engine thread of DESIGN.md section 2: one thread owns the Engine and loops step();
// frontends (HTTP, gRPC, batch) submit requests and aborts through a locked queue and read each
// request's outputs from its RequestStream.
//
// Waking: the loop sleeps on a condition variable while the engine has nothing to do and no
// submission or abort is queued (no polling). Consumers either block in RequestStream::wait() or
// register a notify callback, which the engine thread calls (at most once per step per stream)
// after new events arrive; callbacks must be cheap and must not call back into the stream's
// set_notify (typical use: post a task to an event loop).
//
// Ownership: AsyncEngine keeps `owner` alive for its lifetime (the object that owns the Engine
// and everything the Engine borrows: a LocalEngine, or a distributed coordinator). How the
// Engine is made is the caller's business.
//
// Admission: submit() fails fast with ResourceExhausted when `max_waiting` requests are already
// waiting (queued here or waiting in the scheduler), and with Unavailable after stop() or after
// a step failed. The Engine's own validation (prompt past the context, bad sampling parameters)
// happens on the engine thread; its error arrives through the stream (status()).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/engine.h"

namespace weft {

struct StreamEvent {
  SequenceOutput output;
  std::chrono::steady_clock::time_point time;  // when the engine thread produced it
};

// One request's output stream. Written by the engine thread, read by any one consumer thread.
class RequestStream {
 public:
  struct Batch {
    std::vector<StreamEvent> events;
    bool admitted = false;  // the engine accepted the request (stays true once set)
    bool finished = false;  // every sequence has finished, or the request failed
    absl::Status status;    // not OK when the request failed (admission or engine error)
  };

  RequestStream(uint64_t key, int n, int64_t num_prompt_tokens);

  // Moves out the events that arrived since the last take().
  Batch take();
  // Blocks until take() would return something new (events, admission, the end) or `timeout`.
  void wait(std::chrono::milliseconds timeout);
  // Replaces the notify callback (nullptr to clear). After it returns the old callback is not
  // running and will not run again.
  void set_notify(std::function<void()> notify);

  uint64_t key() const { return key_; }
  int n() const { return n_; }
  int64_t num_prompt_tokens() const { return num_prompt_tokens_; }
  std::chrono::steady_clock::time_point submitted_at() const { return submitted_at_; }

 private:
  friend class AsyncEngine;
  void push(StreamEvent event);   // engine thread
  void admit();                   // engine thread
  void fail(absl::Status status); // engine thread
  void notify();                  // engine thread, after a batch of pushes

  const uint64_t key_;
  const int n_;
  const int64_t num_prompt_tokens_;
  const std::chrono::steady_clock::time_point submitted_at_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<StreamEvent> events_;
  bool admitted_ = false;
  bool admitted_reported_ = false;
  int num_finished_ = 0;
  bool done_ = false;
  bool done_reported_ = false;
  absl::Status status_;
  std::mutex notify_mu_;
  std::function<void()> notify_;
};

struct AsyncEngineOptions {
  int max_waiting = 0;  // 0: unbounded
};

// What /metrics and /ready read; published by the engine thread after every step.
struct EngineGauges {
  int num_running = 0;
  int num_waiting = 0;          // in the scheduler plus queued for admission
  int64_t num_kv_blocks = 0;
  int64_t num_free_kv_blocks = 0;
  int64_t num_steps = 0;
  int num_active_requests = 0;  // submitted and not yet finished
  bool healthy = true;          // false after a step failed
  bool speculating = false;     // speculative decoding is on
  SpeculationStats speculation;
  BannedPhraseStats banned_phrases;
  // Prefix cache (tokens) and the KV tiers below the pool (kv/kv_tier_directory.h).
  int64_t prefix_query_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  bool kv_tiers = false;
  KvTierStats kv_tier;
  int64_t kv_tier_block_bytes = 0;  // the coordinator's slice of one block
  std::optional<KvDiskTierStats> kv_disk;
};

class AsyncEngine {
 public:
  AsyncEngine(std::shared_ptr<void> owner, Engine& engine, AsyncEngineOptions options = {});
  ~AsyncEngine();  // stop() + join when start() was used
  AsyncEngine(const AsyncEngine&) = delete;
  AsyncEngine& operator=(const AsyncEngine&) = delete;

  // Thread-safe. Queues `request`; its outputs arrive on the returned stream.
  absl::StatusOr<std::shared_ptr<RequestStream>> submit(Request request);
  // Thread-safe. Ends the request (finish reason abort) and frees its KV blocks; a no-op for a
  // finished request. The stream receives the abort events.
  void abort(uint64_t key);

  // The step loop on the calling thread, until stop(). On return every unfinished stream has
  // failed with Unavailable.
  void run();
  // run() on a new thread (joined by the destructor).
  void start();
  // Thread-safe: makes run() return after the current step.
  void stop();

  EngineGauges gauges() const;

 private:
  struct Submission {
    std::shared_ptr<RequestStream> stream;
    Request request;
  };
  void admit(std::vector<Submission>& submissions);
  void dispatch(std::vector<SequenceOutput>& outputs);
  void fail_all(const absl::Status& status);
  void publish();

  std::shared_ptr<void> owner_;
  Engine& engine_;
  AsyncEngineOptions options_;
  std::thread thread_;

  mutable std::mutex mu_;  // guards the queues, stopping_ and gauges_
  std::condition_variable cv_;
  std::vector<Submission> submissions_;
  std::vector<uint64_t> aborts_;
  bool stopping_ = false;
  bool failed_ = false;
  EngineGauges gauges_;
  std::atomic<uint64_t> next_key_{1};

  // Engine thread only.
  std::unordered_map<uint64_t, std::shared_ptr<RequestStream>> by_key_;
  std::unordered_map<int64_t, uint64_t> key_of_request_;
  std::unordered_map<uint64_t, int64_t> request_of_key_;
};

}  // namespace weft
