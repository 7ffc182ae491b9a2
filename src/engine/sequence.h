// One generated sequence: its tokens, how many of them have KV in the cache, its blocks and its
// lifecycle state (DESIGN.md section 2): WAITING -> RUNNING -> FINISHED, with RUNNING ->
// WAITING when preempted (its KV is dropped and recomputed later).
#pragma once

#include <algorithm>
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
  // Preempted by recompute (engine/preemption_cost.h): when admitted again it takes only the
  // prefix blocks the pool still holds, none from the KV tiers.
  bool recompute_on_readmit = false;
  // Prefix caching: chained hashes of the full blocks of the tokens hashed so far (a cache: the
  // tokens decide them), and how many leading blocks of block_table are registered in (or were
  // taken from) the prefix cache.
  std::vector<uint64_t> block_hashes;
  int64_t num_cached_blocks = 0;
  // Tokens the last admission took from the prefix cache instead of computing them.
  int64_t num_prefix_hit_tokens = 0;
  // LongRoPE: the sequence's length when it was recomputed with the long factors the step it
  // passed original_max_position_embeddings (Scheduler, SchedulerConfig::longrope_switch); 0
  // before. Its RoPE then treats all those tokens as one prompt.
  int64_t rope_prompt_tokens = 0;

  int64_t num_tokens() const {
    return static_cast<int64_t>(prompt_ids.size() + output_ids.size());
  }
  int32_t token_at(int64_t i) const {
    const int64_t p = static_cast<int64_t>(prompt_ids.size());
    return i < p ? prompt_ids[i] : output_ids[i - p];
  }
  // Tokens known but not yet in the cache (the rest of the prompt, or the last sampled token).
  int64_t num_uncomputed_tokens() const { return num_tokens() - num_computed_tokens; }
  std::vector<int32_t> all_tokens() const {
    std::vector<int32_t> out(prompt_ids);
    out.insert(out.end(), output_ids.begin(), output_ids.end());
    return out;
  }
  // The prompt length its RoPE frequencies are chosen by (PlannedChunk::prompt_len).
  int64_t rope_prompt_len() const {
    return std::max(rope_prompt_tokens, static_cast<int64_t>(prompt_ids.size()));
  }
  bool is_prefilling() const { return num_computed_tokens < static_cast<int64_t>(prompt_ids.size()); }
};

}  // namespace weft
