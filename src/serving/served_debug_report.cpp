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

namespace {

// One "attention_layers" / "attention_heads" list: integers in [0, count), sorted, each once.
std::variant<std::vector<int>, ApiError> index_list(const json& value, const std::string& member, int count) {
  if (!value.is_array()) {
    return debug_error(absl::StrCat("weft_debug.", member, ": expected an array of indices, got ", value.type_name()));
  }
  std::vector<int> out;
  for (const json& v : value) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= count) {
      return debug_error(absl::StrCat("weft_debug.", member, ": ", v.dump(), " is not an index in [0, ", count,
                                      ") of this model"));
    }
    out.push_back(v.get<int>());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

std::variant<std::optional<AttentionSelection>, ApiError> take_weft_debug_field(json& body, bool enabled,
                                                                               const ServedModel& model) {
  auto it = body.find("weft_debug");
  if (it == body.end()) return std::nullopt;
  if (!enabled) {
    return debug_error(
        "weft_debug: debugging reports are off on this server (start weft serve with "
        "--enable-debug-reports)");
  }
  const json value = std::move(*it);
  body.erase(it);
  AttentionSelection selection;
  if (model.records_attention) selection = default_attention_selection(model.num_layers, model.num_attention_heads);
  if (value.is_boolean()) {
    if (!value.get<bool>()) return std::nullopt;
    return selection;
  }
  if (!value.is_object()) {
    return debug_error(absl::StrCat("weft_debug: expected true, false or an object {\"attention_layers\": [...], "
                                    "\"attention_heads\": [...]}, got ", value.type_name()));
  }
  for (const auto& [member, v] : value.items()) {
    const bool layers = member == "attention_layers";
    if (!layers && member != "attention_heads") {
      return debug_error(absl::StrCat("weft_debug.", member,
                                      ": unknown member (expected attention_layers, attention_heads)"));
    }
    auto list = index_list(v, member, layers ? model.num_layers : model.num_attention_heads);
    if (auto* e = std::get_if<ApiError>(&list)) return std::move(*e);
    std::vector<int>& chosen = layers ? selection.layers : selection.heads;
    chosen = std::get<std::vector<int>>(std::move(list));
    if (!model.records_attention && !chosen.empty()) {
      return debug_error(absl::StrCat("weft_debug.", member, ": this server's executor (--device cuda) records no ",
                                      "attention weights; ask for none ([]) or use --device cpu"));
    }
  }
  return selection;
}

std::optional<ApiError> prepare_debug_request(GenerationRequest& request, const AttentionSelection& attention) {
  if (request.prompts.size() != 1) {
    return debug_error(absl::StrCat("weft_debug: a report follows one prompt, the request has ",
                                    request.prompts.size()));
  }
  if (request.n() != 1) {
    return debug_error(absl::StrCat("weft_debug: a report follows one sequence (n 1), the request has n ",
                                    request.n()));
  }
  if (!request.generate) return debug_error("weft_debug: the request generates nothing (max_tokens 0)");
  Request& engine_request = request.prompts.front().engine_request;
  SamplingParams& p = engine_request.params;
  p.diagnostics = true;
  if (!p.logprobs) p.logprobs = 5;
  if (!attention.layers.empty() && !attention.heads.empty()) engine_request.record_attention = attention;
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
      attention_(request.record_attention),
      sampling_(std::move(sampling)),
      trace_(request.params, model.tokenizer.get()),
      major_faults_before_(ProcessUsage::now().major_faults) {}

void ServedDebugReport::add(const StreamEvent& event, const EngineGauges& gauges) {
  kv_blocks_peak_ = std::max(kv_blocks_peak_, gauges.num_kv_blocks - gauges.num_free_kv_blocks);
  trace_.add(event.output);
}

ReportJson ServedDebugReport::finish(const std::string& response_id, const EngineGauges& gauges) {
  kv_blocks_peak_ = std::max(kv_blocks_peak_, gauges.num_kv_blocks - gauges.num_free_kv_blocks);
  const Tokenizer* tokenizer = model_.tokenizer.get();
  const int64_t prompt_len = static_cast<int64_t>(prompt_ids_.size());
  ReportJson r;
  r["model"] = model_.name;
  r["response_id"] = response_id;
  r["html"] = "/v1/debug/reports/" + response_id;
  // The prompt as the engine got it: the chat template's rendering, special tokens kept.
  r["prompt"] = {{"text", tokenizer != nullptr ? ReportJson(tokenizer->decode(prompt_ids_, false))
                                               : ReportJson(nullptr)},
                 {"tokens", token_list_json(prompt_ids_, tokenizer)}};
  r["sampling"] = std::move(sampling_);
  trace_.write(r);
  r["stop"] = stop_json(trace_.last(), trace_.text(), prompt_len, trace_.num_output(), params_, model_.eos_token_ids,
                        model_.max_model_len);
  const ProcessUsage usage = ProcessUsage::now();
  // The gauges are read when events reach the server, after the engine may already have freed
  // blocks (a finished sequence's at once), so they can miss the peak; the engine held at least
  // what this request held.
  r["resources"] = {{"kv_blocks_peak_request", trace_.kv_blocks_peak()},
                    {"kv_blocks_peak_engine", std::max(kv_blocks_peak_, trace_.kv_blocks_peak())},
                    {"kv_blocks_total", gauges.num_kv_blocks},
                    {"kv_blocks_note", "request: the blocks this request's sequence held; engine: every request "
                                       "of the batch, sampled whenever this request had news"},
                    {"banned_phrase_rolled_back_tokens_engine", gauges.banned_phrases.rolled_back_tokens},
                    {"ranks", ReportJson::array({{{"rank", 0},
                                                  {"peak_rss_bytes", usage.peak_rss_bytes},
                                                  {"major_page_faults", usage.major_faults}}})},
                    {"major_page_faults_during_generation", usage.major_faults - major_faults_before_}};
  if (attention_) {
    r["attention"] = attention_json(*attention_, trace_.attention(), prompt_len, trace_.num_output(), 5);
  } else {
    r["attention"] = {{"layers", ReportJson::array()},
                      {"heads", ReportJson::array()},
                      {"maps", ReportJson::array()},
                      {"note", model_.records_attention
                                   ? "none asked for (weft_debug's attention_layers or attention_heads was empty)"
                                   : "not recorded: this server's executor (--device cuda) records no attention weights"}};
  }
  return r;
}

}  // namespace weft
