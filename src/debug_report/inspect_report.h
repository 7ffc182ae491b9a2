// The data of a debugging report (JSON) of one generation, gathered piece by piece while the
// request runs (weft inspect, and weft serve for a request with "weft_debug": true):
// the prompt's tokens, the effective sampling parameters and where each came from, every
// generated step's choice against the raw distribution, the stop condition, the KV blocks and the
// process's memory, and the attention weights the engine's kernels recorded. The HTML page
// (inspect_html.h) is drawn from the finished JSON alone.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model/layers/attention_probe.h"
#include "model/model_config.h"
#include "nlohmann/json.hpp"
#include "sampling/sampling_params.h"
#include "tokenizer/tokenizer.h"

namespace weft {

using ReportJson = nlohmann::ordered_json;

// One entry per token: id, piece (its bytes in the text; null without a tokenizer), special,
// byte_fallback, offset (where its bytes start in the concatenated pieces).
ReportJson token_list_json(const std::vector<int32_t>& ids, const Tokenizer* tokenizer);

// Where one effective sampling parameter came from, asked by its report field name
// ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty",
// "frequency_penalty", "max_tokens", "min_tokens", "stop", "stop_token_ids", "ignore_eos",
// "logprobs", "seed"): e.g. "request (--top-p)", "generation_config.json (top_p)", "weft default".
using SamplingSourceOf = std::function<std::string(const std::string& field)>;

// The source of a parameter the request did not set: generation_config.json's field when the
// defaults come from the file (`file_used`) and it sets the field, else "weft default". Only
// temperature, top_p, top_k, min_p, repetition_penalty and max_tokens (max_new_tokens) can come
// from the file (engine/generation_defaults.h).
std::string default_sampling_source(const std::string& field, const GenerationConfig& generation,
                                    bool file_used);

// Each effective parameter with its source (`source_of`; seed without a value: the engine's).
// `eos_ids`: what the engine stops on, from generation_config.json when it names any.
ReportJson sampling_json(const SamplingParams& params, const SamplingSourceOf& source_of,
                         const GenerationConfig& generation, const std::vector<int32_t>& eos_ids);

// One generated step: the chosen token with its raw probability, rank and the row's entropy
// (SampleResult::diagnostics), the raw top alternatives, the probability it was drawn with, and
// `changed_by`: what made the choice differ from the raw row's first choice (empty: nothing did).
ReportJson step_json(int64_t index, const SampleResult& sample, const SamplingParams& params,
                     const Tokenizer* tokenizer);

// Why the sequence ended: finish_reason plus kind (eos, stop_token, stop_string, grammar_complete,
// max_tokens, context_length, content_filter, abort, error) and its detail (the stop string and
// its byte offset in the generated text, the token id, the limit).
ReportJson stop_json(const SequenceOutput& last, const std::string& text, int64_t prompt_len,
                     int64_t num_output, const SamplingParams& params,
                     const std::vector<int32_t>& eos_ids, int64_t max_model_len);

// getrusage of this process: peak resident set and major page faults (since it started).
struct ProcessUsage {
  int64_t peak_rss_bytes = 0;
  int64_t major_faults = 0;
  static ProcessUsage now();
  std::string serialize() const;
  static ProcessUsage parse(const std::string& text);
};

// The layers and query heads a report records when not told: the first, middle and last layers;
// query heads 0 and 1 (one head when the model has one).
AttentionSelection default_attention_selection(int num_layers, int num_heads);

// The recorded rows as the report shows them: selection, and per (layer, head) the rows that
// chose generated token i (query position prompt_len - 1 + i), each with its weights over
// positions [0, position] and its `top` most attended positions.
ReportJson attention_json(const AttentionSelection& selection,
                          const std::vector<AttentionRecord>& records, int64_t prompt_len,
                          int64_t num_output, int top);

}  // namespace weft
