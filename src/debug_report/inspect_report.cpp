#include "debug_report/inspect_report.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "sampling/stop_checker.h"
#include "tokenizer/tokenizer.h"

namespace weft {
namespace {

ReportJson piece_of(int32_t id, const Tokenizer* tokenizer) {
  if (tokenizer == nullptr) return nullptr;
  std::optional<std::string> bytes = tokenizer->token_bytes(id);
  return bytes ? ReportJson(*bytes) : ReportJson(nullptr);
}

// A float parameter as the decimal it was written as (0.8, not 0.800000011920929).
double decimal(float v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.7g", static_cast<double>(v));
  return std::strtod(text, nullptr);
}

ReportJson sourced(ReportJson value, const std::string& source) {
  return {{"value", std::move(value)}, {"source", source}};
}

}  // namespace

ReportJson token_list_json(const std::vector<int32_t>& ids, const Tokenizer* tokenizer) {
  ReportJson out = ReportJson::array();
  int64_t offset = 0;
  for (int32_t id : ids) {
    ReportJson t = {{"id", id}, {"piece", piece_of(id, tokenizer)}};
    t["special"] = tokenizer != nullptr && tokenizer->is_special(id);
    t["byte_fallback"] = tokenizer != nullptr && tokenizer->is_fallback_byte(id);
    t["offset"] = tokenizer != nullptr ? ReportJson(offset) : ReportJson(nullptr);
    if (t["piece"].is_string())
      offset += static_cast<int64_t>(t["piece"].get<std::string>().size());
    out.push_back(std::move(t));
  }
  return out;
}

std::string default_sampling_source(const std::string& field, const GenerationConfig& g,
                                    bool file_used) {
  auto from_file = [&](bool sets, const char* file_field) {
    return file_used && sets ? std::string("generation_config.json (") + file_field + ")"
                             : std::string("weft default");
  };
  if (field == "temperature") return from_file(g.temperature.has_value(), "temperature");
  if (field == "top_p") return from_file(g.top_p.has_value(), "top_p");
  if (field == "top_k") return from_file(g.top_k.has_value(), "top_k");
  if (field == "min_p") return from_file(g.min_p.has_value(), "min_p");
  if (field == "repetition_penalty")
    return from_file(g.repetition_penalty.has_value(), "repetition_penalty");
  if (field == "max_tokens") return from_file(g.max_new_tokens.has_value(), "max_new_tokens");
  return "weft default";
}

ReportJson sampling_json(const SamplingParams& p, const SamplingSourceOf& source,
                         const GenerationConfig& generation, const std::vector<int32_t>& eos_ids) {
  ReportJson out;
  out["temperature"] = sourced(decimal(p.temperature), source("temperature"));
  out["greedy"] = p.is_greedy();
  out["top_p"] = sourced(decimal(p.top_p), source("top_p"));
  out["top_k"] = sourced(p.top_k, source("top_k"));
  out["min_p"] = sourced(decimal(p.min_p), source("min_p"));
  out["repetition_penalty"] =
      sourced(decimal(p.repetition_penalty), source("repetition_penalty"));
  out["presence_penalty"] = sourced(decimal(p.presence_penalty), source("presence_penalty"));
  out["frequency_penalty"] = sourced(decimal(p.frequency_penalty), source("frequency_penalty"));
  out["max_tokens"] = sourced(p.max_tokens, source("max_tokens"));
  out["min_tokens"] = sourced(p.min_tokens, source("min_tokens"));
  out["stop"] = sourced(p.stop, source("stop"));
  out["stop_token_ids"] = sourced(p.stop_token_ids, source("stop_token_ids"));
  out["ignore_eos"] = sourced(p.ignore_eos, source("ignore_eos"));
  out["logprobs"] = sourced(p.logprobs.value_or(0), source("logprobs"));
  out["seed"] = p.seed ? sourced(*p.seed, source("seed"))
                       : sourced(nullptr, "engine seed (--seed or random)");
  out["eos_token_ids"] =
      sourced(eos_ids, generation.eos_token_ids.empty() ? "config.json"
                                                        : "generation_config.json (eos_token_id)");
  return out;
}

ReportJson step_json(int64_t index, const SampleResult& sample, const SamplingParams& params,
                     const Tokenizer* tokenizer) {
  ReportJson s = {
      {"index", index}, {"token", sample.token}, {"piece", piece_of(sample.token, tokenizer)}};
  s["special"] = tokenizer != nullptr && tokenizer->is_special(sample.token);
  s["logprob"] = std::isnan(sample.logprob) ? ReportJson(nullptr) : ReportJson(sample.logprob);
  s["probability"] =
      std::isnan(sample.logprob) ? ReportJson(nullptr) : ReportJson(std::exp(sample.logprob));
  ReportJson top = ReportJson::array();
  for (const auto& [id, logprob] : sample.top_logprobs) {
    top.push_back({{"token", id},
                   {"piece", piece_of(id, tokenizer)},
                   {"logprob", logprob},
                   {"probability", std::exp(logprob)}});
  }
  s["top"] = std::move(top);
  ReportJson changed = ReportJson::array();
  if (const auto& d = sample.diagnostics) {
    s["rank"] = d->raw_rank;
    s["entropy"] = d->raw_entropy;
    s["sampled_probability"] = d->sampled_probability;
    s["raw_argmax"] = d->raw_argmax;
    s["processed_argmax"] = d->processed_argmax;
    if (d->processed_argmax != d->raw_argmax) {
      // What can move the first choice of a row (sampler.h's order): the mask, then the processors.
      if (d->masked) changed.push_back("constraint or banned-phrase mask");
      if (!params.logit_bias.empty()) changed.push_back("logit_bias");
      if (index < params.min_tokens) changed.push_back("min_tokens (end of sequence suppressed)");
      if (params.repetition_penalty != 1.0f) changed.push_back("repetition_penalty");
      if (params.presence_penalty != 0.0f) changed.push_back("presence_penalty");
      if (params.frequency_penalty != 0.0f) changed.push_back("frequency_penalty");
    }
  }
  s["changed_by"] = std::move(changed);
  return s;
}

ReportJson stop_json(const SequenceOutput& last, const std::string& text, int64_t prompt_len,
                     int64_t num_output, const SamplingParams& params,
                     const std::vector<int32_t>& eos_ids, int64_t max_model_len) {
  ReportJson s = {{"finish_reason", std::string(finish_reason_name(last.finish_reason))}};
  switch (last.finish_reason) {
    case FinishReason::kStop:
      if (last.stop_string) {
        s["kind"] = "stop_string";
        s["stop_string"] = *last.stop_string;
        // The text ends where the stop string began (it is not part of the output).
        s["offset"] = text.size();
        s["detail"] =
            "stop string matched at byte " + std::to_string(text.size()) + " of the generated text";
      } else if (last.stop_token) {
        const bool eos = !params.ignore_eos && std::find(eos_ids.begin(), eos_ids.end(),
                                                         *last.stop_token) != eos_ids.end();
        s["kind"] = eos ? "eos" : "stop_token";
        s["token"] = *last.stop_token;
        s["detail"] =
            std::string(eos ? "end-of-sequence token " : "stop token (--stop-token-ids) ") +
            std::to_string(*last.stop_token);
      } else {
        s["kind"] = "grammar_complete";
        s["detail"] = "the output constraint allows nothing more";
      }
      break;
    case FinishReason::kLength:
      // The engine admits no request whose prompt + max_tokens passes the context, so the
      // context length ends a sequence only together with max_tokens; both are said then.
      s["context_length_reached"] = prompt_len + num_output >= max_model_len;
      if (num_output >= params.max_tokens) {
        s["kind"] = "max_tokens";
        s["limit"] = params.max_tokens;
        s["detail"] = "max_tokens " + std::to_string(params.max_tokens) + " reached";
        if (prompt_len + num_output >= max_model_len) {
          s["detail"] = s["detail"].get<std::string>() + ", which is also the context length " +
                        std::to_string(max_model_len) + " (prompt " + std::to_string(prompt_len) +
                        " tokens)";
        }
      } else {
        s["kind"] = "context_length";
        s["limit"] = max_model_len;
        s["detail"] = "prompt " + std::to_string(prompt_len) + " + output " +
                      std::to_string(num_output) + " tokens reached the context length " +
                      std::to_string(max_model_len);
      }
      break;
    case FinishReason::kContentFilter:
      s["kind"] = "content_filter";
      s["detail"] = "banned-phrase rollbacks exhausted";
      break;
    case FinishReason::kAbort:
      s["kind"] = "abort";
      break;
    default:
      s["kind"] = "error";
      break;
  }
  return s;
}

ProcessUsage ProcessUsage::now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return {static_cast<int64_t>(u.ru_maxrss) * 1024,
          static_cast<int64_t>(u.ru_majflt)};  // ru_maxrss: KiB
}

