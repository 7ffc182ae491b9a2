#include "hf_quantized_checks.h"

#include <algorithm>
#include <cmath>

namespace weft::golden {

QuantizedTolerance quantized_tolerance(const CheckpointQuantization& q) {
  // Every held form is the reference's weights exactly (hf_quantized_checks.h): only the F32
  // summation order differs. Before the I4G*F types, groups with zero points rounded their
  // minimum to f16 and measured logits 0.120 / 0.058 / 0.435 off for ct_int4_g32_asym /
  // ct_int4_g128_asym / awq_int4_g32 (logits std 11); a wrong nibble order, scale or zero point
  // gives errors of the logits' own size (several units).
  (void)q;
  constexpr float kExactWeightsLogitBound = 2e-3f;
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
