#include "launcher/request_flags.h"

#ifdef WEFT_HAVE_CONSTRAIN
#include "constrain/grammar_constraint.h"
#endif
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"
#include "launcher/banned_phrase_flags.h"
#include "nlohmann/json.hpp"

namespace weft {
namespace {

// --json-schema FILE | --json-object | --regex R | --grammar FILE | --choice A|B: at most one.
absl::StatusOr<std::shared_ptr<const TokenConstraintSource>> constraint_from_flags(
    const CliArgs& cli, const Tokenizer* tokenizer, EngineSession& session) {
  nlohmann::json body = nlohmann::json::object();
  int given = 0;
  auto read = [](const std::string& flag, const std::string& path) -> absl::StatusOr<std::string> {
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::InvalidArgumentError(absl::StrCat("--", flag, ": cannot read ", path));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  if (cli.has("json-schema")) {
    WEFT_ASSIGN_OR_RETURN(std::string text, read("json-schema", cli.get_or("json-schema", "")));
    body["guided_json"] = text;
    ++given;
  }
  if (cli.has("json-object")) {
    body["response_format"] = {{"type", "json_object"}};
    ++given;
  }
  if (cli.has("regex")) {
    body["guided_regex"] = cli.get_or("regex", "");
    ++given;
  }
  if (cli.has("grammar")) {
    WEFT_ASSIGN_OR_RETURN(std::string text, read("grammar", cli.get_or("grammar", "")));
    body["guided_grammar"] = text;
    ++given;
  }
  if (cli.has("choice")) {
    std::vector<std::string> choices = absl::StrSplit(cli.get_or("choice", ""), '|');
    body["guided_choice"] = choices;
    ++given;
  }
  if (given == 0) return std::shared_ptr<const TokenConstraintSource>();
  if (given > 1) {
    return absl::InvalidArgumentError(
        "--json-schema, --json-object, --regex, --grammar and --choice: give at most one");
  }
#ifdef WEFT_HAVE_CONSTRAIN
  if (tokenizer == nullptr) {
    return absl::InvalidArgumentError(
        "--json-schema / --regex / --grammar / --choice need the model's tokenizer.json");
  }
  WEFT_ASSIGN_OR_RETURN(auto compiler,
                        model_grammar_compiler(*tokenizer, session.model().config.vocab_size,
                                               model_eos_ids(session.model())));
  auto constraint = request_constraint(body, *compiler);
  if (!constraint.ok()) {
    // Name the flag rather than the request field the flag became.
    std::string message(constraint.status().message());
    for (const auto& [field, flag] :
         std::vector<std::pair<std::string, std::string>>{{"guided_json", "--json-schema"},
                                                          {"response_format", "--json-object"},
                                                          {"guided_regex", "--regex"},
                                                          {"guided_grammar", "--grammar"},
                                                          {"guided_choice", "--choice"}}) {
      if (message.rfind(field, 0) == 0) message = flag + message.substr(field.size());
    }
    return absl::Status(constraint.status().code(), message);
  }
  return constraint;
#else
  return absl::InvalidArgumentError(
      "--json-schema / --regex / --grammar / --choice: this weft was built without constrained "
      "output");
#endif
}

}  // namespace

absl::StatusOr<Request> request_from_flags(const CliArgs& cli, const PromptInput& prompt,
                                           const SamplingParams& params, EngineSession& session) {
  Request request;
  request.prompt_ids = prompt.ids;
  request.params = params;
  WEFT_ASSIGN_OR_RETURN(request.constraint,
                        constraint_from_flags(cli, prompt.tokenizer.get(), session));
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const BannedPhraseSet> banned,
                        banned_phrases_from_flags(cli));
  if (banned != nullptr) {
    if (!prompt.tokenizer)
      return absl::InvalidArgumentError("--banned-phrases: needs the model's tokenizer (text)");
    request.banned_phrases.push_back(std::move(banned));
  }
  return request;
}

}  // namespace weft
