// Reads SamplingParams from the fields of an OpenAI-style request body.
//
// Generic over the completions and chat APIs: it reads the fields both share, with the
// completions API's meaning where they differ. Recognised fields (absent or null = default):
//   n, temperature, top_p, top_k, min_p, repetition_penalty, presence_penalty,
//   frequency_penalty (numbers; integer fields reject fractional values),
//   logit_bias   object {"<token id>": bias} (keys are decimal strings, as OpenAI sends them),
//   seed         integer (a negative seed is taken as its two's-complement uint64),
//   stop         string or array of strings,  stop_token_ids  array of integers,
//   max_completion_tokens / max_tokens   (max_completion_tokens wins when both are present),
//   min_tokens, ignore_eos, skip_special_tokens,
//   logprobs     integer N (completions API: N alternatives per token).
// Chat's `logprobs: true` + `top_logprobs: N` is NOT read here: the HTTP layer maps it to
// `logprobs = N` first (a boolean `logprobs` is a type error naming the field). Other fields
// (model, messages, stream, ...) are ignored. Only types and JSON shape are checked here; call
// SamplingParams::validate(vocab_size) for ranges.
#pragma once

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"
#include "sampling/sampling_params.h"

namespace weft {

// InvalidArgument naming the field on a type error, e.g. "temperature: expected a number, got
// string"; InvalidArgument if `request` is not a JSON object. Absent fields keep their value in
// `defaults` (the model's, engine/generation_defaults.h, or weft's own).
absl::StatusOr<SamplingParams> sampling_params_from_json(const nlohmann::json& request,
                                                         const SamplingParams& defaults = {});

}  // namespace weft
