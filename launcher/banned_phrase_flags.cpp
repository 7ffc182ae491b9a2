#include "launcher/banned_phrase_flags.h"

#include "safety/banned_phrase_file.h"

namespace weft {

FlagSpec banned_phrases_flag_spec() {
  return {"banned-phrases", "FILE",
          "no output contains any of these phrases (UTF-8, one per line, '#' comments; matched "
          "case-insensitively under NFKC however tokenized)"};
}

absl::StatusOr<std::shared_ptr<const BannedPhraseSet>> banned_phrases_from_flags(const CliArgs& cli) {
  if (!cli.has("banned-phrases")) return std::shared_ptr<const BannedPhraseSet>();
  return load_banned_phrase_file(cli.get_or("banned-phrases", ""), "--banned-phrases");
}

}  // namespace weft
