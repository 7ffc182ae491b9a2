// What the coordinator tells every rank to do in one engine step: a ragged batch of sequence
// chunks. Self-contained (token ids, positions, block tables), so a rank needs nothing else of
// the coordinator's state to execute it.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/kv_transfer.h"
#include "model/attention_selection.h"

namespace weft {

enum class LogitsWanted : uint8_t {
  kNone,  // a prefill chunk that does not reach the end of the known tokens
  kLast,  // the logits of the chunk's last token (to sample the next token)
  kAll,   // every token's logits (scoring a prompt: tests, perplexity)
};

struct PlannedChunk {
  int64_t seq_id = 0;
  std::vector<int32_t> token_ids;    // tokens to run, at positions start_position...
  int32_t start_position = 0;        // = tokens already in the cache for this sequence
  std::vector<int32_t> block_table;  // covers start_position + token_ids.size() tokens
  LogitsWanted logits = LogitsWanted::kNone;
  // Speculative decoding: the last num_draft_tokens of token_ids are a proposer's guesses after
  // the sequence's known tokens, run to be verified. Such a chunk wants every row (kAll): row j
  // is the target's next-token logits after token j. Stages treat them as ordinary tokens; the
  // coordinator keeps the KV of the guesses it accepts and rolls the rest back.
  int32_t num_draft_tokens = 0;
  // The sequence's prompt length, a property of the sequence rather than of this chunk (a
  // recompute after preemption runs generated tokens as a prefill, yet they stay generated).
  // Dynamic NTK RoPE picks each token's frequencies by it (model/rope.h: dynamic_ntk_seq_len);
  // 0: not known, every token counts as generated.
  int32_t prompt_len = 0;
};

struct StepPlan {
  int64_t step_id = 0;
  std::vector<PlannedChunk> chunks;
  // How much of each logits row the last stage needs to return (the coordinator picks it so that
  // sampling stays exact, Engine::choose_sampling_output): 0 = the full F32 logits; 1 = the argmax
  // token (ties to the lowest id); K > 1 = the K best (token, logit) pairs
  // (sample_candidates.h). Each is found shard by shard over the TP group, so nothing
  // vocabulary-sized is gathered or sent. An executor may always return more (full logits).
  int32_t sample_candidates = 0;
  // With sample_candidates >= 1: also return each row's log-sum-exp over the whole vocabulary
  // (logprobs need it), and candidates rather than bare argmax tokens.
  bool candidate_logsumexp = false;
  // The KV tiers' instructions (save, restore, drop, persist) every rank performs in order for
  // its slice before this step's forward pass (kv/kv_tier_directory.h); a restored block is read
  // by this plan's chunks.
  std::vector<KvTransfer> kv_transfers;
  // Sequences whose attention weights every rank records for the rows this plan wants logits of
  // (a "weft_debug" request on weft serve): each rank its layers and its heads, returned with
  // the step's output (StepOutput::attention). Empty: nothing is recorded.
  std::vector<AttentionRecording> record_attention;

  int64_t num_tokens() const {
    int64_t n = 0;
    for (const PlannedChunk& c : chunks) n += static_cast<int64_t>(c.token_ids.size());
    return n;
  }
};

}  // namespace weft
