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
// Disk tier (optional): every block the pool registers is also written to disk (a kPersist: each
// rank copies its slice and a writer thread writes the file, kv/kv_disk_tier.h), so the prefix
// survives the process. Single process, lookups go through `disk_lookup`, which reads and checks
// the file; with a prefetcher (kv/kv_disk_prefetcher.h) prepare() has the file read on a
// background thread while its request waits, and the later lookup takes the bytes from memory.
// Multi-rank (`KvDiskLookup::agreement_max_blocks` > 0), a disk hit is only ever planned once
// every rank has loaded the block (kv/kv_disk_agreement.h): prepare() reads ahead on the
// coordinator (its prefetcher, if any), then sends a kLoad to every rank and keeps the request
// waiting until the step's report (on_load_report()) says every rank has it; find() then takes
// it. A block missing or bad on any rank is a miss on all. A report that some rank's disk tier
// stopped writing turns the disk tier off for the job.
//
// The instructions accumulate in order and leave with the next step plan (take_transfers());
// every rank performs them before that step's forward pass, which is before any later write into
// the same pool blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "kv/kv_disk_agreement.h"
#include "kv/kv_disk_prefetcher.h"
#include "kv/kv_disk_tier.h"
#include "kv/kv_load_report.h"
#include "kv/kv_transfer.h"

namespace weft {

// The disk tier as the coordinator reaches it (its own rank's).
struct KvDiskLookup {
  // Cheap: whether the disk tier's index names `hash` (a later load may still miss).
  std::function<bool(uint64_t hash)> contains;
  // Single process: reads block `hash` (naming the prefix parent + tokens) into the host store;
  // false on any miss (absent, corrupt, truncated, another model's, a different prefix).
  std::function<bool(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens)> load;
  // Optional (borrowed): reads ahead what a load will want; the load takes from it first.
  KvDiskPrefetcher* prefetcher = nullptr;
  // Multi-rank: > 0, every disk hit is agreed by all ranks first (`load` unused) and at most this
  // many blocks are held in the ranks' stores for it (kv/kv_disk_agreement.h).
  int64_t agreement_max_blocks = 0;
  explicit operator bool() const { return static_cast<bool>(contains); }
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
  // Multi-rank disk hits are agreed by every rank (KvDiskLookup::agreement_max_blocks).
  bool agrees_disk_hits() const { return agreement_ != nullptr; }
  int64_t block_bytes() const { return block_bytes_; }
  // The disk tier's statistics (nullopt without one); `enabled` is false once a rank's tier
  // stopped writing.
  std::optional<KvDiskTierStats> disk_stats() const;
  // The agreement's statistics (multi-rank; nullopt otherwise).
  std::optional<KvDiskAgreementStats> agreement_stats() const;
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

  // --- prefetch (a disk tier with a prefetcher, or agreed disk hits) ---
  bool prefetches() const { return reads_ahead() || agreement_ != nullptr; }
  // Whether this rank reads disk blocks ahead on a background thread (KvDiskPrefetcher).
  bool reads_ahead() const { return disk_lookup_.prefetcher != nullptr; }
  // Changes nothing but the prefetcher's queue: where a later find() of `hash` would stand, and
  // a disk read of it started when the disk tier names it.
  TierReadiness prepare(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);
  // Whether a prefetch is under way / blocks until one finishes (nothing else to do).
  bool prefetch_pending() const;
  void wait_for_prefetch();
  // Throws away prefetched (and agreed) blocks nobody prepared since the previous call.
  void end_prefetch_round();

  // --- multi-rank disk hits ---
  // Whether the pending instructions load from disk: the engine sends them even in a plan with
  // nothing else to run (a sequence waits for them).
  bool has_pending_loads() const;
  // The job's report (kv/kv_load_report.h) on a collected plan whose instructions were
  // `plan_transfers`. A no-op single process or when the plan needs none; errors when one is
  // needed and missing or does not fit the plan.
  absl::Status on_load_report(const std::vector<KvTransfer>& plan_transfers,
                              const std::optional<KvLoadReport>& report);

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
  bool disk_usable() const { return static_cast<bool>(disk_lookup_) && !disk_off_; }
  TierReadiness prepare_agreed(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);

  int64_t capacity_;
  int64_t block_bytes_;
  KvDiskLookup disk_lookup_;
  const KvDiskTier* disk_;
  std::unique_ptr<KvDiskAgreement> agreement_;  // multi-rank
  bool disk_off_ = false;                       // a rank's disk tier stopped writing
  std::list<uint64_t> lru_;  // least recently used first
  std::unordered_map<uint64_t, Entry> entries_;
  std::vector<KvTransfer> transfers_;
  KvTierStats stats_;
};

// One line for people: each tier's blocks, bytes and hits / lookups, the disk misses by reason.
std::string kv_tier_summary(const KvTierDirectory& tiers);

}  // namespace weft
