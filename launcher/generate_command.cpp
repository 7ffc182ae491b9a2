// weft generate: run one prompt through the engine and print what it generates.
//   --prompt TEXT [--chat [--system TEXT]]   text in, text streamed out (needs tokenizer.json);
//                                            --chat-template / --chat-template-name pick the template
//   --prompt-ids 1,2,3                       token ids in, token ids out
//   --json                                   one JSON object: ids, text, per-step logprobs
#include <cstdio>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "engine/text_detokenizer.h"
#include "launcher/command_specs.h"
#include "launcher/commands.h"
#include "launcher/engine_session.h"
#include "launcher/prompt_input.h"
#include "launcher/request_flags.h"
#include "launcher/sampling_flags.h"
#include "nlohmann/json.hpp"

namespace weft {
namespace {

int fail(const absl::Status& status) {
  std::cerr << "weft generate: " << status.message() << "\n";
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

int generate(EngineSession& session, const CliArgs& cli, const absl::StatusOr<PromptInput>& prompt,
             const SamplingParams& sampling, bool json);

struct SequenceResult {
  std::vector<int32_t> ids;
  std::string text;
  std::string finish_reason;
  nlohmann::json steps = nlohmann::json::array();
};

}  // namespace

int run_generate(const std::vector<std::string>& args) {
  auto parsed = parse_command(command_spec("generate"), args, fail);
  if (const int* done = std::get_if<int>(&parsed)) return *done;
  const CliArgs& cli = std::get<CliArgs>(parsed);
  SamplingParams defaults;
  defaults.temperature = 0.0f;
  // Flag errors come before the (slow) model load; the model's own defaults come with the model.
  if (auto checked = sampling_params_from(cli, defaults); !checked.ok()) return fail(checked.status());
  auto started = EngineSession::start(cli);
  if (!started.ok()) return fail(started.status());
  EngineSession& session = **started;
  // Only the coordinator reads the prompt and talks to the user.
  absl::StatusOr<PromptInput> prompt = PromptInput{};
  if (session.is_coordinator()) prompt = prompt_from_flags(cli, session.options().model_dir);
  DetokenizerFactory detokenizers;
  if (prompt.ok() && prompt->tokenizer) detokenizers = text_detokenizers(prompt->tokenizer);
  if (absl::Status s = session.load(detokenizers); !s.ok()) return fail(s);
  return run_session(session, [&] {
    // Inside the session, so an error here still ends the other ranks' step loops.
    auto model_defaults = model_sampling_defaults(cli, session.model().generation, defaults);
    if (!model_defaults.ok()) return fail(model_defaults.status());
    auto params = sampling_params_from(cli, *model_defaults);
    if (!params.ok()) return fail(params.status());
    const bool json = cli.has("json");
    if (json && !params->logprobs) params->logprobs = 5;
    return generate(session, cli, prompt, *params, json);
  });
}

namespace {

int generate(EngineSession& session, const CliArgs& cli, const absl::StatusOr<PromptInput>& prompt,
             const SamplingParams& sampling, bool json) {
  if (!prompt.ok()) return fail(prompt.status());
  const SamplingParams& params = sampling;
  Engine& engine = session.engine();
  auto request = request_from_flags(cli, *prompt, params, session);
  if (!request.ok()) return fail(request.status());
  auto id = engine.add_request(*std::move(request));
  if (!id.ok()) return fail(id.status());

  // One sequence streams as it goes; several are printed whole at the end.
  const bool stream = !json && params.n == 1;
  std::vector<SequenceResult> results(params.n);
  while (engine.has_unfinished()) {
    auto outputs = engine.step();
    if (!outputs.ok()) {
      session.abort(1, absl::StrCat("rank 0: ", outputs.status().message()));
      return 1;
    }
    for (const SequenceOutput& out : *outputs) {
      SequenceResult& r = results[out.index];
      for (size_t i = 0; i < out.token_ids.size(); ++i) {
        r.ids.push_back(out.token_ids[i]);
        nlohmann::json top = nlohmann::json::array();
        for (const auto& [token, logprob] : out.samples[i].top_logprobs) top.push_back({token, logprob});
        r.steps.push_back({{"token", out.token_ids[i]}, {"logprob", out.samples[i].logprob},
                           {"top_logprobs", top}});
        if (stream && !prompt->tokenizer) {
          std::cout << (r.ids.size() > 1 ? "," : "") << out.token_ids[i] << std::flush;
        }
      }
      r.text += out.text;
      if (stream && prompt->tokenizer) std::cout << out.text << std::flush;
      if (out.finished) r.finish_reason = std::string(finish_reason_name(out.finish_reason));
    }
  }
  if (const KvTierDirectory* tiers = engine.kv_tiers()) std::cerr << "weft generate: " << kv_tier_summary(*tiers) << "\n";
  if (json) {
    nlohmann::json sequences = nlohmann::json::array();
    for (const SequenceResult& r : results) {
      nlohmann::json s = {{"output_ids", r.ids}, {"finish_reason", r.finish_reason}, {"steps", r.steps}};
      if (prompt->tokenizer) s["text"] = r.text;
      sequences.push_back(s);
    }
    nlohmann::json result = {{"prompt_ids", prompt->ids}};
    if (params.n == 1) {
      result.update(sequences[0]);
    } else {
      result["sequences"] = sequences;
    }
    // Text is valid UTF-8 by construction; replace (never throw) should a model emit otherwise.
    std::cout << result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  if (!stream) {
    for (size_t i = 0; i < results.size(); ++i) {
      std::cout << "[" << i << "] " << results[i].text;
      if (!prompt->tokenizer) {
        for (size_t t = 0; t < results[i].ids.size(); ++t) std::cout << (t ? "," : "") << results[i].ids[t];
      }
      std::cout << "\n";
    }
    return 0;
  }
  std::cout << "\n";
  return 0;
}

}  // namespace
}  // namespace weft
