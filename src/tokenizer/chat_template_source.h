// Where a model directory keeps its chat templates, and which one a command renders with.
//
// A checkpoint keeps its Jinja chat templates in one or more of these places (highest
// precedence first):
//   1. chat_template.jinja (the template named "default") and
//   additional_chat_templates/<name>.jinja
//      (one named template each): what transformers 5's save_pretrained writes
//      (PreTrainedTokenizerBase.save_chat_templates).
//   2. chat_template.json, {"chat_template": "..."} (named "default"): the processor classes'
//      legacy file (ProcessorMixin.get_processor_dict reads it; AutoTokenizer does not).
//   3. tokenizer_config.json's "chat_template": a string (named "default") or a list
//      [{"name": ..., "template": ...}, ...].
// transformers' AutoTokenizer (PreTrainedTokenizerBase._from_pretrained) lets the files of (1)
// replace (3) wholesale, without comparing them; its processors prefer (2) over
// chat_template.jinja. weft instead merges the sources by name and refuses to guess: a name defined
// by two sources with different text is a "conflicting template sources" error when that name is
// selected, naming both places. A name defined by one source only is taken from it.
//
// Loading reads and checks every file (present files must be valid UTF-8, JSON files valid
// JSON with the fields above), but never parses the Jinja: that is the renderer's job
// (tokenizer/chat_template/chat_template.h). Conflicts and unknown names are reported by
// select(), so a directory with conflicting templates still loads for tokenization.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace weft {

// One template and where it was found.
struct ChatTemplateSource {
  std::string name;  // "default", or the name the source gives it
  std::string text;  // the Jinja source, as stored
  // Where it came from, for messages: a file path, with the field for JSON files
  // ("DIR/tokenizer_config.json field chat_template[1]").
  std::string origin;
};

class ChatTemplateSources {
 public:
  static constexpr std::string_view kDefaultName = "default";
  static constexpr std::string_view kJinjaFile = "chat_template.jinja";
  static constexpr std::string_view kJsonFile = "chat_template.json";
  static constexpr std::string_view kAdditionalDir = "additional_chat_templates";
  // A template file larger than this is refused (published templates are a few KB to ~100 KB).
  static constexpr size_t kMaxFileBytes = size_t{16} << 20;

  // Reads the templates of `model_dir`. `tokenizer_config` is that directory's parsed
  // tokenizer_config.json (null when it has none); `config_path` names it in messages.
  // Errors (InvalidArgument unless a file cannot be read) name the file and field: a file that
  // is unreadable, larger than kMaxFileBytes or not valid UTF-8; chat_template.json that is not
  // a JSON object with a string "chat_template"; a tokenizer_config.json "chat_template" that is
  // neither a string nor a list of {"name": string, "template": string}; one source naming a
  // template twice with different text.
  static absl::StatusOr<ChatTemplateSources> load(const std::filesystem::path& model_dir,
                                                  const nlohmann::json& tokenizer_config,
                                                  const std::filesystem::path& config_path);

  // The one template in `file` (a user's --chat-template FILE), named "default". Errors as load().
  static absl::StatusOr<ChatTemplateSources> from_file(const std::filesystem::path& file);

  bool empty() const { return sources_.empty(); }
  // The distinct template names, sorted.
  std::vector<std::string> names() const;
  // Every source found, highest precedence first.
  const std::vector<ChatTemplateSource>& sources() const { return sources_; }

  // The template named `name`. Errors:
  //   - NotFound when there are no templates at all: "<dir> has no chat template (looked for
  //     chat_template.jinja, chat_template.json and tokenizer_config.json's chat_template)";
  //   - InvalidArgument for an unknown name: "no chat template named 'x'; <dir> has:
  //     brief (origin), default (origin)";
  //   - FailedPrecondition "conflicting template sources for chat template 'default': <origin A>
  //     and <origin B> differ (first at line L); ...", listing every source that disagrees with
  //     the first.
  absl::StatusOr<ChatTemplateSource> select(std::string_view name) const;

 private:
  std::string where_;  // the directory or file, for messages
  std::vector<ChatTemplateSource> sources_;
};

}  // namespace weft
