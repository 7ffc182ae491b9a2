// Builds one rank's KV tiers below its pool from --kv-offload-bytes / --kv-disk-cache /
// --kv-disk-bytes (kv/kv_host_store.h, kv/kv_disk_tier.h), and the coordinator's directory of
// them (kv/kv_tier_directory.h). Shared by the single-process and the distributed engine.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "absl/status/statusor.h"
#include "kv/kv_cache.h"
#include "kv/kv_disk_prefetcher.h"
#include "kv/kv_disk_tier.h"
#include "kv/kv_host_store.h"
#include "kv/kv_tier_directory.h"

namespace weft {

struct KvTierOptions {
  int64_t host_bytes = 0;          // --kv-offload-bytes: this rank's host tier budget (0: none)
  std::filesystem::path disk_dir;  // --kv-disk-cache (empty: no disk tier)
  int64_t disk_bytes = 8ll << 30;  // --kv-disk-bytes
  // Memory the disk prefetcher may hold (blocks read ahead for waiting requests, kv/
  // kv_disk_prefetcher.h); a request's blocks past it are read when it is admitted. 0: no
  // prefetch, every disk hit is read on the engine thread when its request is admitted (the
  // benchmark's "before").
  int64_t disk_prefetch_bytes = 512ll << 20;
  bool enabled() const { return host_bytes > 0 || !disk_dir.empty(); }
};

// Which slice of the model's KV this rank holds, for the disk files' key and directory.
struct KvSliceIdentity {
  uint64_t model_identity = 0;
  int tp_rank = 0, tp_size = 1, pp_rank = 0, pp_size = 1;
  // Where this slice's block files (and its lock) live under --kv-disk-cache `root`: `root` itself
  // for a job of one rank (so single-process caches stay where they were), else
  // root/tp{t}of{T}-pp{p}of{P}: every rank its own directory, index and lock, and jobs of other
  // layouts never overwrite each other's files.
  std::filesystem::path disk_dir(const std::filesystem::path& root) const;
};

// The slice identity of rank (tp_rank, pp_rank) of a tp x pp job over the model in `model_dir`;
// the model's identity (model/model_identity.h) is read only when a disk tier is asked for. Every
// rank computes the same model identity from the same files.
absl::StatusOr<KvSliceIdentity> kv_slice_identity(const KvTierOptions& options, const std::filesystem::path& model_dir,
                                                  int tp_rank = 0, int tp_size = 1, int pp_rank = 0, int pp_size = 1);

// One rank's tiers. The store borrows the pool, the disk tier and its prefetcher (declared in
// this order so they are destroyed the other way round).
struct RankKvTiers {
  std::unique_ptr<KvDiskTier> disk;
  std::unique_ptr<KvDiskPrefetcher> prefetcher;  // with a disk tier
  std::unique_ptr<KvHostStore> store;
  int64_t host_capacity_blocks = 0;  // of this rank's slice within host_bytes
  // Why there is no disk tier although --kv-disk-cache asked for one (OK otherwise).
  absl::Status disk_status;
};

// Errors when tiers are asked for without prefix caching (they hold prefix-cache blocks). A disk
// directory that cannot be used (unwritable, locked by another process) is no disk tier, the
// reason in `disk_status` (the caller warns once: single process, or agreed over the job).
absl::StatusOr<RankKvTiers> make_rank_kv_tiers(const KvTierOptions& options, bool prefix_caching,
                                               const KvCache& pool, const KvSliceIdentity& slice);
// Closes the disk tier (and its prefetcher) of `tiers`, keeping its host tier over `pool`: a job
// whose other rank could not open its disk tier runs without one on every rank.
void drop_disk_tier(RankKvTiers& tiers, const KvCache& pool);

// The coordinator's directory over `tiers`, holding `host_capacity_blocks` (the job's agreed
// minimum). Single process (`agreement_max_blocks` 0): disk hits load through its store.
// Multi-rank: disk hits are agreed by every rank first, at most `agreement_max_blocks` held in
// the ranks' stores for it (kv/kv_disk_agreement.h).
std::unique_ptr<KvTierDirectory> make_kv_tier_directory(RankKvTiers& tiers, int64_t host_capacity_blocks,
                                                        int64_t agreement_max_blocks = 0);

}  // namespace weft
