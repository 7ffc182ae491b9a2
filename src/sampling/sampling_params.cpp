#include "sampling/sampling_params.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

absl::Status field_error(absl::string_view field, absl::string_view expected, auto got) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": must be ", expected, ", got ", got));
}

bool in_range(float v, float lo, float hi) { return std::isfinite(v) && v >= lo && v <= hi; }

}  // namespace

absl::Status SamplingParams::validate(int64_t vocab_size) const {
  if (n < 1 || n > kMaxN) return field_error("n", absl::StrCat("in [1, ", kMaxN, "]"), n);
  if (!std::isfinite(temperature) || temperature < 0.0f) {
    return field_error("temperature", "a finite number >= 0", temperature);
  }
  if (!std::isfinite(top_p) || top_p <= 0.0f || top_p > 1.0f) {
    return field_error("top_p", "in (0, 1]", top_p);
  }
  if (top_k < -1) return field_error("top_k", "-1 or 0 (disabled) or a positive count", top_k);
  if (!in_range(min_p, 0.0f, 1.0f)) return field_error("min_p", "in [0, 1]", min_p);
  if (!std::isfinite(repetition_penalty) || repetition_penalty <= 0.0f) {
    return field_error("repetition_penalty", "a finite number > 0", repetition_penalty);
  }
  if (!in_range(presence_penalty, -kMaxAbsPenalty, kMaxAbsPenalty)) {
    return field_error("presence_penalty", "in [-2, 2]", presence_penalty);
  }
  if (!in_range(frequency_penalty, -kMaxAbsPenalty, kMaxAbsPenalty)) {
    return field_error("frequency_penalty", "in [-2, 2]", frequency_penalty);
  }
  if (max_tokens < 1) return field_error("max_tokens", ">= 1", max_tokens);
  if (min_tokens < 0) return field_error("min_tokens", ">= 0", min_tokens);
  if (min_tokens > max_tokens) {
    return field_error("min_tokens", absl::StrCat("<= max_tokens (", max_tokens, ")"), min_tokens);
  }
  if (logprobs.has_value() && (*logprobs < 0 || *logprobs > kMaxLogprobs)) {
    return field_error("logprobs", absl::StrCat("in [0, ", kMaxLogprobs, "]"), *logprobs);
  }
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0 || id >= vocab_size) {
      return field_error(absl::StrCat("logit_bias[", id, "]"),
                         absl::StrCat("a token id in [0, ", vocab_size, ")"), id);
    }
    if (!in_range(bias, -kMaxAbsLogitBias, kMaxAbsLogitBias)) {
      return field_error(absl::StrCat("logit_bias[", id, "]"), "a bias in [-100, 100]", bias);
    }
  }
  for (size_t i = 0; i < stop_token_ids.size(); ++i) {
    if (stop_token_ids[i] < 0 || stop_token_ids[i] >= vocab_size) {
      return field_error(absl::StrCat("stop_token_ids[", i, "]"),
                         absl::StrCat("a token id in [0, ", vocab_size, ")"), stop_token_ids[i]);
    }
  }
  for (size_t i = 0; i < stop.size(); ++i) {
    if (stop[i].empty()) return field_error(absl::StrCat("stop[", i, "]"), "non-empty", "\"\"");
  }
  return absl::OkStatus();
}

}  // namespace weft
