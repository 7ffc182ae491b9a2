// Request-body rules shared by every OpenAI-compatible front end (weft serve and weft batch), so
// the same body is accepted, refused or rendered identically by both.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "safety/banned_phrase_set.h"
#include "tokenizer/chat_template/chat_prompt_end.h"

namespace weft {

// A refused body field: `param` is the top-level field (OpenAI's error.param), `message` starts
// with the field's path ("messages[2].content[0]: ...").
struct FieldError {
  std::string param;
  std::string message;
};

// Chat `messages` -> the list a chat template renders: each message an object with a string
// role; content a string, null/absent, or an array of {"type": "text", "text": ...} parts, which
// are joined into one string with "\n" between parts (as vLLM does for text-only parts). An
// assistant message's tool_calls (each {"id", "type", "function": {"name", "arguments"}}) reach
// the template with each arguments JSON string parsed into the value it holds (null or "" as
// {}), as vLLM hands them to transformers' templates; arguments that are not valid JSON are
// refused naming messages[i].tool_calls[j].function.arguments. Other members (name,
// tool_call_id, ...) pass through unchanged, in their order.
std::optional<FieldError> chat_messages_for_template(const nlohmann::json& messages,
                                                     nlohmann::ordered_json& out);

// The chat fields that shape the prompt's end and the reply, with vLLM's meaning:
//   add_generation_prompt  boolean, default true (false when continue_final_message is true and
//                          add_generation_prompt is absent: vLLM would refuse that body, since
//                          its default true then clashes);
//   continue_final_message boolean, default false: the prompt ends inside the final message
//                          (assistant prefill), rendered as transformers' apply_chat_template does;
//                          with add_generation_prompt true: refused, as vLLM does;
//   echo                   boolean: each choice starts with the final message's content when that
//                          message's role is the reply's role (chat_reply_role).
struct ChatOptions {
  ChatPromptEnd prompt_end = ChatPromptEnd::kGenerationPrompt;
  bool echo = false;
};
std::optional<FieldError> chat_options(const nlohmann::json& body, ChatOptions& out);

// The template variables a chat body adds to the rendering: chat_template_kwargs' members (an
// object) and `documents` (an array of objects, the template's `documents`, as vLLM passes it to
// apply_chat_template; chat_template_kwargs wins on a clash). `extra` becomes an object.
std::optional<FieldError> chat_template_extra(const nlohmann::json& body, nlohmann::ordered_json& extra);

// vLLM's role of the reply: "assistant" after a generation prompt, else the final message's role
// (so a continued assistant message is answered as "assistant"). `messages` as
// chat_messages_for_template made them (non-empty).
std::string chat_reply_role(const nlohmann::ordered_json& messages, const ChatOptions& options);
// What chat echo prepends: the final message's content (text parts already joined) when its role
// is `role`, else "".
std::string chat_echo_text(const nlohmann::ordered_json& messages, const std::string& role);

// Fields weft does not implement and that would change the result, each refused by name unless
// it holds its no-op value: the legacy functions (non-empty) / function_call other than "none" /
// "auto", suffix and tools / tool_choice (completions: tool_fields_unsupported), best_of other than n,
// allowed_token_ids, logits_processors,
// use_beam_search, include_stop_str_in_output, truncate_prompt_tokens,
// return_tokens_as_token_ids, chat_template (a per-request template), modalities other than
// ["text"], audio, web_search_options, reasoning_effort, spaces_between_special_tokens false,
// and stream_options.continuous_usage_stats. (prompt_logprobs and echo with logprobs are read by
// each front end: prompt_logprobs_field.)
std::optional<FieldError> unsupported_field(const nlohmann::json& body, bool chat);

// tools (non-empty) or tool_choice other than "none" / "auto", refused as "<field>: <why>"
// where tool calling is not available (completions); null when absent or harmless.
std::optional<FieldError> tool_fields_unsupported(const nlohmann::json& body, const std::string& why);

// The first field of `body` asking for constrained output (response_format other than text,
// structured_outputs, guided_json / regex / choice / grammar / whitespace_pattern), or null.
const char* constraint_field(const nlohmann::json& body);

// vLLM's bad_words: absent / null / [] (none), or an array of at most kMaxBadWords strings, each
// non-empty and at most kMaxBadWordBytes bytes, compiled into a banned-phrase list (out: null
// when none). weft's meaning is stronger than vLLM's token-sequence ban: the text never contains
// a word, case-insensitively under NFKC, however it is tokenized (safety/banned_phrase_filter.h).
constexpr size_t kMaxBadWords = 1024;
constexpr size_t kMaxBadWordBytes = 256;
std::optional<FieldError> bad_words_field(const nlohmann::json& body, std::shared_ptr<const BannedPhraseSet>& out);

// The phrase lists a request screens against: the server's (null: none) and its own bad_words.
std::vector<std::shared_ptr<const BannedPhraseSet>> banned_phrase_lists(std::shared_ptr<const BannedPhraseSet> server,
                                                                        std::shared_ptr<const BannedPhraseSet> request);

// vLLM's prompt_logprobs: absent / null, or an integer N in [0, 20] (the alternatives per prompt
// position; vLLM's -1, the whole vocabulary, is refused).
std::optional<FieldError> prompt_logprobs_field(const nlohmann::json& body, std::optional<int>& out);

}  // namespace weft
