// The request of a one-prompt run (weft generate, weft inspect): its prompt flags, the output
// constraint flags (--json-schema, --json-object, --regex, --grammar, --choice) and
// --banned-phrases, turned into one engine Request.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "engine/engine.h"
#include "launcher/cli_args.h"
#include "launcher/engine_session.h"
#include "launcher/flag_table.h"
#include "launcher/prompt_input.h"

namespace weft {

// prompt_flag_specs(), the constraint flags and --banned-phrases.
std::vector<FlagSpec> request_flag_specs();

// The prompt's ids with `params`, a constraint compiled from the flags (at most one of them) and
// the banned phrases. Errors name the flag (a constraint or banned phrases without a tokenizer, a
// grammar that does not compile, an unreadable file).
absl::StatusOr<Request> request_from_flags(const CliArgs& cli, const PromptInput& prompt,
                                           const SamplingParams& params, EngineSession& session);

}  // namespace weft
