// The sampling defaults a model directory asks for in generation_config.json, as vLLM applies
// them (its --generation-config auto): a request field that is absent takes the model's value,
// and a field the model does not set keeps weft's own default.
#pragma once

#include "absl/status/statusor.h"
#include "model/model_config.h"
#include "sampling/sampling_params.h"

namespace weft {

// `base` with each of generation_config's temperature, top_p, top_k, min_p and
// repetition_penalty that is present, and max_new_tokens as max_tokens. do_sample is not
// consulted (as in vLLM): a file that sets a temperature means it. InvalidArgument naming
// generation_config.json and the field when a value is out of range (SamplingParams::validate)
// or does not fit its type.
absl::StatusOr<SamplingParams> sampling_defaults_from(const GenerationConfig& generation, SamplingParams base);

}  // namespace weft
