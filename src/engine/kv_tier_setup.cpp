#include "engine/kv_tier_setup.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "model/model_identity.h"

namespace weft {

std::filesystem::path KvSliceIdentity::disk_dir(const std::filesystem::path& root) const {
  if (tp_size * pp_size == 1) return root;
  return root / absl::StrCat("tp", tp_rank, "of", tp_size, "-pp", pp_rank, "of", pp_size);
}

absl::StatusOr<KvSliceIdentity> kv_slice_identity(const KvTierOptions& options, const std::filesystem::path& model_dir,
                                                  int tp_rank, int tp_size, int pp_rank, int pp_size) {
  KvSliceIdentity slice;
  slice.tp_rank = tp_rank;
  slice.tp_size = tp_size;
  slice.pp_rank = pp_rank;
  slice.pp_size = pp_size;
  if (!options.disk_dir.empty()) {
    WEFT_ASSIGN_OR_RETURN(slice.model_identity, model_identity(model_dir));
  }
  return slice;
}

absl::StatusOr<RankKvTiers> make_rank_kv_tiers(const KvTierOptions& options, bool prefix_caching,
                                               const KvCache& pool, const KvSliceIdentity& slice) {
  RankKvTiers tiers;
  if (!options.enabled()) return tiers;
  if (!prefix_caching) {
    return absl::InvalidArgumentError(
        "--kv-offload-bytes / --kv-disk-cache hold prefix-cache blocks: they need prefix caching "
        "(drop --no-prefix-caching)");
  }
  if (options.host_bytes < 0 || options.disk_bytes < 0) {
    return absl::InvalidArgumentError("--kv-offload-bytes and --kv-disk-bytes must be >= 0");
  }
  const KvCacheShape& shape = pool.shape();
  if (!options.disk_dir.empty()) {
    KvDiskTierOptions disk;
    disk.dir = slice.disk_dir(options.disk_dir);
    disk.max_bytes = options.disk_bytes;
    disk.block_bytes = shape.bytes_per_block();
    disk.key.model_identity = slice.model_identity;
    disk.key.dtype = static_cast<uint32_t>(shape.dtype);
    disk.key.block_size = static_cast<uint32_t>(shape.block_size);
    disk.key.num_layers = static_cast<uint32_t>(shape.num_layers);
    disk.key.tp_rank = static_cast<uint32_t>(slice.tp_rank);
    disk.key.tp_size = static_cast<uint32_t>(slice.tp_size);
    disk.key.pp_rank = static_cast<uint32_t>(slice.pp_rank);
    disk.key.pp_size = static_cast<uint32_t>(slice.pp_size);
    disk.key.num_kv_heads = static_cast<uint64_t>(shape.num_kv_heads);
    disk.key.head_dim = static_cast<uint64_t>(shape.head_dim);
    absl::StatusOr<std::unique_ptr<KvDiskTier>> opened = KvDiskTier::open(disk);
    if (opened.ok()) {
      tiers.disk = *std::move(opened);
    } else {
      tiers.disk_status = opened.status();
    }
  }
  if (tiers.disk && options.disk_prefetch_bytes > 0) {
    KvDiskTier* disk = tiers.disk.get();
    tiers.prefetcher = std::make_unique<KvDiskPrefetcher>(
        [disk](uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) {
          return disk->load(hash, parent, tokens);
        },
        shape.bytes_per_block(), options.disk_prefetch_bytes);
  }
  tiers.store = std::make_unique<KvHostStore>(pool, tiers.disk.get(), tiers.prefetcher.get());
  tiers.host_capacity_blocks = tiers.store->blocks_fitting(options.host_bytes);
  return tiers;
}

void drop_disk_tier(RankKvTiers& tiers, const KvCache& pool) {
  tiers.store = std::make_unique<KvHostStore>(pool);  // borrows neither of the two below
  tiers.prefetcher.reset();
  tiers.disk.reset();
}

std::unique_ptr<KvTierDirectory> make_kv_tier_directory(RankKvTiers& tiers, int64_t host_capacity_blocks,
                                                        int64_t agreement_max_blocks) {
  KvDiskLookup lookup;
  if (tiers.disk) {
    lookup.agreement_max_blocks = agreement_max_blocks;
    KvHostStore* store = tiers.store.get();
    lookup.contains = [store](uint64_t hash) { return store->disk_contains(hash); };
    lookup.load = [store](uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) {
      return store->load_from_disk(hash, parent, tokens);
    };
    lookup.prefetcher = tiers.prefetcher.get();
  }
  return std::make_unique<KvTierDirectory>(host_capacity_blocks, tiers.store->block_bytes(), std::move(lookup),
                                           tiers.disk.get());
}

}  // namespace weft