std::string ProcessUsage::serialize() const {
  return std::to_string(peak_rss_bytes) + " " + std::to_string(major_faults);
}

ProcessUsage ProcessUsage::parse(const std::string& text) {
  ProcessUsage u;
  std::istringstream in(text);
  in >> u.peak_rss_bytes >> u.major_faults;
  return u;
}

AttentionSelection default_attention_selection(int num_layers, int num_heads) {
  AttentionSelection s;
  s.layers = {0, num_layers / 2, num_layers - 1};
  s.heads = {0, std::min(1, num_heads - 1)};
  for (std::vector<int>* v : {&s.layers, &s.heads}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  return s;
}

ReportJson attention_json(const AttentionSelection& selection,
                          const std::vector<AttentionRecord>& records, int64_t prompt_len,
                          int64_t num_output, int top) {
  ReportJson out = {{"layers", selection.layers}, {"heads", selection.heads}};
  std::map<std::pair<int, int>, ReportJson> maps;  // (layer, head) -> rows
  for (const AttentionRecord& r : records) {
    const int64_t step = r.position - (prompt_len - 1);  // the generated token this row chose
    if (step < 0 || step >= num_output) continue;
    std::vector<int32_t> order(r.weights.size());
    for (size_t p = 0; p < order.size(); ++p) order[p] = static_cast<int32_t>(p);
    const size_t k = std::min<size_t>(static_cast<size_t>(top), order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](int32_t a, int32_t b) {
                        return r.weights[a] > r.weights[b] ||
                               (r.weights[a] == r.weights[b] && a < b);
                      });
    ReportJson most = ReportJson::array();
    for (size_t i = 0; i < k; ++i)
      most.push_back({{"position", order[i]}, {"weight", r.weights[order[i]]}});
    ReportJson& rows = maps[{r.layer, r.head}];
    if (rows.is_null()) rows = ReportJson::array();
    rows.push_back({{"step", step},
                    {"position", r.position},
                    {"weights", r.weights},
                    {"top", std::move(most)}});
  }
  ReportJson list = ReportJson::array();
  for (auto& [key, rows] : maps)
    list.push_back({{"layer", key.first}, {"head", key.second}, {"rows", std::move(rows)}});
  out["maps"] = std::move(list);
  return out;
}

}  // namespace weft
