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

// Which slice of the model's KV this rank holds, for the disk files' key.
struct KvSliceIdentity {
  uint64_t model_identity = 0;
  int tp_rank = 0, tp_size = 1, pp_rank = 0, pp_size = 1;
};

// One rank's tiers. The store borrows the pool, the disk tier and its prefetcher (declared in
// this order so they are destroyed the other way round).
struct RankKvTiers {
  std::unique_ptr<KvDiskTier> disk;
  std::unique_ptr<KvDiskPrefetcher> prefetcher;  // with a disk tier
  std::unique_ptr<KvHostStore> store;
  int64_t host_capacity_blocks = 0;  // of this rank's slice within host_bytes
};

// Errors when tiers are asked for without prefix caching (they hold prefix-cache blocks). A disk
// directory that cannot be used (unwritable, locked by another process) is one warning on
// standard error and no disk tier.
absl::StatusOr<RankKvTiers> make_rank_kv_tiers(const KvTierOptions& options, bool prefix_caching,
                                               const KvCache& pool, const KvSliceIdentity& slice);

// The coordinator's directory over `tiers` (single process: disk hits load through its store),
// holding `host_capacity_blocks` (the job's agreed minimum).
std::unique_ptr<KvTierDirectory> make_kv_tier_directory(RankKvTiers& tiers, int64_t host_capacity_blocks);

}  // namespace weft
