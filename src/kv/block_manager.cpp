#include "kv/block_manager.h"

namespace weft {

BlockManager::BlockManager(int64_t num_blocks, int block_size)
    : block_size_(block_size), ref_counts_(num_blocks, 0) {
  free_.reserve(num_blocks);
  // Pushed in reverse so block 0 is handed out first (easier to read in tests and logs).
  for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

double BlockManager::usage() const {
  if (ref_counts_.empty()) return 0.0;
  return 1.0 - static_cast<double>(free_.size()) / static_cast<double>(ref_counts_.size());
}

bool BlockManager::grow_to(std::vector<int32_t>& block_table, int64_t num_tokens) {
  const int64_t needed = blocks_for_tokens(num_tokens) - static_cast<int64_t>(block_table.size());
  if (needed <= 0) return true;
  if (needed > static_cast<int64_t>(free_.size())) return false;
  for (int64_t i = 0; i < needed; ++i) {
    const int32_t block = free_.back();
    free_.pop_back();
    ref_counts_[block] = 1;
    block_table.push_back(block);
  }
  return true;
}

void BlockManager::release(std::vector<int32_t>& block_table) {
  for (int32_t block : block_table) {
    if (--ref_counts_[block] == 0) free_.push_back(block);
  }
  block_table.clear();
}

void BlockManager::share(const std::vector<int32_t>& block_table) {
  for (int32_t block : block_table) ++ref_counts_[block];
}

}  // namespace weft
