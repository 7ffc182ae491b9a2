// The tools users reach for when output looks wrong:
//   weft tokenize --model DIR       stdin: {"text": ..., "add_special_tokens": bool} lines
//                                   stdout: {"ids": [...]} lines
//   weft detokenize --model DIR     stdin: {"ids": [...], "skip_special_tokens": bool} lines
//                                   stdout: {"text": ...} lines
//   weft chat-template --model DIR  stdin: one {"messages": [...], "add_generation_prompt": bool,
//                                   ...extra template variables} object; stdout: the prompt
//                                   (--chat-template FILE / --chat-template-name NAME pick the
//                                   template)
// A malformed line gets an {"error": ...} line (tokenize/detokenize keep going) and exit code 1.
#include <iostream>
#include <iterator>
#include <string>

#include "core/bounded_json.h"
#include "launcher/chat_template_flags.h"
#include "launcher/cli_args.h"
#include "launcher/command_specs.h"
#include "launcher/commands.h"
#include "launcher/default_model.h"
#include "nlohmann/json.hpp"
#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace weft {
namespace {

absl::StatusOr<std::shared_ptr<Tokenizer>> tokenizer_from(const CliArgs& cli, const char* command) {
  const std::filesystem::path dir = cli.has("model") ? std::filesystem::path(*cli.get("model")) : default_model_dir();
  if (dir.empty()) return absl::InvalidArgumentError(std::string(command) + ": --model DIR is required");
  return Tokenizer::load(dir);
}

// Runs `handle` on every stdin line; errors become {"error": ...} lines.
int for_each_json_line(const std::function<absl::StatusOr<nlohmann::json>(const nlohmann::json&)>& handle) {
  int code = 0;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    absl::StatusOr<nlohmann::json> in =
        parse_json_bounded<nlohmann::json>(line, "line", request_json_limits());
    absl::StatusOr<nlohmann::json> out = in.ok() ? handle(*in) : in.status();
    if (out.ok()) {
      std::cout << out->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      std::cout << nlohmann::json{{"error", std::string(out.status().message())}}.dump() << "\n";
      code = 1;
    }
  }
  return code;
}

int fail(const char* command, const absl::Status& status) {
  std::cerr << "weft " << command << ": " << status.message() << "\n";
  return 2;
}

// The command's flags, or its exit code after --help or a flag error.
std::variant<CliArgs, int> parse(const char* command, const std::vector<std::string>& args) {
  return parse_command(command_spec(command), args, [command](const absl::Status& s) { return fail(command, s); });
}

}  // namespace

int run_tokenize(const std::vector<std::string>& args) {
  auto parsed = parse("tokenize", args);
  if (const int* done = std::get_if<int>(&parsed)) return *done;
  const CliArgs& cli = std::get<CliArgs>(parsed);
  auto tokenizer = tokenizer_from(cli, "tokenize");
  if (!tokenizer.ok()) return fail("tokenize", tokenizer.status());
  return for_each_json_line([&](const nlohmann::json& in) -> absl::StatusOr<nlohmann::json> {
    if (!in.is_object() || !in.contains("text") || !in["text"].is_string()) {
      return absl::InvalidArgumentError("text: expected a string field \"text\"");
    }
    bool add_special = true;
    if (in.contains("add_special_tokens")) {
      if (!in["add_special_tokens"].is_boolean()) {
        return absl::InvalidArgumentError("add_special_tokens: expected a boolean");
      }
      add_special = in["add_special_tokens"].get<bool>();
    }
    auto ids = (*tokenizer)->encode(in["text"].get<std::string>(), add_special);
    if (!ids.ok()) return ids.status();
    return nlohmann::json{{"ids", *ids}};
  });
}

int run_detokenize(const std::vector<std::string>& args) {
  auto parsed = parse("detokenize", args);
  if (const int* done = std::get_if<int>(&parsed)) return *done;
  const CliArgs& cli = std::get<CliArgs>(parsed);
  auto tokenizer = tokenizer_from(cli, "detokenize");
  if (!tokenizer.ok()) return fail("detokenize", tokenizer.status());
  return for_each_json_line([&](const nlohmann::json& in) -> absl::StatusOr<nlohmann::json> {
    if (!in.is_object() || !in.contains("ids") || !in["ids"].is_array()) {
      return absl::InvalidArgumentError("ids: expected an array field \"ids\"");
    }
    std::vector<int32_t> ids;
    for (const auto& v : in["ids"]) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
        return absl::InvalidArgumentError("ids: every element must be a non-negative integer");
      }
      ids.push_back(v.get<int32_t>());
    }
    bool skip = false;
    if (in.contains("skip_special_tokens")) {
      if (!in["skip_special_tokens"].is_boolean()) {
        return absl::InvalidArgumentError("skip_special_tokens: expected a boolean");
      }
      skip = in["skip_special_tokens"].get<bool>();
    }
    return nlohmann::json{{"text", (*tokenizer)->decode(ids, skip)}};
  });
}

int run_chat_template(const std::vector<std::string>& args) {
  auto flags = parse("chat-template", args);
  if (const int* done = std::get_if<int>(&flags)) return *done;
  const CliArgs& cli = std::get<CliArgs>(flags);
  auto tokenizer = tokenizer_from(cli, "chat-template");
  if (!tokenizer.ok()) return fail("chat-template", tokenizer.status());
  auto tmpl = chat_template_from_flags(cli, **tokenizer, ChatTemplateNeed::kRequired);
  if (!tmpl.ok()) return fail("chat-template", tmpl.status());
  const std::string input(std::istreambuf_iterator<char>(std::cin), {});
  absl::StatusOr<nlohmann::ordered_json> parsed =
      parse_json_bounded<nlohmann::ordered_json>(input, "stdin", request_json_limits());
  if (!parsed.ok()) return fail("chat-template", parsed.status());
  nlohmann::ordered_json& request = *parsed;
  if (!request.is_object()) {
    return fail("chat-template", absl::InvalidArgumentError("stdin must hold one JSON object"));
  }
  if (!request.contains("messages") || !request["messages"].is_array()) {
    return fail("chat-template", absl::InvalidArgumentError("messages: expected an array"));
  }
  bool add_generation_prompt = false;
  if (request.contains("add_generation_prompt")) {
    if (!request["add_generation_prompt"].is_boolean()) {
      return fail("chat-template", absl::InvalidArgumentError("add_generation_prompt: expected a boolean"));
    }
    add_generation_prompt = request["add_generation_prompt"].get<bool>();
  }
  nlohmann::ordered_json extra = request;
  extra.erase("messages");
  extra.erase("add_generation_prompt");
  auto text = render_chat(**tmpl, request["messages"], add_generation_prompt,
                          (*tokenizer)->bos_token().value_or(""),
                          (*tokenizer)->eos_token().value_or(""), extra);
  if (!text.ok()) return fail("chat-template", text.status());
  std::cout << *text;
  return 0;
}

}  // namespace weft
