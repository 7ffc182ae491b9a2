// OpenAI-compatible request bodies -> engine requests, and errors in the OpenAI shape.
//
// parse_json_body: the body must be a JSON object within request_json_limits()
// (core/bounded_json.h: nesting, sizes and repeated keys checked while parsing).
// parse_generation_request reads /v1/completions and /v1/chat/completions bodies:
//   model (optional; must name the served model: 404 otherwise), prompt (completions: a string,
//   an array of token ids, or an array of either: one prompt each, whose choices are numbered
//   prompt_index * n + i), messages (chat: role + content as a string or an array of
//   {"type": "text", "text"} parts joined with "\n"; rendered with the model's chat template),
//   add_generation_prompt / continue_final_message (chat: how the prompt ends; openai_fields.h),
//   echo (completions: each choice starts with its prompt's text, the string as given or the
//   token ids decoded; chat: with the final message's content, as vLLM), add_special_tokens
//   (default true for completions, false for chat, as vLLM), priority (lower runs first), stream,
//   stream_options.include_usage, the sampling fields of sampling_params_from_json (n,
//   temperature, top_p, top_k, min_p, repetition_penalty, presence / frequency_penalty,
//   logit_bias, seed, stop, stop_token_ids, max_tokens, max_completion_tokens, min_tokens,
//   ignore_eos, skip_special_tokens), bad_words (banned phrases, with the server's
//   --banned-phrases list: openai_fields.h), logprobs (completions: an integer; chat: a boolean, with
//   top_logprobs an integer), chat_template_kwargs and documents (chat: template variables).
//   Chat requests without max_tokens may use the rest of the context; completions default to 16.
//   Prompt logprobs: completions echo with logprobs N puts the prompt tokens' logprobs (null for
//   the first token) before the generated ones in each choice's logprobs, as vLLM and OpenAI's
//   legacy completions do; vLLM's prompt_logprobs N (completions and chat, not with stream) adds
//   vLLM's prompt_logprobs list (per choice for completions, top-level for chat). Either makes the
//   engine compute them (Request::prompt_logprobs, the larger N of the two).
//   max_tokens 0 is accepted with echo only: the reply is the echo, finish_reason "length"; the
//   engine runs (the prompt only) when prompt logprobs are wanted, and not at all otherwise.
// Tool calling (chat; tool_request.h): tools / tool_choice / parallel_tool_calls validated; the
//   tools reach the chat template's `tools` variable (for tool_choice "none" too); with
//   tool_choice other than "none" the reply is parsed in ServedModel::tool_call_format (a 400
//   naming tools when there is none), and skip_special_tokens is turned off when that format's
//   marker is a special token; every tool's parameters schema must compile (400 naming tools);
//   tool_choice "required", a named function, or strict functions with "auto" get the grammar
//   of tool_call_grammar.h (so response_format / structured_outputs / guided_* beside them are
//   refused).
// Refused with a 400 naming the field: the fields of unsupported_field (openai_fields.h: among
// them the legacy functions, tools on completions, suffix, best_of other than n), prompt_logprobs
// outside [0, 20] or with stream, stream_options without stream, and a prompt that with
// max_tokens does not fit max_model_len (stating both limits, code "context_length_exceeded").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "engine/engine.h"
#include "model/model_config.h"
#include "nlohmann/json.hpp"
#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "serving/openai_fields.h"
#include "tool_calls/tool_call_format.h"
#include "tool_calls/tool_request.h"

namespace weft {

class GrammarCompiler;

struct ServedModel {
  std::string name;
  int64_t max_model_len = 0;
  int64_t vocab_size = 0;  // the model's (embedding rows), >= the tokenizer's
  std::shared_ptr<const Tokenizer> tokenizer;
  std::shared_ptr<const ChatTemplate> chat_template;  // null when the model has none
  // What a request's absent sampling fields take: generation_config.json's values over weft's
  // defaults (engine/generation_defaults.h). Chat without max_tokens still runs to the context end.
  SamplingParams sampling_defaults;
  // Where sampling_defaults came from, for "weft_debug" reports: generation_config.json (when
  // generation_config_used: --generation-config auto) and the ids the engine stops on.
  GenerationConfig generation;
  bool generation_config_used = false;
  std::vector<int32_t> eos_token_ids;
  // Compiles the grammars of constrained requests (response_format, structured_outputs,
  // guided_*); null: such requests are refused (a build without src/constrain).
  std::shared_ptr<GrammarCompiler> grammars;
  // How the model writes tool calls (--tool-call-parser, or judged from the chat template);
  // nullopt: requests that would parse tool calls are refused.
  std::optional<ToolCallFormat> tool_call_format;
  // --banned-phrases: every request's output is screened against it (null: no list).
  std::shared_ptr<const BannedPhraseSet> banned_phrases;
  // For "weft_debug" attention selections: the model's layers and query heads, and whether the
  // engine's executor records attention weights (the CPU one does; --device cuda does not).
  int num_layers = 0;
  int num_attention_heads = 0;
  bool records_attention = false;
};

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // empty: null
  std::string code;   // empty: null
};

