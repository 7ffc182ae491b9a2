// The flags every engine-running subcommand shares (model, threads, KV cache, scheduler), and
// their translation into LocalEngineOptions.
#pragma once

#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "engine/local_engine.h"
#include "launcher/cli_args.h"

namespace weft {

// Names of the shared value flags: model, threads, block-size, kv-cache-memory,
// kv-cache-dtype, max-num-seqs, max-num-batched-tokens, max-model-len, seed, cpu-isa.
std::set<std::string> engine_value_flags();
// Shared boolean flags: no-chunked-prefill, no-prefix-caching.
std::set<std::string> engine_bool_flags();

// Reads the shared flags; applies --cpu-isa at once. `default_model` is used when --model is
// absent (empty: --model is required).
absl::StatusOr<LocalEngineOptions> engine_options_from(const CliArgs& args,
                                                       const std::string& default_model = "");

// Help text lines for the shared flags.
const char* engine_flags_help();

}  // namespace weft
