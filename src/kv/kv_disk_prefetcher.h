// Reads disk-tier blocks into memory on a background thread while the request that wants them
// waits in the scheduler's queue, so that restoring them later is a memory copy and no step
// waits for a file (issue 19: copies off the step's critical path).
//
// Per block hash, the state machine is
//     request() -> kQueued -> (reader thread) -> kReady (payload held) | kMissed
//     take() of kReady/kMissed ends it; end_round() ends every entry not requested since the
//     previous end_round() (its request went away: finished, aborted, or admitted from the pool).
// A request past `max_bytes` of queued and ready payloads is kRefused (not queued: the caller
// reads that block itself when it needs it), so memory stays bounded whatever waits.
// take() of a block still queued or being read cancels it and says kNotFetched (the caller reads
// it itself; the reader's late result is thrown away).
//
// Thread-safe: the engine thread requests and takes, one reader thread reads through `read`
// (production: KvDiskTier::load, which checks every byte; tests pass their own).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

namespace weft {

struct KvDiskPrefetchStats {
  int64_t requested = 0;  // blocks queued
  int64_t read = 0;       // read and checked by the reader thread
  int64_t missed = 0;     // the reader's read failed (absent, corrupt, ...)
  int64_t refused = 0;    // past max_bytes
  int64_t served = 0;     // taken ready: restored without a read on the engine thread
  int64_t not_fetched = 0;  // taken before (or without) a prefetch: the caller read it
  int64_t discarded = 0;  // ended unclaimed by end_round()
};

class KvDiskPrefetcher {
 public:
  // Reads block `hash` of the prefix (`parent`, `tokens`); nullopt on any miss.
  using ReadFn =
      std::function<std::optional<std::vector<uint8_t>>(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens)>;
  enum class State { kQueued, kReady, kMissed, kRefused };
  enum class Taken { kReady, kMissed, kNotFetched };

  // `block_bytes`: one payload; `max_bytes`: what queued and ready payloads may hold together.
  KvDiskPrefetcher(ReadFn read, int64_t block_bytes, int64_t max_bytes);
  // Finishes the read in progress, drops everything else.
  ~KvDiskPrefetcher();
  KvDiskPrefetcher(const KvDiskPrefetcher&) = delete;
  KvDiskPrefetcher& operator=(const KvDiskPrefetcher&) = delete;

  // Asks for block `hash` (a no-op but for marking it wanted when already known) and says where
  // it stands.
  State request(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);
  // Ends `hash`'s entry: kReady moves its payload into `out`.
  Taken take(uint64_t hash, std::vector<uint8_t>& out);
  // Ends the entries not requested since the previous call.
  void end_round();
  // Whether a block is queued or being read.
  bool pending() const;
  // Blocks until a read finishes or nothing is pending.
  void wait_for_progress();

  KvDiskPrefetchStats stats() const;
  int64_t bytes() const;

 private:
  struct Entry {
    State state = State::kQueued;
    uint64_t serial = 0;  // tells a re-request apart from an ended entry's late read
    uint64_t parent = 0;
    std::vector<int32_t> tokens;
    std::vector<uint8_t> payload;
    bool wanted = true;  // requested in this round
  };
  void reader_loop();
  void end_locked(std::unordered_map<uint64_t, Entry>::iterator it);

  ReadFn read_;
  int64_t block_bytes_;
  int64_t max_bytes_;
  mutable std::mutex mu_;
  std::condition_variable wake_, progress_;
  std::unordered_map<uint64_t, Entry> entries_;
  std::deque<std::pair<uint64_t, uint64_t>> queue_;  // (hash, serial), oldest request first
  int64_t held_bytes_ = 0;                           // queued and ready entries
  int64_t num_pending_ = 0;                          // queued entries, the one being read included
  uint64_t next_serial_ = 1;
  uint64_t completed_ = 0;
  bool stop_ = false;
  KvDiskPrefetchStats stats_;
  std::thread reader_;
};

}  // namespace weft
