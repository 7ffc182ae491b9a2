// --banned-phrases FILE (weft generate, batch and serve): a list no output may contain
// (safety/banned_phrase_file.h for the format).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "launcher/cli_args.h"
#include "launcher/flag_table.h"
#include "safety/banned_phrase_set.h"

namespace weft {

FlagSpec banned_phrases_flag_spec();

// The compiled list, or null without the flag. Errors name the flag and file (and line).
absl::StatusOr<std::shared_ptr<const BannedPhraseSet>> banned_phrases_from_flags(const CliArgs& cli);

}  // namespace weft
