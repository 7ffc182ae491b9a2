// The coordinator's picture of the KV tiers below the pool (plain data, no device, owned by the
// engine thread like the BlockManager that calls it).
//
// Host tier: which prefix-cache hashes the ranks' host stores hold (kv/kv_host_store.h), least
// recently used first, at most `host_capacity_blocks` (the job agrees on the minimum over ranks
// of what each rank's --kv-offload-bytes holds of its slice). When the pool evicts a cached block
// its KV moves down (a kSave) instead of disappearing; when the host tier is full its least
// recently used hash is dropped (a kDrop). A prefix lookup that misses the pool asks find(): a
// host hit, or a disk hit loaded (and verified) into the host store by the disk lookup, lets the
// BlockManager take a pool block and restore into it (a kRestore) instead of recomputing.
//
// Disk tier (optional, single process): every block the pool registers is also written to disk
// (a kPersist: the rank copies it and a writer thread writes the file, kv/kv_disk_tier.h), so the
// prefix survives the process. Lookups go through `disk_lookup`, which reads and checks the file;
// with a prefetcher (kv/kv_disk_prefetcher.h) prepare() has the file read on a background thread
// while its request waits, and the later lookup takes the bytes from memory.
//
// The instructions accumulate in order and leave with the next step plan (take_transfers());
// every rank performs them before that step's forward pass, which is before any later write into
// the same pool blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kv/kv_disk_prefetcher.h"
#include "kv/kv_disk_tier.h"
#include "kv/kv_transfer.h"

namespace weft {

// The disk tier as the coordinator reaches it (single process).
struct KvDiskLookup {
  // Cheap: whether the disk tier's index names `hash` (a later load may still miss).
  std::function<bool(uint64_t hash)> contains;
  // Reads block `hash` (naming the prefix parent + tokens) into the host store; false on any
  // miss (absent, corrupt, truncated, another model's, a different prefix).
  std::function<bool(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens)> load;
  // Optional (borrowed): reads ahead what `load` will want; `load` takes from it first.
  KvDiskPrefetcher* prefetcher = nullptr;
  explicit operator bool() const { return static_cast<bool>(load); }
};

struct KvTierStats {
  int64_t host_capacity_blocks = 0;
  int64_t host_blocks = 0;        // hashes the host tier holds now
  int64_t host_query_blocks = 0;  // pool misses looked up in the host tier
  int64_t host_hit_blocks = 0;
  int64_t disk_query_blocks = 0;  // host misses looked up on disk
  int64_t disk_hit_blocks = 0;
  int64_t saved_blocks = 0;       // pool evictions copied down (kSave)
  int64_t dropped_blocks = 0;     // host evictions (kDrop)
  int64_t restored_blocks = 0;    // kRestore
  int64_t persisted_blocks = 0;   // kPersist
};

// Whether a tier can restore a block without a file read on the engine thread (prepare()).
enum class TierReadiness {
  kReady,    // the host tier holds it, its prefetch is done, or find() will read it (prefetch refused)
  kPending,  // its disk read is under way
  kAbsent,   // no tier holds it
};

class KvTierDirectory {
 public:
  // `host_capacity_blocks` may be 0 (no host tier: a disk hit is then staged in the host store
  // only until its restore). `block_bytes`: the coordinator's slice of a block (for reports).
  // `disk_lookup` empty: no disk tier; `disk` (borrowed, may be null) reports its statistics.
  KvTierDirectory(int64_t host_capacity_blocks, int64_t block_bytes, KvDiskLookup disk_lookup = {},
                  const KvDiskTier* disk = nullptr);

  bool has_disk() const { return static_cast<bool>(disk_lookup_); }
  int64_t block_bytes() const { return block_bytes_; }
  // The disk tier's statistics (nullopt without one).
  std::optional<KvDiskTierStats> disk_stats() const;
  // The prefetcher's statistics (zeros without one).
  KvDiskPrefetchStats prefetch_stats() const;

  // The pool evicts cached `block` holding the prefix `hash` (parent + tokens).
  void on_pool_evict(int32_t block, uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);
  // The pool registered `block` (its KV computed) under `hash`: persisted with a disk tier.
  void on_pool_cached(int32_t block, uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);
  // Cheap and changing nothing: whether a tier may hold `hash` (find() may still miss).
  bool may_hold(uint64_t hash) const;
  // Whether a tier can supply `hash` for this prefix; a hit becomes the host tier's most recent.
  bool find(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);
  // After find() said yes: restores `hash` into pool `block`.
  void restore(uint64_t hash, int32_t block);

  // --- prefetch (a disk tier with a prefetcher) ---
  bool prefetches() const { return disk_lookup_.prefetcher != nullptr; }
  // Changes nothing but the prefetcher's queue: where a later find() of `hash` would stand, and
  // a disk read of it started when the disk tier names it.
  TierReadiness prepare(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);
  // Whether a prefetch is under way / blocks until one finishes (nothing else to do).
  bool prefetch_pending() const;
  void wait_for_prefetch();
  // Throws away prefetched blocks nobody prepared since the previous call (KvDiskPrefetcher).
  void end_prefetch_round();

  // The instructions since the last call, in order (for the next step plan).
  std::vector<KvTransfer> take_transfers();
  bool has_transfers() const { return !transfers_.empty(); }
  const KvTierStats& stats() const { return stats_; }

 private:
  struct Entry {
    uint64_t parent = 0;
    std::vector<int32_t> tokens;
    std::list<uint64_t>::iterator lru;
  };
  bool entry_matches(const Entry& e, uint64_t parent, std::span<const int32_t> tokens) const;
  // Adds `hash` as the most recent entry; drops the least recent ones past the capacity.
  void insert(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);
  void touch(Entry& e, uint64_t hash);
  void drop_over_capacity();

  int64_t capacity_;
  int64_t block_bytes_;
  KvDiskLookup disk_lookup_;
  const KvDiskTier* disk_;
  std::list<uint64_t> lru_;  // least recently used first
  std::unordered_map<uint64_t, Entry> entries_;
  std::vector<KvTransfer> transfers_;
  KvTierStats stats_;
};

// One line for people: each tier's blocks, bytes and hits / lookups, the disk misses by reason.
std::string kv_tier_summary(const KvTierDirectory& tiers);

}  // namespace weft
