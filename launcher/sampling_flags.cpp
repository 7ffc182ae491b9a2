#include "launcher/sampling_flags.h"

#include "core/status_macros.h"
#include "engine/generation_defaults.h"

namespace weft {

std::vector<FlagSpec> sampling_flag_specs() {
  return {
      {"max-tokens", "N", "output tokens at most (default: generation_config.json's, else 16)"},
      {"min-tokens", "N", "output tokens before EOS or a stop may end it (default 0)"},
      {"temperature", "T", "0 = greedy (default: generation_config.json's, else 0)"},
      {"top-k", "K", "sample from the K most likely tokens (0: all)"},
      {"top-p", "P", "sample from the smallest set of tokens with probability >= P"},
      {"min-p", "P", "drop tokens less likely than P times the most likely one"},
      {"repetition-penalty", "R", "penalize tokens already in the prompt or output (1: off)"},
      {"presence-penalty", "P", "subtract P from the logits of tokens already generated"},
      {"frequency-penalty", "F", "subtract F per earlier occurrence in the output"},
      {"stop", "TEXT", "stop before TEXT (repeatable)"},
      {"stop-token-ids", "1,2", "stop after any of these token ids"},
      {"ignore-eos", "", "keep generating past the end-of-sequence token"},
      {"n", "N", "sequences per prompt"},
      {"logprobs", "N", "top-N alternatives per token"},
      {"request-seed", "S", "seed of this request's sampling"},
      {"keep-special-tokens", "", "show special tokens in the text"},
  };
}

absl::StatusOr<SamplingParams> model_sampling_defaults(const CliArgs& args, const GenerationConfig& generation,
                                                       SamplingParams base) {
  if (args.get_or("generation-config", "auto") == "none") return base;
  return sampling_defaults_from(generation, std::move(base));
}

absl::StatusOr<SamplingParams> sampling_params_from(const CliArgs& args, SamplingParams p) {
  auto as_float = [&](const char* name, float& field) -> absl::Status {
    WEFT_ASSIGN_OR_RETURN(double v, args.get_double(name, field));
    field = static_cast<float>(v);
    return absl::OkStatus();
  };
  auto as_int = [&](const char* name, int& field) -> absl::Status {
    WEFT_ASSIGN_OR_RETURN(int64_t v, args.get_int(name, field));
    field = static_cast<int>(v);
    return absl::OkStatus();
  };
  WEFT_RETURN_IF_ERROR(as_float("temperature", p.temperature));
  WEFT_RETURN_IF_ERROR(as_float("top-p", p.top_p));
  WEFT_RETURN_IF_ERROR(as_float("min-p", p.min_p));
  WEFT_RETURN_IF_ERROR(as_float("repetition-penalty", p.repetition_penalty));
  WEFT_RETURN_IF_ERROR(as_float("presence-penalty", p.presence_penalty));
  WEFT_RETURN_IF_ERROR(as_float("frequency-penalty", p.frequency_penalty));
  WEFT_RETURN_IF_ERROR(as_int("top-k", p.top_k));
  WEFT_RETURN_IF_ERROR(as_int("max-tokens", p.max_tokens));
  WEFT_RETURN_IF_ERROR(as_int("min-tokens", p.min_tokens));
  WEFT_RETURN_IF_ERROR(as_int("n", p.n));
  if (args.has("logprobs")) {
    int logprobs = 0;
    WEFT_RETURN_IF_ERROR(as_int("logprobs", logprobs));
    p.logprobs = logprobs;
  }
  if (args.has("request-seed")) {
    WEFT_ASSIGN_OR_RETURN(int64_t seed, args.get_int("request-seed", 0));
    p.seed = static_cast<uint64_t>(seed);
  }
  for (const std::string& stop : args.get_all("stop")) p.stop.push_back(stop);
  WEFT_ASSIGN_OR_RETURN(std::vector<int32_t> stop_ids, args.get_int_list("stop-token-ids"));
  p.stop_token_ids.insert(p.stop_token_ids.end(), stop_ids.begin(), stop_ids.end());
  if (args.has("ignore-eos")) p.ignore_eos = true;
  if (args.has("keep-special-tokens")) p.skip_special_tokens = false;
  return p;
}

}  // namespace weft
