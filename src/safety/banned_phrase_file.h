// The --banned-phrases FILE format: UTF-8 text, one phrase per line, taken exactly as written
// (spaces included: " ass" does not match "class"; a trailing "\r" is dropped). Lines that are
// empty or only spaces / tabs are skipped, and so are lines starting with "#" (comments); a
// phrase that starts with "#" is written "\#...". Bounded by BannedPhraseLimits (count, bytes per
// phrase, file size); errors name the file and line.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "safety/banned_phrase_set.h"

namespace weft {

// The phrases of a file's `content` (`name` is used in errors).
absl::StatusOr<std::vector<std::string>> parse_banned_phrase_lines(std::string_view content, std::string_view name,
                                                                   const BannedPhraseLimits& limits);

// Reads and compiles `path` (errors start with `flag`, e.g. "--banned-phrases").
absl::StatusOr<std::shared_ptr<const BannedPhraseSet>> load_banned_phrase_file(const std::filesystem::path& path,
                                                                               std::string_view flag,
                                                                               const BannedPhraseLimits& limits = {});

}  // namespace weft
