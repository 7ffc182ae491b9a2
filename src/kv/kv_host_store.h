// One rank's host-memory tier: copies of its slice (its layers and KV heads) of whole KV blocks,
// keyed by prefix-cache hash, and the rank's side of the coordinator's tier instructions
// (kv/kv_transfer.h) against its KV pool (kv/kv_cache.h). What it holds is decided by the
// coordinator (kv/kv_tier_directory.h); the store only follows, so every rank holds the same
// hashes.
//
// A block's bytes are, layer by layer, its keys, its values and (int8 caches) their scales,
// block_bytes() = KvCacheShape::bytes_per_block(). Entries count their references: a save or a
// disk load of a hash whose earlier drop is still queued in the same plan keeps the entry alive
// through that drop.
//
// Host memory only: a device pool (--device cuda) has no store yet. Not thread-safe (the rank's
// step thread, or the engine thread in a single process).
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "kv/kv_cache.h"
#include "kv/kv_load_report.h"
#include "kv/kv_transfer.h"

namespace weft {

class KvDiskTier;
class KvDiskPrefetcher;

class KvHostStore {
 public:
  // Borrows `cache`, `disk` (null: no disk tier) and `prefetcher` (null: none; it reads ahead
  // from `disk`); all must outlive the store.
  explicit KvHostStore(const KvCache& cache, KvDiskTier* disk = nullptr, KvDiskPrefetcher* prefetcher = nullptr);

  int64_t block_bytes() const { return block_bytes_; }
  // Blocks a budget of `bytes` holds.
  int64_t blocks_fitting(int64_t bytes) const { return block_bytes_ > 0 ? bytes / block_bytes_ : 0; }
  int64_t num_blocks() const { return static_cast<int64_t>(entries_.size()); }
  int64_t bytes() const { return num_blocks() * block_bytes_; }
  bool contains(uint64_t hash) const { return entries_.count(hash) != 0; }

  // Performs `transfers` in order. Errors (naming the instruction) on a block outside the pool,
  // a restore or drop of a hash the store does not hold (or whose disk load missed on this rank),
  // or a persist or load without a disk tier: the coordinator and this rank disagree, which is a
  // bug. `report` (optional) receives this rank's outcome of each kLoad and whether its disk tier
  // still writes (kv/kv_load_report.h).
  absl::Status apply(const std::vector<KvTransfer>& transfers, KvLoadReport* report = nullptr);

  // Whether the disk tier's index names `hash`.
  bool disk_contains(uint64_t hash) const;
  // Reads the disk tier's block `hash` (verified) into the store, taking it from the prefetcher
  // when that read it already (a miss there is a miss). False on a miss. Single process: the
  // coordinator's lookup; multi-rank: a kLoad.
  bool load_from_disk(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);

  // Saves and restores performed so far and the seconds they took (read from any thread).
  struct CopyTiming {
    int64_t blocks = 0;
    double seconds = 0;
  };
  CopyTiming copy_timing() const {
    return {copied_blocks_.load(std::memory_order_relaxed), copy_nanos_.load(std::memory_order_relaxed) * 1e-9};
  }

  // The bytes of pool block `block` / writes them back (block_bytes() each).
  void copy_out(int32_t block, uint8_t* out) const;
  void copy_in(const uint8_t* in, int32_t block) const;

 private:
  struct Entry {
    std::vector<uint8_t> bytes;
    int refs = 0;
  };
  void put(uint64_t hash, std::vector<uint8_t> bytes);
  // A reference to `hash` without bytes (a kLoad that missed here), unless the store holds it.
  void put_missing(uint64_t hash);

  const KvCache& cache_;
  KvDiskTier* disk_;
  KvDiskPrefetcher* prefetcher_;
  int64_t block_bytes_;
  std::unordered_map<uint64_t, Entry> entries_;
  std::atomic<int64_t> copied_blocks_{0};
  std::atomic<int64_t> copy_nanos_{0};
};

}  // namespace weft
