// What the sampler needs to know about one sequence at one step. A non-owning view: the engine
// keeps the params and token arrays alive for the duration of Sampler::sample().
#pragma once

#include <cstdint>
#include <limits>
#include <span>

#include "sampling/sampling_params.h"

namespace weft {

struct SequenceSamplingState {
  const SamplingParams* params = nullptr;  // required
  std::span<const int32_t> prompt_ids;     // repetition penalty looks at prompt + output
  std::span<const int32_t> output_ids;     // tokens generated so far; size() is the RNG step
  // The request's seed: params->seed when given, else one the engine drew at admission.
  uint64_t seed = 0;
  // Index of this sequence inside its request (0 .. n-1): sequences of one request that share a
  // seed draw from distinct RNG streams.
  uint32_t seq_index = 0;
  // The model's end-of-sequence ids (generation_config may list several). min_tokens suppresses
  // them unless params->ignore_eos.
  std::span<const int32_t> eos_token_ids;
  // When a number: the log-sum-exp of the raw logits row over the whole vocabulary, for logprobs.
  // The engine sets it when the row it passes holds only the best candidates (-inf elsewhere,
  // engine/sample_candidates.h); NaN: computed from the row.
  float raw_logsumexp = std::numeric_limits<float>::quiet_NaN();
  // When not empty: the tokens allowed next, a bit row (token_constraint.h); every other token
  // is set to -inf before the logits processors. Logprobs stay the raw row's.
  std::span<const uint32_t> allowed;
};

}  // namespace weft
