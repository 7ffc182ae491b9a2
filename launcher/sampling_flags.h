// Sampling flags of the CLI (generate, batch defaults) and their translation to SamplingParams.
#pragma once

#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "launcher/cli_args.h"
#include "sampling/sampling_params.h"

namespace weft {

// --temperature --top-k --top-p --min-p --repetition-penalty --presence-penalty
// --frequency-penalty --max-tokens --min-tokens --stop (repeatable) --stop-token-ids --n
// --logprobs --request-seed
std::set<std::string> sampling_value_flags();
// --ignore-eos --keep-special-tokens
std::set<std::string> sampling_bool_flags();
const char* sampling_flags_help();

// Reads the flags over `defaults` (greedy with max_tokens 16 unless the flags say otherwise).
absl::StatusOr<SamplingParams> sampling_params_from(const CliArgs& args,
                                                    SamplingParams defaults = {});

}  // namespace weft
