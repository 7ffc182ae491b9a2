// One generated sequence: its tokens, how many of them have KV in the cache, its blocks and its
// lifecycle state (DESIGN.md section 2): WAITING -> RUNNING -> FINISHED, with RUNNING ->
// WAITING when preempted (its KV is dropped and recomputed later).
#pragma once

#include <cstdint>
#include <vector>

namespace weft {

enum class SequenceState { kWaiting, kRunning, kFinished };

struct Sequence {
  int64_t id = 0;
  int priority = 0;           // lower runs first among waiting sequences
  int64_t arrival = 0;        // admission order, breaks priority ties
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> output_ids;
  int64_t num_computed_tokens = 0;  // leading tokens whose KV is in the cache
  std::vector<int32_t> block_table;
  SequenceState state = SequenceState::kWaiting;
  int num_preemptions = 0;

  int64_t num_tokens() const {
    return static_cast<int64_t>(prompt_ids.size() + output_ids.size());
  }
  int32_t token_at(int64_t i) const {
    const int64_t p = static_cast<int64_t>(prompt_ids.size());
    return i < p ? prompt_ids[i] : output_ids[i - p];
  }
  // Tokens known but not yet in the cache (the rest of the prompt, or the last sampled token).
  int64_t num_uncomputed_tokens() const { return num_tokens() - num_computed_tokens; }
  bool is_prefilling() const { return num_computed_tokens < static_cast<int64_t>(prompt_ids.size()); }
};

}  // namespace weft
