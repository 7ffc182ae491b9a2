// Sampling flags of the CLI (generate, batch defaults) and their translation to SamplingParams.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/cli_args.h"
#include "launcher/flag_table.h"
#include "model/model_config.h"
#include "sampling/sampling_params.h"

namespace weft {

// --temperature --top-k --top-p --min-p --repetition-penalty --presence-penalty
// --frequency-penalty --max-tokens --min-tokens --stop (repeatable) --stop-token-ids --n
// --logprobs --request-seed --ignore-eos --keep-special-tokens
std::vector<FlagSpec> sampling_flag_specs();

// The defaults requests start from: `base` with generation_config.json's sampling values over it
// (engine/generation_defaults.h), or `base` alone with --generation-config none. Errors name the
// file and field of an out-of-range value.
absl::StatusOr<SamplingParams> model_sampling_defaults(const CliArgs& args, const GenerationConfig& generation,
                                                       SamplingParams base = {});

// Reads the flags over `defaults` (greedy with max_tokens 16 unless the flags say otherwise).
absl::StatusOr<SamplingParams> sampling_params_from(const CliArgs& args,
                                                    SamplingParams defaults = {});

}  // namespace weft
