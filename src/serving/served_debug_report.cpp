#include "serving/served_debug_report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "tokenizer/tokenizer.h"

namespace weft {
namespace {

using nlohmann::json;

ApiError debug_error(std::string message) {
  ApiError e;
  e.message = std::move(message);
  e.param = "weft_debug";
  return e;
}

}  // namespace

std::variant<bool, ApiError> take_weft_debug_field(json& body, bool enabled) {
  auto it = body.find("weft_debug");
  if (it == body.end()) return false;
  if (!enabled) {
    return debug_error(
        "weft_debug: debugging reports are off on this server (start weft serve with "
        "--enable-debug-reports)");
  }
  if (!it->is_boolean()) {
    return debug_error(absl::StrCat("weft_debug: expected a boolean, got ", it->type_name(),
                                    " (serve records no attention weights, so there are no options)"));
  }
  const bool on = it->get<bool>();
  body.erase(it);
  return on;
}

std::optional<ApiError> prepare_debug_request(GenerationRequest& request) {
  if (request.stream) {
    return debug_error("weft_debug: not available with stream true (the report comes with the whole response)");
  }
  if (request.prompts.size() != 1) {
    return debug_error(absl::StrCat("weft_debug: a report follows one prompt, the request has ",
                                    request.prompts.size()));
  }
  if (request.n() != 1) {
    return debug_error(absl::StrCat("weft_debug: a report follows one sequence (n 1), the request has n ",
                                    request.n()));
  }
  if (!request.generate) return debug_error("weft_debug: the request generates nothing (max_tokens 0)");
  SamplingParams& p = request.prompts.front().engine_request.params;
  p.diagnostics = true;
  if (!p.logprobs) p.logprobs = 5;
  return std::nullopt;
}

ReportJson served_sampling_json(const json& body, ApiKind kind, const SamplingParams& params,
                                const ServedModel& model) {
  auto source_of = [&](const std::string& field) -> std::string {
    std::vector<std::string> names = {field};
    if (field == "max_tokens") names.push_back("max_completion_tokens");
    if (field == "logprobs" && kind == ApiKind::kChat) names = {"top_logprobs", "logprobs"};
    for (const std::string& name : names) {
      if (body.contains(name) && !body[name].is_null()) return "request (" + name + ")";
    }
    if (field == "logprobs") return "weft_debug (the report's 5 alternatives; the response has no logprobs)";
    if (field == "max_tokens" && kind == ApiKind::kChat) return "server (chat without max_tokens: the rest of the context)";
    return default_sampling_source(field, model.generation, model.generation_config_used);
  };
  return sampling_json(params, source_of, model.generation, model.eos_token_ids);
}

ServedDebugReport::ServedDebugReport(const ServedModel& model, const Request& request, ReportJson sampling)
    : model_(model),
      prompt_ids_(request.prompt_ids),
      params_(request.params),
      sampling_(std::move(sampling)),
      major_faults_before_(ProcessUsage::now().major_faults) {}

void ServedDebugReport::add(const StreamEvent& event, const EngineGauges& gauges) {
  kv_blocks_peak_ = std::max(kv_blocks_peak_, gauges.num_kv_blocks - gauges.num_free_kv_blocks);
  const SequenceOutput& out = event.output;
  const Tokenizer* tokenizer = model_.tokenizer.get();
  for (size_t i = 0; i < out.token_ids.size() && i < out.samples.size(); ++i) {
    steps_.push_back(step_json(static_cast<int64_t>(output_ids_.size()), out.samples[i], params_, tokenizer));
    output_ids_.push_back(out.token_ids[i]);
  }
  text_ += out.text;
  if (out.finished) last_ = out;
}

ReportJson ServedDebugReport::finish(const std::string& response_id, const EngineGauges& gauges) {
  kv_blocks_peak_ = std::max(kv_blocks_peak_, gauges.num_kv_blocks - gauges.num_free_kv_blocks);
  const Tokenizer* tokenizer = model_.tokenizer.get();
  const int64_t prompt_len = static_cast<int64_t>(prompt_ids_.size());
  const int64_t num_output = static_cast<int64_t>(output_ids_.size());
  ReportJson r;
  r["model"] = model_.name;
  r["response_id"] = response_id;
  r["html"] = "/v1/debug/reports/" + response_id;
  // The prompt as the engine got it: the chat template's rendering, special tokens kept.
  r["prompt"] = {{"text", tokenizer != nullptr ? ReportJson(tokenizer->decode(prompt_ids_, false))
                                               : ReportJson(nullptr)},
                 {"tokens", token_list_json(prompt_ids_, tokenizer)}};
  r["sampling"] = std::move(sampling_);
  r["steps"] = std::move(steps_);
  r["output_ids"] = output_ids_;
  if (tokenizer != nullptr) r["text"] = text_;
  r["stop"] = stop_json(last_, text_, prompt_len, num_output, params_, model_.eos_token_ids, model_.max_model_len);
  const ProcessUsage usage = ProcessUsage::now();
  r["resources"] = {{"kv_blocks_peak_engine", kv_blocks_peak_},
                    {"kv_blocks_total", gauges.num_kv_blocks},
                    {"kv_blocks_note", "the engine's blocks in use (every request of the batch), sampled "
                                       "whenever this request had news"},
                    {"banned_phrase_rolled_back_tokens_engine", gauges.banned_phrases.rolled_back_tokens},
                    {"ranks", ReportJson::array({{{"rank", 0},
                                                  {"peak_rss_bytes", usage.peak_rss_bytes},
                                                  {"major_page_faults", usage.major_faults}}})},
                    {"major_page_faults_during_generation", usage.major_faults - major_faults_before_}};
  r["attention"] = {{"layers", ReportJson::array()},
                    {"heads", ReportJson::array()},
                    {"maps", ReportJson::array()},
                    {"note", "not recorded on weft serve (use weft inspect for attention weights)"}};
  return r;
}

}  // namespace weft
