// Logits processors: the logit-space transforms applied to one sequence's row before sampling.
//
// Order (apply_logits_processors; vLLM's and Hugging Face's order):
//   1. logit_bias           logits[t] += bias[t]                               (OpenAI)
//   2. min_tokens           while output_ids.size() < min_tokens: logits[t] = -inf for every
//                           stop_token_id and, unless ignore_eos, every eos id (vLLM)
//   3. repetition_penalty   for each distinct t in prompt + output: logits[t] /= p if
//                           logits[t] > 0, else logits[t] *= p                 (HF / CTRL)
//   4. presence/frequency   for each distinct t in output with count c:
//                           logits[t] -= c * frequency_penalty + presence_penalty   (OpenAI)
//   5. temperature          logits[t] /= temperature (skipped when greedy; the sampler applies
//                           it, after greedy has taken the argmax of steps 1-4)
// Top-k, top-p and min-p filtering act on the probabilities after step 5 (see sampler.h).
//
// Preconditions (Sampler::sample checks them): every token id in the state and in
// params.logit_bias / stop_token_ids lies in [0, logits.size()).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/sequence_sampling_state.h"

namespace weft {

// Reusable per-thread scratch, sized to the vocabulary on first use; all zero between calls.
struct PenaltyScratch {
  std::vector<int32_t> counts;
};

void apply_logit_bias(std::span<float> logits, const SamplingParams& params);
void apply_min_tokens(std::span<float> logits, const SequenceSamplingState& state);
void apply_repetition_penalty(std::span<float> logits, float penalty,
                              std::span<const int32_t> prompt_ids,
                              std::span<const int32_t> output_ids, PenaltyScratch& scratch);
void apply_presence_frequency_penalties(std::span<float> logits, float presence_penalty,
                                        float frequency_penalty,
                                        std::span<const int32_t> output_ids,
                                        PenaltyScratch& scratch);
void apply_temperature(std::span<float> logits, float temperature);

// Steps 1-4 above, each skipped when its parameters make it the identity.
void apply_logits_processors(std::span<float> logits, const SequenceSamplingState& state,
                             PenaltyScratch& scratch);

}  // namespace weft
