// Swap or recompute, per preemption, by measured costs (issue 19 "Preemption by swap").
//
// With a host KV tier a preempted sequence's full blocks stay registered in the prefix cache:
// when the pool needs them they are copied down to the host tier (a save) and when the sequence
// is admitted again they are copied back (a restore) instead of recomputed: a swap, paid as two
// block copies per block. Recomputing costs block_size tokens of prefill per block. The engine
// measures both (the coordinator rank's host store times its saves and restores; prefill-heavy
// steps time the tokens they ran) and the scheduler asks swap_cheaper() when it preempts. A
// sequence preempted by recompute takes only what the pool still holds when it comes back,
// nothing from the tiers, and its blocks are not copied down when the pool evicts them.
// Until both costs are measured the answer is swap (the tiers' default).
//
// Plain data, the engine thread's.
#pragma once

#include <cstdint>

namespace weft {

class PreemptionCostModel {
 public:
  // Adds measurements: `blocks` copied between the pool and the host tier in `seconds`;
  // `tokens` run through the model by steps dominated by prefill in `seconds`.
  void record_copies(int64_t blocks, double seconds);
  void record_prefill(int64_t tokens, double seconds);
  // Seconds per block copy / per prefill token so far (0: not measured yet).
  double copy_seconds_per_block() const;
  double prefill_seconds_per_token() const;
  // Whether swapping a block (a save now and a restore later) costs less than recomputing its
  // `block_size` tokens.
  bool swap_cheaper(int block_size) const;

 private:
  int64_t copied_blocks_ = 0;
  double copy_seconds_ = 0;
  int64_t prefill_tokens_ = 0;
  double prefill_seconds_ = 0;
};

}  // namespace weft
