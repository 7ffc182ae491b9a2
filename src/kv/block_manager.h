// Logical KV blocks on the coordinator: which block ids are free, and how many sequences hold
// each one. Physical storage lives on every rank under the same ids (kv/kv_cache.h).
//
// Reference counts let sequences share blocks (forked n > 1 sequences share their prompt's
// blocks; prefix caching shares full blocks between requests). A block returns to the free pool
// when its count drops to zero.
//
// Automatic prefix caching (optional): a *full* block whose KV has been computed can be
// registered under the chained hash of its tokens, hash_i = H(hash_{i-1}, tokens of block i), so
// the hash names the whole prefix up to the block's end. A later sequence with the same leading
// tokens takes those blocks instead of recomputing them (match_prefix). A registered block whose
// count drops to zero stays in the cache as a *free cached* block: it counts as free, and is
// evicted (its hash forgotten) only when an allocation finds no never-cached free block left,
// least recently freed first. Full blocks are never written again, so sharing them is safe; a
// registered block also keeps its tokens and parent hash, and a lookup checks both, so a 64-bit
// hash collision cannot hand out the wrong KV.
//
// Lower tiers (optional, attach_tiers): an evicted cached block moves down to the host tier
// instead of disappearing, a newly registered one is persisted to disk, and match_prefix goes on
// past the pool's last hit into those tiers: each further block found there takes a free pool
// block, is registered in the pool cache at once and restored into it (kv/kv_tier_directory.h
// collects the instructions; the next step plan carries them to every rank, which performs them
// before that step reads or writes any block).
//
// Plain data: no device, no locks (owned by the engine thread).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "kv/kv_tier_directory.h"

namespace weft {

class BlockManager {
 public:
  // Hash of the empty prefix (the parent of a sequence's first block).
  static constexpr uint64_t kRootHash = 0x6a09e667f3bcc908ULL;
  // A block-table entry whose block was given back because no query can attend to it any more
  // (sliding-window attention: release_before). It keeps the table's positions; it is never read.
  static constexpr int32_t kFreedBlock = -1;

  BlockManager(int64_t num_blocks, int block_size, bool enable_prefix_caching = false);

  int block_size() const { return block_size_; }
  bool prefix_caching() const { return prefix_caching_; }
  int64_t num_blocks() const { return static_cast<int64_t>(ref_counts_.size()); }
  // Blocks no sequence holds (never-cached ones plus free cached ones).
  int64_t num_free_blocks() const {
    return static_cast<int64_t>(free_.size() + lru_.size());
  }
  // Blocks registered in the prefix cache (held or free).
  int64_t num_cached_blocks() const { return static_cast<int64_t>(cached_.size()); }
  // Fraction of blocks held by sequences, in [0, 1] (free cached blocks count as free).
  double usage() const;
  // Blocks a sequence of `num_tokens` tokens occupies.
  int64_t blocks_for_tokens(int64_t num_tokens) const {
    return (num_tokens + block_size_ - 1) / block_size_;
  }

  // Grows `block_table` so it covers `num_tokens` tokens. Returns false, changing nothing, when
  // not enough blocks are free.
  bool grow_to(std::vector<int32_t>& block_table, int64_t num_tokens);
  // Drops one reference to each of the table's first `count` blocks that is still held and marks
  // its entry kFreedBlock (blocks reaching zero return to the free pool or, when cached, become
  // evictable). For KV no later query reads: those wholly before every layer's attention window.
  void release_before(std::vector<int32_t>& block_table, int64_t count);
  // Drops one reference to each block of the table and clears it. Blocks reaching zero return
  // to the free pool; cached ones become evictable, the table's last blocks first (a shared
  // prefix's first blocks outlive its tails).
  // `move_down` false: the cached blocks this frees are not copied to a lower tier when the pool
  // evicts them (a sequence preempted by recompute: nobody is expected to want them back),
  // unless another sequence holds and frees them again first.
  void release(std::vector<int32_t>& block_table, bool move_down = true);
  // Drops one reference to the table's last block and removes it from the table.
  void release_last(std::vector<int32_t>& block_table);
  // Adds a reference to each block (a forked sequence sharing them).
  void share(const std::vector<int32_t>& block_table);
  int ref_count(int32_t block) const { return ref_counts_[block]; }

  // --- prefix caching (no-ops / zero matches when disabled) ---

  // The chained hash of one block of tokens.
  static uint64_t hash_block(uint64_t parent, const int32_t* tokens, int n);

  // Extends `block_hashes` (the chained hashes of a sequence's full blocks, a cache its owner
  // keeps) to cover the first min(num_tokens, tokens.size()) / block_size blocks of `tokens`.
  void hash_full_blocks(const std::vector<int32_t>& tokens, int64_t num_tokens,
                        std::vector<uint64_t>& block_hashes) const;

