// The flags every engine-running subcommand shares (model, threads, KV cache, scheduler), and
// their translation into LocalEngineOptions.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

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

// The start of every engine-running subcommand: parses `args` against the shared engine flags
// plus `value_flags` / `bool_flags` and --help. Returns the flags, or the exit code when the
// command is already done: after a parse error, `usage` on stderr and `fail(error)`'s code;
// after --help, `usage` and `help` on stdout and 0.
std::variant<CliArgs, int> parse_engine_command(const std::vector<std::string>& args,
                                                std::set<std::string> value_flags,
                                                std::set<std::string> bool_flags, std::string_view usage,
                                                std::string_view help,
                                                const std::function<int(const absl::Status&)>& fail);

}  // namespace weft
