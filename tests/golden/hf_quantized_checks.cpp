#include "hf_quantized_checks.h"

#include <algorithm>
#include <cmath>

namespace weft::golden {

QuantizedTolerance quantized_tolerance(const CheckpointQuantization& q) {
  constexpr float kExactWeightsLogitBound = 2e-3f;
  // Measured (this change, AMD EPYC): logits 0.120 / 0.058 / 0.435 and top-5 logprobs 0.144 /
  // 0.021 / 0.256 for ct_int4_g32_asym / ct_int4_g128_asym / awq_int4_g32 (logits std 11,
  // |max| 45). AWQ's f16 scales leave -scale * zero up to 15 significant bits to round to f16's
  // 11, bf16 scales (compressed-tensors) 12. A wrong nibble order, scale or zero point gives
  // errors of the logits' own size (several units).
  constexpr float kRoundedMinimumLogitBound = 0.75f;
  for (const CheckpointQuantization* scheme : q.schemes()) {
    const bool rounded = is_block_quantized(scheme->weft_dtype()) && !scheme->symmetric;
    if (rounded) return {kRoundedMinimumLogitBound, kRoundedMinimumLogitBound};
  }
  return {kExactWeightsLogitBound, 2 * kExactWeightsLogitBound};
}

std::vector<std::string> compare_greedy_to_reference(const GreedyRun& run, const Reference& ref,
                                                     const QuantizedTolerance& tolerance,
                                                     int* compared, float* worst) {
  std::vector<std::string> failures;
  *compared = 0;
  *worst = 0.0f;
  for (size_t i = 0; i < ref.greedy_ids.size(); ++i) {
    const std::string where = "prompt " + std::to_string(i);
    for (size_t step = 0; step < ref.greedy_ids[i].size(); ++step) {
      const std::vector<float> logprobs = log_softmax_row(ref.greedy_logits[i], static_cast<int64_t>(step));
      std::vector<float> sorted = logprobs;
      std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
      const bool near_tie = sorted[0] - sorted[1] < 2 * tolerance.logits;
      if (step >= run.top_logprobs[i].size()) {
        failures.push_back(where + ": no step " + std::to_string(step));
        break;
      }
      ++*compared;
      for (const auto& [token, logprob] : run.top_logprobs[i][step]) {
        const float error = std::fabs(logprob - logprobs[static_cast<size_t>(token)]);
        *worst = std::max(*worst, error);
        if (error > tolerance.logprobs) {
          failures.push_back(where + " step " + std::to_string(step) + ": token " +
                             std::to_string(token) + " logprob " + std::to_string(logprob) +
                             ", reference " + std::to_string(logprobs[static_cast<size_t>(token)]));
        }
      }
      if (run.ids[i][step] != ref.greedy_ids[i][step]) {
        if (!near_tie) {
          failures.push_back(where + " step " + std::to_string(step) + ": token " +
                             std::to_string(run.ids[i][step]) + ", reference " +
                             std::to_string(ref.greedy_ids[i][step]) + " (top-2 gap " +
                             std::to_string(sorted[0] - sorted[1]) + ")");
        }
        break;  // the continuations differ from here on
      }
    }
  }
  return failures;
}

}  // namespace weft::golden
