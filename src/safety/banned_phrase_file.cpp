#include "safety/banned_phrase_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "tokenizer/utf8.h"

namespace weft {

absl::StatusOr<std::vector<std::string>> parse_banned_phrase_lines(std::string_view content, std::string_view name_view,
                                                                   const BannedPhraseLimits& limits) {
  const std::string name(name_view);
  std::vector<std::string> phrases;
  size_t line_no = 0;
  while (!content.empty()) {
    ++line_no;
    const size_t end = content.find('\n');
    std::string_view line = content.substr(0, end);
    content = end == std::string_view::npos ? std::string_view() : content.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos || line.front() == '#') continue;
    if (line.starts_with("\\#")) line.remove_prefix(1);
    const std::string where = absl::StrCat(name, ":", line_no);
    if (!utf8::is_valid(line)) return absl::InvalidArgumentError(absl::StrCat(where, ": not valid UTF-8"));
    if (line.size() > limits.max_phrase_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": a phrase of ", line.size(), " bytes, at most ",
                                                     limits.max_phrase_bytes, " are allowed"));
    }
    if (phrases.size() == limits.max_phrases) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": more than ", limits.max_phrases, " phrases"));
    }
    phrases.emplace_back(line);
  }
  return phrases;
}

absl::StatusOr<std::shared_ptr<const BannedPhraseSet>> load_banned_phrase_file(const std::filesystem::path& path,
                                                                               std::string_view flag_view,
                                                                               const BannedPhraseLimits& limits) {
  const std::string flag(flag_view);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read ", path.string(), ": ", ec.message()));
  if (size > limits.max_total_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path.string(), " has ", size, " bytes, at most ",
                                                   limits.max_total_bytes, " are allowed"));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read ", path.string()));
  auto phrases = parse_banned_phrase_lines(text.str(), absl::StrCat(flag, " ", path.string()), limits);
  if (!phrases.ok()) return phrases.status();
  if (phrases->empty()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path.string(), " holds no phrase"));
  }
  return BannedPhraseSet::compile(*phrases, absl::StrCat(flag, " ", path.string()), limits);
}

}  // namespace weft
