// Logical KV blocks on the coordinator: which block ids are free, and how many sequences hold
// each one. Physical storage lives on every rank under the same ids (kv/kv_cache.h).
//
// Reference counts let sequences share blocks (the prompt blocks of an n > 1 request; prefix
// caching builds on this). A block returns to the free list when its count drops to zero.
// Plain data: no device, no locks (owned by the engine thread).
#pragma once

#include <cstdint>
#include <vector>

namespace weft {

class BlockManager {
 public:
  BlockManager(int64_t num_blocks, int block_size);

  int block_size() const { return block_size_; }
  int64_t num_blocks() const { return static_cast<int64_t>(ref_counts_.size()); }
  int64_t num_free_blocks() const { return static_cast<int64_t>(free_.size()); }
  // Fraction of blocks in use, in [0, 1].
  double usage() const;
  // Blocks a sequence of `num_tokens` tokens occupies.
  int64_t blocks_for_tokens(int64_t num_tokens) const {
    return (num_tokens + block_size_ - 1) / block_size_;
  }

  // Grows `block_table` so it covers `num_tokens` tokens. Returns false, changing nothing, when
  // not enough blocks are free.
  bool grow_to(std::vector<int32_t>& block_table, int64_t num_tokens);
  // Drops one reference to each block of the table and clears it.
  void release(std::vector<int32_t>& block_table);
  // Adds a reference to each block (a forked sequence sharing them).
  void share(const std::vector<int32_t>& block_table);
  int ref_count(int32_t block) const { return ref_counts_[block]; }

 private:
  int block_size_;
  std::vector<int> ref_counts_;
  std::vector<int32_t> free_;  // a stack: recently freed blocks are reused first
};

}  // namespace weft
