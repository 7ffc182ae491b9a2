// "weft_debug": true on /v1/completions and /v1/chat/completions: the debugging report of
// weft inspect (debug_report/inspect_report.h) for one served request.
//
// Off by default: the server must run with --enable-debug-reports (OpenAiServerOptions::
// enable_debug_reports), and with an API key the request carries it like every /v1 request.
// The field is never ignored: while reports are off, any "weft_debug" is refused (400 naming it);
// a value other than a boolean is refused; false is the same as absent.
// A report follows one sequence: stream true, n other than 1 and several prompts are refused
// (400 naming weft_debug). Attention weights are not recorded on serve (the probe records every
// sequence of the continuous batch and the serving step loop does not gather them from the
// ranks); the report's "attention" says so. Everything else is what weft inspect reports:
// prompt tokens, sampling parameters with their sources (request field, generation_config.json
// when the server uses it (--generation-config auto), weft default; serve has no sampling flags
// of its own), per step the chosen token against the raw distribution (the engine's sampler
// diagnostics), the stop condition, and resources. The KV blocks there are the engine's (every
// request of the batch), sampled whenever this request's stream had news; RSS and page faults are
// the serving process's (rank 0).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "debug_report/inspect_report.h"
#include "engine/async_engine.h"
#include "nlohmann/json.hpp"
#include "serving/openai_request.h"

namespace weft {

// Reads and removes "weft_debug" from `body`: true when a report is asked for. Errors (400,
// param weft_debug): reports off (`enabled` false) and the field present, or not a boolean.
std::variant<bool, ApiError> take_weft_debug_field(nlohmann::json& body, bool enabled);

// Checks that the parsed request can have a report (one prompt, n 1, not streamed) and turns on
// what the report needs: the sampler's diagnostics, and the top 5 alternatives when the request
// asked for no logprobs (the response still carries none then). Returns the refusal otherwise.
std::optional<ApiError> prepare_debug_request(GenerationRequest& request);

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
  ReportJson sampling_;
  ReportJson steps_ = ReportJson::array();
  std::vector<int32_t> output_ids_;
  std::string text_;
  SequenceOutput last_;
  int64_t kv_blocks_peak_ = 0;
  int64_t major_faults_before_ = 0;
};

}  // namespace weft
