#include "engine/preemption_cost.h"

namespace weft {

void PreemptionCostModel::record_copies(int64_t blocks, double seconds) {
  if (blocks <= 0) return;
  copied_blocks_ += blocks;
  copy_seconds_ += seconds;
}

void PreemptionCostModel::record_prefill(int64_t tokens, double seconds) {
  if (tokens <= 0) return;
  prefill_tokens_ += tokens;
  prefill_seconds_ += seconds;
}

double PreemptionCostModel::copy_seconds_per_block() const {
  return copied_blocks_ > 0 ? copy_seconds_ / static_cast<double>(copied_blocks_) : 0.0;
}

double PreemptionCostModel::prefill_seconds_per_token() const {
  return prefill_tokens_ > 0 ? prefill_seconds_ / static_cast<double>(prefill_tokens_) : 0.0;
}

bool PreemptionCostModel::swap_cheaper(int block_size) const {
  if (copied_blocks_ == 0 || prefill_tokens_ == 0) return true;
  return 2.0 * copy_seconds_per_block() <= prefill_seconds_per_token() * block_size;
}

}  // namespace weft