  // For a sequence holding no blocks yet: takes the longest run of cached blocks matching the
  // leading full blocks of `tokens`, covering at most `max_tokens` tokens, appends them to
  // `block_table` (adding a reference each) and returns the number of tokens they cover (a
  // multiple of block_size). `block_hashes` is extended as in hash_full_blocks. Counts the
  // query and its hit in the statistics below.
  // `use_tiers` false: the pool's blocks only (a sequence preempted by recompute).
  int64_t match_prefix(const std::vector<int32_t>& tokens, int64_t max_tokens,
                       std::vector<uint64_t>& block_hashes, std::vector<int32_t>& block_table,
                       bool use_tiers = true);

  // Registers `block` (full, its KV computed; `tokens` are its block_size tokens) under `hash`,
  // the chained hash of the prefix ending with it (`parent`: the previous block's hash, or
  // kRootHash). Does nothing when the block is already registered or another block holds that
  // hash (two sequences computed the same prefix at once: one copy is enough).
  void cache_block(int32_t block, uint64_t hash, uint64_t parent, const int32_t* tokens);

  // Prompt tokens looked up in / found in the prefix cache since construction (found: in the
  // pool or, with tiers, restored from one).
  int64_t prefix_query_tokens() const { return prefix_query_tokens_; }
  int64_t prefix_hit_tokens() const { return prefix_hit_tokens_; }

  // --- lower tiers (prefix caching only) ---

  // Puts host/disk tiers below the pool (before any block is allocated).
  void attach_tiers(std::unique_ptr<KvTierDirectory> tiers) { tiers_ = std::move(tiers); }
  const KvTierDirectory* tiers() const { return tiers_.get(); }
  // The tier instructions since the last call, in order: the next plan sent to the ranks must
  // carry them (StepPlan::kv_transfers). Empty without tiers.
  std::vector<KvTransfer> take_transfers();

  // --- prefetch from the disk tier (tiers with a prefetcher; otherwise always ready) ---

  // For a waiting sequence holding no blocks, changing nothing in the pool: whether match_prefix
  // over the same arguments could restore its prefix now without reading a file on this thread.
  // Starts the background reads of the prefix's blocks the disk tier holds (not yet ready: false).
  // `block_hashes` is extended as in hash_full_blocks.
  bool prefix_ready(const std::vector<int32_t>& tokens, int64_t max_tokens, std::vector<uint64_t>& block_hashes);
  bool prefetches() const { return prefix_caching_ && tiers_ && tiers_->prefetches(); }
  bool prefetch_pending() const { return tiers_ && tiers_->prefetch_pending(); }
  // Blocks until a prefetch finishes (the caller has nothing else to run).
  void wait_for_prefetch() {
    if (tiers_) tiers_->wait_for_prefetch();
  }
  // Once per scheduling pass, after every waiting sequence was asked about: drops what no
  // sequence asked for (finished or aborted requests' read-ahead).
  void end_prefetch_round() {
    if (tiers_) tiers_->end_prefetch_round();
  }
  // Multi-rank disk hits (KvTierDirectory): whether the pending instructions load from disk (a
  // plan must carry them even with nothing else to run), and the ranks' report on a collected
  // plan.
  bool has_pending_loads() const { return tiers_ && tiers_->has_pending_loads(); }
  absl::Status on_load_report(const std::vector<KvTransfer>& plan_transfers,
                              const std::optional<KvLoadReport>& report) {
    return tiers_ ? tiers_->on_load_report(plan_transfers, report) : absl::OkStatus();
  }

 private:
  struct CachedInfo {
    uint64_t hash = 0;
    uint64_t parent = 0;
    std::vector<int32_t> tokens;
    bool move_down = true;  // copied to the host tier when evicted (as its last holder freed it)
  };
  int32_t take_free_block();
  // Registers `block` under `info` (no tier notified).
  void register_block(int32_t block, CachedInfo info);
  // Past the pool's hits: takes a free block and restores block `index` of `tokens` into it from
  // a lower tier. False (changing nothing but evictions) on a miss or with no free block.
  bool restore_from_tiers(const std::vector<int32_t>& tokens, const std::vector<uint64_t>& block_hashes,
                          int64_t index, std::vector<int32_t>& block_table);
  // Whether pool block `block` is registered for the prefix (`parent`, tokens from `tokens`).
  bool holds_prefix(int32_t block, uint64_t parent, const int32_t* tokens) const;
  void take_ref(int32_t block);
  void drop_ref(int32_t block, bool move_down = true);

  int block_size_;
  bool prefix_caching_;
  std::vector<int> ref_counts_;
  std::vector<int32_t> free_;  // never-cached free blocks, a stack: recently freed reused first
  std::list<int32_t> lru_;     // free cached blocks, least recently freed first
  std::vector<std::list<int32_t>::iterator> lru_pos_;
  std::vector<bool> in_lru_;
  std::vector<std::optional<CachedInfo>> info_;  // per block: its registration
  std::unordered_map<uint64_t, int32_t> cached_;  // hash -> block
  int64_t prefix_query_tokens_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  std::unique_ptr<KvTierDirectory> tiers_;
};

}  // namespace weft
