// OpenAI-compatible response bodies built from a request's StreamEvents.
//
// One ResponseBuilder per request; it fixes the id ("cmpl-..." / "chatcmpl-...") and `created`
// that every chunk repeats. Streaming output is Server-Sent Events: one "data: <json>\n\n"
// frame per chunk (`text_completion` / `chat.completion.chunk` objects; chat opens each choice
// with a {"role": "assistant"} delta), then an optional usage chunk (choices: []) and
// "data: [DONE]\n\n". Non-streaming output is one `text_completion` / `chat.completion` object
// with usage. Logprobs follow the API they answer: completions {tokens, token_logprobs,
// top_logprobs, text_offset}; chat {content: [{token, logprob, bytes, top_logprobs}]}.
// Token strings are each token decoded alone (special tokens kept).
// Echo (per choice, from GenerationPrompt::echo): completions put it before the choice's first
// text (the first chunk's text when streaming); chat streams it as one content delta right after
// the role delta (as vLLM), and puts it before the message content otherwise.
// A request of several prompts is one builder: events come with their choice index already
// offset (prompt_index * n + index).
// Prompt logprobs (set_prompt_logprobs), from the event that carries them
// (SequenceOutput::prompt_logprobs): with echo_logprobs, a completion choice's logprobs start
// with the prompt tokens' (openai_prompt_logprobs; generated tokens' text_offset continues after
// them); with vLLM's prompt_logprobs N, a completion choice gets "prompt_logprobs" and a chat
// response a top-level "prompt_logprobs" (vllm_prompt_logprobs; not streamed).
// Tool calls (chat, set_tool_calls): each choice's text is parsed (openai_tool_calls.h): the
// message's / deltas' content is the text outside the calls, the calls go to tool_calls, and a
// choice that made calls and stopped by itself finishes with "tool_calls" (instead of "stop").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/async_engine.h"
#include "nlohmann/json.hpp"
#include "serving/openai_request.h"
#include "serving/openai_tool_calls.h"
#include "tokenizer/tokenizer.h"

namespace weft {

class ResponseBuilder {
 public:
  // One choice per entry of `echo` (its echo text, "" for none); `prompt_tokens` over all prompts;
  // `role`: the chat reply's role.
  ResponseBuilder(ApiKind kind, std::string model_name, std::vector<std::string> echo, bool logprobs,
                  std::shared_ptr<const Tokenizer> tokenizer, int64_t prompt_tokens, std::string role = "assistant");

  // What the prompt logprobs of events go to (see above); `top`: echo's alternatives per token.
  void set_prompt_logprobs(bool echo_logprobs, int top, std::optional<int> prompt_logprobs);
  // Chat: parse every choice's text for tool calls in `format`; `parallel` false keeps the first.
  void set_tool_calls(ToolCallFormat format, bool parallel);

  // Events that finish every choice at once with "length" and no tokens (max_tokens 0 with echo).
  std::vector<StreamEvent> finish_all_events() const;

  const std::string& id() const { return id_; }
  int64_t created() const { return created_; }

  // SSE frames for `events`.
  std::string stream_events(const std::vector<StreamEvent>& events, bool include_usage);
  // A chunk with no choices that carries `value` as its member `name` (the "weft_debug" report).
  std::string stream_member_chunk(const std::string& name, nlohmann::json value) const;
  // The usage chunk (when include_usage) and the [DONE] frame.
  std::string stream_end(bool include_usage);
  // An error after the stream started: {"error": ...} as a data frame, then [DONE].
  static std::string stream_error(const ApiError& error);

  // Non-streaming: collect events, then the whole response body.
  void add_events(const std::vector<StreamEvent>& events);
  std::string full_response() const;

  int64_t completion_tokens() const { return completion_tokens_; }
  // "stop" / "length" / "abort" of the first choice that finished (for metrics); "" if none.
  const std::string& finish_reason() const { return any_finish_reason_; }

 private:
  struct Choice {
    std::string echo;          // prepended (not yet sent, when streaming)
    std::string text;
    std::string finish_reason;
    nlohmann::json logprobs;   // accumulated (non-streaming)
    int64_t text_offset = 0;   // completions logprobs: code points of text so far
    bool role_sent = false;
    nlohmann::json prompt_logprobs;  // vLLM's list, once the event carrying it came
    std::unique_ptr<ChoiceToolCalls> tools;  // set_tool_calls
  };
  nlohmann::json logprobs_for(const StreamEvent& e, Choice& c) const;
  // The prompt part of a choice's logprobs from `e` (null when the event has none or echo
  // logprobs are off); sets c.text_offset to where generated tokens continue. Records vLLM's
  // prompt_logprobs list in `c` when asked for.
  nlohmann::json prompt_logprobs_for(const StreamEvent& e, Choice& c) const;
  nlohmann::json usage() const;
  std::string token_text(int32_t id) const;

  ApiKind kind_;
  std::string model_;
  bool logprobs_;
  bool echo_logprobs_ = false;
  int top_logprobs_ = 0;
  std::optional<int> prompt_logprobs_;
  std::string role_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  int64_t prompt_tokens_;
  std::string id_;
  int64_t created_;
  std::vector<Choice> choices_;
  int64_t completion_tokens_ = 0;
  std::string any_finish_reason_;
};

}  // namespace weft
