// Turning speculative decoding on for an engine from its options (--speculative,
// --draft-model, --num-speculative-tokens, ...): builds the proposer on the coordinator and
// checks that a draft model can propose for the target.
#pragma once

#include <filesystem>

#include "absl/status/status.h"
#include "core/thread_pool.h"
#include "engine/engine.h"
#include "engine/rank_model.h"

namespace weft {

enum class SpeculativeMethod { kNone, kNgram, kDraftModel };

struct SpeculativeDecodingOptions {
  SpeculativeMethod method = SpeculativeMethod::kNone;
  std::filesystem::path draft_model;  // kDraftModel
  SpeculationOptions engine;          // K, adaptive
  int ngram_min = 1;                  // kNgram: shortest suffix looked up
  int ngram_max = 4;                  // kNgram: longest suffix looked up
};

// "none", "ngram", "draft" (also "draft_model").
absl::StatusOr<SpeculativeMethod> parse_speculative_method(const std::string& name);

// With method kNone, does nothing. Otherwise builds the proposer and enables it on `engine`.
// A draft model must share the target's tokenizer: the same tokenizer.json vocabulary (every id
// to the same token string) when either directory has one, and no larger a vocabulary; errors
// name --draft-model and what differs. `kv` sizes the draft's own KV cache (its block size and
// budget), `target_model_dir` is the target's directory (for its tokenizer).
absl::Status enable_speculative_decoding(Engine& engine, const SpeculativeDecodingOptions& options,
                                         const RankModel& target, const std::filesystem::path& target_model_dir,
                                         const KvCacheOptions& kv, ThreadPool& pool);

// The tokenizer check alone (draft vs target directories).
absl::Status check_same_tokenizer(const std::filesystem::path& target_dir, const std::filesystem::path& draft_dir);

}  // namespace weft
