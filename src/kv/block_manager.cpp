#include "kv/block_manager.h"

#include <algorithm>
#include <cassert>

namespace weft {
namespace {

// splitmix64's finaliser: a cheap, well-mixing 64-bit permutation.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

BlockManager::BlockManager(int64_t num_blocks, int block_size, bool enable_prefix_caching)
    : block_size_(block_size),
      prefix_caching_(enable_prefix_caching),
      ref_counts_(num_blocks, 0),
      lru_pos_(num_blocks),
      in_lru_(num_blocks, false),
      info_(num_blocks) {
  free_.reserve(num_blocks);
  // Pushed in reverse so block 0 is handed out first (easier to read in tests and logs).
  for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

double BlockManager::usage() const {
  if (ref_counts_.empty()) return 0.0;
  return 1.0 - static_cast<double>(num_free_blocks()) / static_cast<double>(ref_counts_.size());
}

int32_t BlockManager::take_free_block() {
  if (!free_.empty()) {
    const int32_t block = free_.back();
    free_.pop_back();
    return block;
  }
  // Evict the least recently freed cached block.
  const int32_t block = lru_.front();
  lru_.pop_front();
  in_lru_[block] = false;
  const CachedInfo& info = *info_[block];
  if (tiers_ && info.move_down) tiers_->on_pool_evict(block, info.hash, info.parent, info.tokens);
  cached_.erase(info.hash);
  info_[block].reset();
  return block;
}

void BlockManager::take_ref(int32_t block) {
  if (ref_counts_[block]++ == 0 && in_lru_[block]) {
    lru_.erase(lru_pos_[block]);
    in_lru_[block] = false;
  }
}

void BlockManager::drop_ref(int32_t block, bool move_down) {
  assert(ref_counts_[block] > 0);
  if (--ref_counts_[block] != 0) return;
  if (info_[block]) {
    info_[block]->move_down = move_down;
    lru_pos_[block] = lru_.insert(lru_.end(), block);
    in_lru_[block] = true;
  } else {
    free_.push_back(block);
  }
}

bool BlockManager::grow_to(std::vector<int32_t>& block_table, int64_t num_tokens) {
  const int64_t needed = blocks_for_tokens(num_tokens) - static_cast<int64_t>(block_table.size());
  if (needed <= 0) return true;
  if (needed > num_free_blocks()) return false;
  for (int64_t i = 0; i < needed; ++i) {
    const int32_t block = take_free_block();
    ref_counts_[block] = 1;
    block_table.push_back(block);
  }
  return true;
}

void BlockManager::release_before(std::vector<int32_t>& block_table, int64_t count) {
  count = std::min<int64_t>(count, static_cast<int64_t>(block_table.size()));
  for (int64_t b = 0; b < count; ++b) {
    if (block_table[b] == kFreedBlock) continue;
    drop_ref(block_table[b]);
    block_table[b] = kFreedBlock;
  }
}

void BlockManager::release(std::vector<int32_t>& block_table, bool move_down) {
  for (auto it = block_table.rbegin(); it != block_table.rend(); ++it) {
    if (*it != kFreedBlock) drop_ref(*it, move_down);
  }
  block_table.clear();
}

void BlockManager::release_last(std::vector<int32_t>& block_table) {
  if (block_table.empty()) return;
  if (block_table.back() != kFreedBlock) drop_ref(block_table.back());
  block_table.pop_back();
}

void BlockManager::share(const std::vector<int32_t>& block_table) {
  for (int32_t block : block_table) {
    if (block != kFreedBlock) take_ref(block);
  }
}

uint64_t BlockManager::hash_block(uint64_t parent, const int32_t* tokens, int n) {
  uint64_t h = mix(parent ^ static_cast<uint64_t>(n));
  for (int i = 0; i < n; ++i) h = mix(h ^ static_cast<uint32_t>(tokens[i]));
  return h;
}

void BlockManager::hash_full_blocks(const std::vector<int32_t>& tokens, int64_t num_tokens,
                                    std::vector<uint64_t>& block_hashes) const {
  const int64_t full = std::min<int64_t>(num_tokens, static_cast<int64_t>(tokens.size())) / block_size_;
  while (static_cast<int64_t>(block_hashes.size()) < full) {
    const int64_t i = static_cast<int64_t>(block_hashes.size());
    const uint64_t parent = i == 0 ? kRootHash : block_hashes[i - 1];
    block_hashes.push_back(hash_block(parent, tokens.data() + i * block_size_, block_size_));
  }
}

int64_t BlockManager::match_prefix(const std::vector<int32_t>& tokens, int64_t max_tokens,
                                   std::vector<uint64_t>& block_hashes,
                                   std::vector<int32_t>& block_table, bool use_tiers) {
  if (!prefix_caching_) return 0;
  assert(block_table.empty());
  hash_full_blocks(tokens, max_tokens, block_hashes);
  const int64_t wanted = std::min<int64_t>(max_tokens, static_cast<int64_t>(tokens.size())) /
                         block_size_;
  prefix_query_tokens_ += wanted * block_size_;
  int64_t matched = 0;
  for (; matched < wanted; ++matched) {
    auto it = cached_.find(block_hashes[matched]);
    const uint64_t parent = matched == 0 ? kRootHash : block_hashes[matched - 1];
    if (it == cached_.end() || !holds_prefix(it->second, parent, tokens.data() + matched * block_size_)) {
      if (use_tiers && restore_from_tiers(tokens, block_hashes, matched, block_table)) continue;
      break;
    }
    take_ref(it->second);
    block_table.push_back(it->second);
  }
  prefix_hit_tokens_ += matched * block_size_;
  return matched * block_size_;
}

bool BlockManager::holds_prefix(int32_t block, uint64_t parent, const int32_t* tokens) const {
  const CachedInfo& info = *info_[block];
  return info.parent == parent && std::equal(info.tokens.begin(), info.tokens.end(), tokens);
}

bool BlockManager::prefix_ready(const std::vector<int32_t>& tokens, int64_t max_tokens,
                                std::vector<uint64_t>& block_hashes) {
  if (!prefetches()) return true;
  hash_full_blocks(tokens, max_tokens, block_hashes);
  const int64_t wanted = std::min<int64_t>(max_tokens, static_cast<int64_t>(tokens.size())) / block_size_;
  bool ready = true;
  for (int64_t i = 0; i < wanted; ++i) {
    const uint64_t parent = i == 0 ? kRootHash : block_hashes[i - 1];
    const int32_t* block_tokens = tokens.data() + i * block_size_;
    auto it = cached_.find(block_hashes[i]);
    if (it != cached_.end()) {
      if (holds_prefix(it->second, parent, block_tokens)) continue;
      break;  // a colliding prefix in the pool: match_prefix stops here
    }
    const TierReadiness r =
        tiers_->prepare(block_hashes[i], parent, std::span<const int32_t>(block_tokens, block_size_));
    if (r == TierReadiness::kAbsent) break;
    // Later blocks are asked for too, so their reads queue behind this one.
    if (r == TierReadiness::kPending) ready = false;
  }
  return ready;
}

bool BlockManager::restore_from_tiers(const std::vector<int32_t>& tokens,
                                      const std::vector<uint64_t>& block_hashes, int64_t index,
                                      std::vector<int32_t>& block_table) {
  if (!tiers_ || num_free_blocks() == 0) return false;
  const uint64_t hash = block_hashes[index];
  if (cached_.count(hash)) return false;  // the pool holds a colliding prefix under this hash
  if (!tiers_->may_hold(hash)) return false;  // a plain miss evicts nothing from the pool
  // The block before the lookup: evicting it may move another prefix down (or push this one out
  // of a full host tier), and the lookup must see that; the save precedes this restore.
  const int32_t block = take_free_block();
  CachedInfo info;
  info.hash = hash;
  info.parent = index == 0 ? kRootHash : block_hashes[index - 1];
  info.tokens.assign(tokens.begin() + index * block_size_, tokens.begin() + (index + 1) * block_size_);
  if (!tiers_->find(hash, info.parent, info.tokens)) {
    free_.push_back(block);  // its old contents (if any) went down with the eviction
    return false;
  }
  tiers_->restore(hash, block);
  register_block(block, std::move(info));
  ref_counts_[block] = 1;
  block_table.push_back(block);
  return true;
}

std::vector<KvTransfer> BlockManager::take_transfers() {
  return tiers_ ? tiers_->take_transfers() : std::vector<KvTransfer>{};
}

void BlockManager::register_block(int32_t block, CachedInfo info) {
  const uint64_t hash = info.hash;
  info_[block] = std::move(info);
  cached_.emplace(hash, block);
}

void BlockManager::cache_block(int32_t block, uint64_t hash, uint64_t parent,
                               const int32_t* tokens) {
  if (!prefix_caching_) return;
  if (info_[block] || cached_.count(hash)) return;
  CachedInfo info;
  info.hash = hash;
  info.parent = parent;
  info.tokens.assign(tokens, tokens + block_size_);
  if (tiers_) tiers_->on_pool_cached(block, hash, parent, info.tokens);
  register_block(block, std::move(info));
}

}  // namespace weft
