#include "engine/generation_defaults.h"

#include <limits>

#include "absl/strings/str_cat.h"

namespace weft {

absl::StatusOr<SamplingParams> sampling_defaults_from(const GenerationConfig& g, SamplingParams p) {
  auto too_big = [](const char* field, int64_t v) {
    return absl::InvalidArgumentError(absl::StrCat("generation_config.json: ", field, ": ", v, " is out of range"));
  };
  if (g.temperature) p.temperature = static_cast<float>(*g.temperature);
  if (g.top_p) p.top_p = static_cast<float>(*g.top_p);
  if (g.top_k) {
    if (*g.top_k > std::numeric_limits<int>::max() || *g.top_k < -1) return too_big("top_k", *g.top_k);
    p.top_k = static_cast<int>(*g.top_k);
  }
  if (g.min_p) p.min_p = static_cast<float>(*g.min_p);
  if (g.repetition_penalty) p.repetition_penalty = static_cast<float>(*g.repetition_penalty);
  if (g.max_new_tokens) {
    if (*g.max_new_tokens > std::numeric_limits<int>::max() || *g.max_new_tokens < 1) {
      return too_big("max_new_tokens", *g.max_new_tokens);
    }
    p.max_tokens = static_cast<int>(*g.max_new_tokens);
  }
  // Token-id fields are not set here, so any vocabulary size does.
  if (absl::Status s = p.validate(std::numeric_limits<int32_t>::max()); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("generation_config.json: ", s.message()));
  }
  return p;
}

}  // namespace weft
