// "weft_debug" on /v1/completions and /v1/chat/completions: the debugging report of weft
// inspect (debug_report/inspect_report.h) for one served request.
//
// Off by default: the server must run with --enable-debug-reports (OpenAiServerOptions::
// enable_debug_reports), and with an API key the request carries it like every /v1 request.
// The field is never ignored: while reports are off, any "weft_debug" is refused (400 naming it).
// Values: true (a report; attention weights of the default layers and heads,
// default_attention_selection); an object {"attention_layers": [...], "attention_heads": [...]}
// (a report; either list may be left out for the default, or empty to record no attention);
// false (no report). Anything else, an unknown member, or an index outside the model is refused.
// A report follows one sequence: n other than 1 and several prompts are refused (400 naming
// weft_debug). A streamed request gets its report as a last chunk before "data: [DONE]":
// {"id", "object", "created", "model", "choices": [], "weft_debug": report}.
// The report is what weft inspect reports: prompt tokens, sampling parameters with their sources
// (request field, generation_config.json when the server uses it (--generation-config auto),
// weft default; serve has no sampling flags of its own), per step the chosen token against the
// raw distribution (the engine's sampler diagnostics), banned-phrase rollbacks with the tokens
// they withdrew, the stop condition, the attention weights the engine's kernels recorded for
// this request on every rank (StepPlan::record_attention; not on --device cuda, where asking
// for layers is refused), and resources: the request's own KV blocks (its peak), the engine's
// (every request of the batch, sampled whenever this request had news), and the serving
// process's RSS and page faults (rank 0).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "debug_report/generation_trace.h"
#include "debug_report/inspect_report.h"
#include "engine/async_engine.h"
#include "nlohmann/json.hpp"
#include "serving/openai_request.h"

namespace weft {

// Reads and removes "weft_debug" from `body`: the attention selection of the report asked for
// (empty lists: no attention), nullopt when none is. Errors (400, param weft_debug): reports off
// (`enabled` false) and the field present, a value of another type, an unknown member, an index
// outside the model, or layers asked of a server whose executor records no attention.
std::variant<std::optional<AttentionSelection>, ApiError> take_weft_debug_field(nlohmann::json& body, bool enabled,
                                                                               const ServedModel& model);

// Checks that the parsed request can have a report (one prompt, n 1) and turns on what the
// report needs: the sampler's diagnostics, the attention recording of `attention` (when it
// names layers and heads), and the top 5 alternatives when the request asked for no logprobs
// (the response still carries none then). Returns the refusal otherwise.
std::optional<ApiError> prepare_debug_request(GenerationRequest& request, const AttentionSelection& attention);

// The sampling section: each parameter from the body's field when it has it (the field the
// request wrote it as: max_completion_tokens, top_logprobs), else the server's defaults.
ReportJson served_sampling_json(const nlohmann::json& body, ApiKind kind, const SamplingParams& params,
                                const ServedModel& model);

// Gathers the report of one request from its stream events (the HTTP loop thread).
class ServedDebugReport {
 public:
  ServedDebugReport(const ServedModel& model, const Request& request, ReportJson sampling);

  // Every event of the request's stream, in order; `gauges`: the engine's now.
  void add(const StreamEvent& event, const EngineGauges& gauges);
  // The finished report; `response_id`: the response it belongs to.
  ReportJson finish(const std::string& response_id, const EngineGauges& gauges);

 private:
  const ServedModel& model_;
  std::vector<int32_t> prompt_ids_;
  SamplingParams params_;
  std::optional<AttentionSelection> attention_;
  ReportJson sampling_;
  GenerationTrace trace_;
  int64_t kv_blocks_peak_ = 0;
  int64_t major_faults_before_ = 0;
};

}  // namespace weft
