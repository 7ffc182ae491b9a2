// Per-request sampling parameters (the OpenAI / vLLM vocabulary) and their validation.
//
// A request's SamplingParams is immutable once admitted; the sampler and the stop checker only
// read it. Conventions:
//   temperature  0 (strictly: below kGreedyTemperature) means greedy: argmax after logit_bias,
//                min_tokens and penalties; ties go to the lowest token id.
//   top_k        -1 or 0 disable top-k (vLLM accepts both); k >= vocab is also "no filter".
//   top_p        in (0, 1]; 1 disables.   min_p in [0, 1]; 0 disables.
//   repetition_penalty 1 disables (HF style, over prompt + output tokens).
//   presence/frequency_penalty 0 disable (OpenAI style, over output tokens only).
//   seed         absent: the engine draws one from its SeedSource (rng.h) at admission.
//   logprobs     absent: no logprobs; N in [0, 20]: the sampled token's logprob plus the N most
//                likely alternatives (see sampler.h for which distribution they describe).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace weft {

struct SamplingParams {
  static constexpr float kGreedyTemperature = 1e-5f;  // below this, sampling is greedy (vLLM)
  static constexpr int kMaxN = 128;
  static constexpr int kMaxLogprobs = 20;
  static constexpr float kMaxAbsPenalty = 2.0f;
  static constexpr float kMaxAbsLogitBias = 100.0f;

  int n = 1;
  float temperature = 1.0f;
  float top_p = 1.0f;
  int top_k = -1;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  std::map<int32_t, float> logit_bias;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  int max_tokens = 16;
  int min_tokens = 0;
  bool ignore_eos = false;
  std::optional<int> logprobs;
  bool skip_special_tokens = true;
  // Set by weft inspect (not a request field): the sampler adds SampleResult::diagnostics, and the
  // engine gives such rows their full logits.
  bool diagnostics = false;

  bool is_greedy() const { return temperature < kGreedyTemperature; }
  // True when top_k selects fewer than `vocab_size` tokens.
  bool top_k_active(int64_t vocab_size) const { return top_k > 0 && top_k < vocab_size; }

  // OK, or InvalidArgument whose message starts with the offending field name, e.g.
  // "top_p: must be in (0, 1], got 1.5". `vocab_size` bounds logit_bias and stop_token_ids keys.
  absl::Status validate(int64_t vocab_size) const;
};

}  // namespace weft
