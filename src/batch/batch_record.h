// One line of an OpenAI Batch input file, and the output / error records written for it.
//
// Input line: {"custom_id": string, "method": "POST", "url": "/v1/chat/completions" |
// "/v1/completions", "body": {...}} where body is an OpenAI request: chat has "messages";
// completions has "prompt" (a string, or an array of token ids). Sampling fields are read by
// sampling_params_from_json (sampling/sampling_params_json.h).
//
// Output record (one JSON line): {"id", "custom_id", "response": {"status_code": 200,
// "request_id", "body": <an OpenAI chat.completion / text_completion object>}, "error": null}.
// Error record: {"id", "custom_id" (null when unreadable), "response": {"status_code": 400,
// "body": {"error": {...}}} or null, "error": {"code", "message"}, "line": <1-based input line>}.
// Ids derive from the custom_id (stable across restarts); "created" is the time of writing.
// Choices carry logprobs when the body asks for them, in the form `weft serve` answers
// (serving/openai_logprobs.h), and chat choices of lines with tools their tool_calls
// (finish_reason "tool_calls" when calls were made and the reply stopped by itself).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tool_calls/tool_call_format.h"

namespace weft {

enum class BatchEndpoint { kChatCompletions, kCompletions };

struct BatchLine {
  std::string custom_id;
  BatchEndpoint endpoint = BatchEndpoint::kCompletions;
  nlohmann::json body;  // an object
  // body.tools with its keys in the line's order (the chat template renders them so, and the
  // tool-call grammar generates properties in that order); null when the body has none.
  nlohmann::ordered_json tools_in_order;
};

// Parses one input line. InvalidArgument naming the field on any shape error; when the line is
// JSON with a string custom_id, `*custom_id` receives it even if the rest is bad.
absl::StatusOr<BatchLine> parse_batch_line(const std::string& line, std::optional<std::string>* custom_id);

// What one request produced, per choice (n of them).
struct BatchChoice {
  std::string text;
  std::vector<int32_t> token_ids;
  std::string finish_reason;  // "stop" | "length" | "abort"
  nlohmann::json logprobs;    // serving/openai_logprobs.h form; null until a token arrives
};

struct BatchResult {
  BatchEndpoint endpoint = BatchEndpoint::kCompletions;
  std::string custom_id;
  std::string model;
  int64_t prompt_tokens = 0;
  std::vector<BatchChoice> choices;
  bool include_token_ids = false;  // "token_ids" in each choice (token-id mode or asked for)
  bool logprobs = false;           // the request asked for logprobs: each choice reports them
  // vLLM's prompt_logprobs N: the list (serving/openai_logprobs.h vllm_prompt_logprobs), per choice
  // for completions and beside the choices for chat, as vLLM answers.
  std::optional<int> prompt_logprobs;
  nlohmann::json prompt_logprobs_list;  // null until the engine reported them
  // Chat with tools and tool_choice other than "none": each choice's text is parsed for tool
  // calls in this format, into message.tool_calls (serving/openai_tool_calls.h, as weft serve
  // answers); parallel false keeps the first call.
  std::optional<ToolCallFormat> tool_calls;
  bool parallel_tool_calls = true;
};

// "batch_req_<16 hex digits>" from a hash of the custom_id.
std::string batch_request_id(const std::string& custom_id);

// The output record of a finished request (no trailing newline).
nlohmann::ordered_json output_record(const BatchResult& result, int64_t created);
// The error record of input line `line` (1-based).
nlohmann::ordered_json error_record(const std::optional<std::string>& custom_id, int64_t line,
                            const std::string& code, const std::string& message);

// The line as written: compact JSON, invalid UTF-8 replaced (never throws), plus '\n'.
std::string record_line(const nlohmann::ordered_json& record);

}  // namespace weft
