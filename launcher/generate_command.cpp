// weft generate: run one prompt through the engine and print what it generates.
//   --prompt-ids 1,2,3    token ids in, token ids out (greedy unless sampling flags say otherwise)
//   --json                ids plus each step's logprob and top-5 alternatives, as one JSON object
#include <cstdio>
#include <iostream>

#include "absl/strings/str_join.h"
#include "launcher/commands.h"
#include "launcher/engine_flags.h"
#include "nlohmann/json.hpp"

namespace weft {
namespace {

constexpr const char* kUsage =
    "usage: weft generate --model DIR --prompt-ids 1,2,3 [--max-tokens N] [--json]\n"
    "                     [--temperature T] [--ignore-eos]\n";

int fail(const absl::Status& status) {
  std::cerr << "weft generate: " << status.message() << "\n";
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace

int run_generate(const std::vector<std::string>& args) {
  std::set<std::string> value_flags = engine_value_flags();
  value_flags.insert({"prompt-ids", "max-tokens", "temperature", "top-k", "top-p"});
  std::set<std::string> bool_flags = engine_bool_flags();
  bool_flags.insert({"json", "ignore-eos", "help"});
  auto parsed = CliArgs::parse(args, value_flags, bool_flags);
  if (!parsed.ok()) {
    std::cerr << kUsage;
    return fail(parsed.status());
  }
  const CliArgs& cli = *parsed;
  if (cli.has("help")) {
    std::cout << kUsage << engine_flags_help();
    return 0;
  }
  auto options = engine_options_from(cli);
  if (!options.ok()) return fail(options.status());
  auto prompt = cli.get_int_list("prompt-ids");
  if (!prompt.ok()) return fail(prompt.status());
  if (prompt->empty()) return fail(absl::InvalidArgumentError("--prompt-ids is required"));

  Request request;
  request.prompt_ids = *prompt;
  auto max_tokens = cli.get_int("max-tokens", 16);
  auto temperature = cli.get_double("temperature", 0.0);
  auto top_k = cli.get_int("top-k", -1);
  auto top_p = cli.get_double("top-p", 1.0);
  for (const absl::Status& s : {max_tokens.status(), temperature.status(), top_k.status(), top_p.status()}) {
    if (!s.ok()) return fail(s);
  }
  request.params.max_tokens = static_cast<int>(*max_tokens);
  request.params.temperature = static_cast<float>(*temperature);
  request.params.top_k = static_cast<int>(*top_k);
  request.params.top_p = static_cast<float>(*top_p);
  request.params.ignore_eos = cli.has("ignore-eos");
  const bool json = cli.has("json");
  if (json) request.params.logprobs = 5;

  auto local = LocalEngine::create(*options);
  if (!local.ok()) return fail(local.status());
  Engine& engine = (*local)->engine();
  auto id = engine.add_request(request);
  if (!id.ok()) return fail(id.status());

  std::vector<int32_t> output;
  nlohmann::json steps = nlohmann::json::array();
  std::string finish = "";
  while (engine.has_unfinished()) {
    auto outputs = engine.step();
    if (!outputs.ok()) return fail(outputs.status());
    for (const SequenceOutput& out : *outputs) {
      for (size_t i = 0; i < out.token_ids.size(); ++i) {
        output.push_back(out.token_ids[i]);
        if (json) {
          nlohmann::json top = nlohmann::json::array();
          for (const auto& [token, logprob] : out.samples[i].top_logprobs) top.push_back({token, logprob});
          steps.push_back({{"token", out.token_ids[i]},
                           {"logprob", out.samples[i].logprob},
                           {"top_logprobs", top}});
        } else {
          std::cout << (output.size() > 1 ? "," : "") << out.token_ids[i] << std::flush;
        }
      }
      if (out.finished) finish = std::string(finish_reason_name(out.finish_reason));
    }
  }
  if (json) {
    nlohmann::json result = {{"prompt_ids", *prompt}, {"output_ids", output},
                             {"finish_reason", finish}, {"steps", steps}};
    std::cout << result.dump() << "\n";
  } else {
    std::cout << "\n";
  }
  return 0;
}

}  // namespace weft