// {"error": {"message", "type", "param", "code"}}.
std::string api_error_json(const ApiError& error);
// An absl::Status from the engine or a parser -> ApiError. InvalidArgument -> 400 (param: the
// field the message starts with, if any), NotFound -> 404, ResourceExhausted -> 429,
// Unavailable -> 503, Unauthenticated -> 401, others -> 500.
ApiError api_error_from_status(const absl::Status& status);

std::variant<nlohmann::json, ApiError> parse_json_body(std::string_view body);

enum class ApiKind { kCompletion, kChat };

// One prompt of a request and what its choices start with.
struct GenerationPrompt {
  Request engine_request;
  std::string echo;  // prepended to each of its choices' text ("" when echo is off)
};

struct GenerationRequest {
  ApiKind kind = ApiKind::kCompletion;
  // Completions: one per prompt, in order (choices prompt_index * n + i); chat: exactly one.
  // Every engine_request has the same sampling parameters (n included).
  std::vector<GenerationPrompt> prompts;
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;  // format logprobs in the response
  int top_logprobs = 0;    // with logprobs: the alternatives per token (the request's N)
  // Completions echo + logprobs: the choices' logprobs start with the prompt's.
  bool echo_logprobs = false;
  // vLLM's prompt_logprobs N: the response carries vLLM's prompt_logprobs list.
  std::optional<int> prompt_logprobs;
  // false: max_tokens 0 with echo and no prompt logprobs; every choice is its echo, finished
  // with "length", and no engine request is submitted.
  bool generate = true;
  std::string role = "assistant";  // chat: the reply's role (chat_reply_role)
  // Chat with tools and tool_choice other than "none": the replies are parsed for tool calls in
  // this format (tool_call_parser.h).
  std::optional<ToolCallFormat> tool_calls;
  bool parallel_tool_calls = true;  // false: at most one call per choice

  int n() const { return prompts.empty() ? 1 : prompts.front().engine_request.params.n; }
  int num_choices() const { return static_cast<int>(prompts.size()) * n(); }
};

// The prompt text of a chat body: its messages (chat_messages_for_template), documents,
// chat_template_kwargs and `tools` (the template's `tools` variable when the body has tools) rendered
// with the model's chat template, ending as `options` says; `messages_out` gets the messages
// as rendered. Errors name messages / documents / chat_template_kwargs / continue_final_message.
std::variant<std::string, ApiError> render_chat_request(const nlohmann::json& body, const ServedModel& model,
                                                        const ChatOptions& options, const ToolRequest& tools,
                                                        nlohmann::ordered_json* messages_out = nullptr);

// `tools_in_order`: tools_in_order(raw body), which keeps the client's key order of the tools
// for the template and the grammar (tool_request.h); null: sorted keys.
std::variant<GenerationRequest, ApiError> parse_generation_request(const nlohmann::json& body, ApiKind kind,
                                                                   const ServedModel& model,
                                                                   const nlohmann::ordered_json* tools_in_order = nullptr);

// The "tools" member of a raw JSON body with its keys in the client's order (nlohmann::json, which
// parse_json_body returns, sorts them); nullopt when the body has none.
std::optional<nlohmann::ordered_json> tools_in_order(std::string_view body);

// POST /tokenize bodies: {"prompt": text, "add_special_tokens": bool (default true)} or
// {"messages": [...]} (rendered with the chat template, as a chat request would be).
std::variant<std::vector<int32_t>, ApiError> tokenize_request(const nlohmann::json& body, const ServedModel& model,
                                                              const nlohmann::ordered_json* tools_in_order = nullptr);
// POST /detokenize bodies: {"tokens": [ids]} -> the decoded text (special tokens skipped unless
// "skip_special_tokens": false).
std::variant<std::string, ApiError> detokenize_request(const nlohmann::json& body, const ServedModel& model);

// The model check shared by every endpoint that takes "model": OK when absent/null or equal to
// the served name.
std::optional<ApiError> check_model(const nlohmann::json& body, const ServedModel& model);

}  // namespace weft
