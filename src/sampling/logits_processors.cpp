#include "sampling/logits_processors.h"

#include <limits>

#include "sampling/row_math.h"

namespace weft {
namespace {

void ensure_size(PenaltyScratch& scratch, size_t vocab) {
  if (scratch.counts.size() < vocab) scratch.counts.assign(vocab, 0);
}

}  // namespace

void apply_logit_bias(std::span<float> logits, const SamplingParams& params) {
  for (const auto& [id, bias] : params.logit_bias) logits[id] += bias;
}

void apply_min_tokens(std::span<float> logits, const SequenceSamplingState& state) {
  const SamplingParams& p = *state.params;
  if (state.output_ids.size() >= static_cast<size_t>(p.min_tokens)) return;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int32_t id : p.stop_token_ids) logits[id] = kNegInf;
  if (!p.ignore_eos) {
    for (int32_t id : state.eos_token_ids) logits[id] = kNegInf;
  }
}

void apply_repetition_penalty(std::span<float> logits, float penalty,
                              std::span<const int32_t> prompt_ids,
                              std::span<const int32_t> output_ids, PenaltyScratch& scratch) {
  ensure_size(scratch, logits.size());
  // counts[] marks tokens already penalised so repeats are penalised once (HF uses gather and
  // scatter over the set of ids), and is cleared again by the second pass.
  auto visit = [&](std::span<const int32_t> ids) {
    for (int32_t id : ids) {
      if (scratch.counts[id] != 0) continue;
      scratch.counts[id] = 1;
      float& l = logits[id];
      l = l > 0.0f ? l / penalty : l * penalty;
    }
  };
  visit(prompt_ids);
  visit(output_ids);
  for (int32_t id : prompt_ids) scratch.counts[id] = 0;
  for (int32_t id : output_ids) scratch.counts[id] = 0;
}

void apply_presence_frequency_penalties(std::span<float> logits, float presence_penalty,
                                        float frequency_penalty,
                                        std::span<const int32_t> output_ids,
                                        PenaltyScratch& scratch) {
  ensure_size(scratch, logits.size());
  for (int32_t id : output_ids) ++scratch.counts[id];
  for (int32_t id : output_ids) {
    const int32_t c = scratch.counts[id];
    if (c == 0) continue;  // already applied for an earlier occurrence
    logits[id] -= static_cast<float>(c) * frequency_penalty + presence_penalty;
    scratch.counts[id] = 0;
  }
}

void apply_temperature(std::span<float> logits, float temperature) {
  if (temperature == 1.0f) return;
  divide_row(logits.data(), static_cast<int64_t>(logits.size()), temperature);
}

void apply_logits_processors(std::span<float> logits, const SequenceSamplingState& state,
                             PenaltyScratch& scratch) {
  const SamplingParams& p = *state.params;
  if (!p.logit_bias.empty()) apply_logit_bias(logits, p);
  if (p.min_tokens > 0) apply_min_tokens(logits, state);
  if (p.repetition_penalty != 1.0f) {
    apply_repetition_penalty(logits, p.repetition_penalty, state.prompt_ids, state.output_ids,
                             scratch);
  }
  if (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) {
    apply_presence_frequency_penalties(logits, p.presence_penalty, p.frequency_penalty,
                                       state.output_ids, scratch);
  }
}

}  // namespace weft
