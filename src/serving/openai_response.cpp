#include "serving/openai_response.h"

#include <algorithm>
#include <chrono>

#include "sampling/stop_checker.h"
#include "serving/openai_logprobs.h"
#include "serving/response_id.h"

namespace weft {
namespace {

using nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string frame(const json& j) { return "data: " + dump(j) + "\n\n"; }

}  // namespace

ResponseBuilder::ResponseBuilder(ApiKind kind, std::string model_name, std::vector<std::string> echo, bool logprobs,
                                 std::shared_ptr<const Tokenizer> tokenizer, int64_t prompt_tokens, std::string role)
    : kind_(kind),
      model_(std::move(model_name)),
      logprobs_(logprobs),
      role_(std::move(role)),
      tokenizer_(std::move(tokenizer)),
      prompt_tokens_(prompt_tokens),
      id_(random_response_id(kind == ApiKind::kChat ? "chatcmpl-" : "cmpl-")),
      created_(std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch()).count()),
      choices_(std::max<size_t>(echo.size(), 1)) {
  for (size_t i = 0; i < echo.size(); ++i) choices_[i].echo = std::move(echo[i]);
}

void ResponseBuilder::set_prompt_logprobs(bool echo_logprobs, int top, std::optional<int> prompt_logprobs) {
  echo_logprobs_ = echo_logprobs;
  top_logprobs_ = top;
  prompt_logprobs_ = prompt_logprobs;
}

json ResponseBuilder::prompt_logprobs_for(const StreamEvent& e, Choice& c) const {
  if (!e.output.prompt_logprobs) return json();
  auto text = [this](int32_t id) { return token_text(id); };
  if (prompt_logprobs_) c.prompt_logprobs = vllm_prompt_logprobs(*e.output.prompt_logprobs, *prompt_logprobs_, text);
  if (!echo_logprobs_ || kind_ != ApiKind::kCompletion) return json();
  return openai_prompt_logprobs(*e.output.prompt_logprobs, top_logprobs_, text, &c.text_offset);
}

void ResponseBuilder::set_tool_calls(ToolCallFormat format, bool parallel) {
  if (kind_ != ApiKind::kChat) return;
  for (Choice& c : choices_) c.tools = std::make_unique<ChoiceToolCalls>(format, parallel);
}

std::vector<StreamEvent> ResponseBuilder::finish_all_events() const {
  std::vector<StreamEvent> events(choices_.size());
  for (size_t i = 0; i < events.size(); ++i) {
    events[i].output.index = static_cast<int>(i);
    events[i].output.finished = true;
    events[i].output.finish_reason = FinishReason::kLength;
    events[i].time = std::chrono::steady_clock::now();
  }
  return events;
}

std::string ResponseBuilder::token_text(int32_t id) const {
  const int32_t one[1] = {id};
  return tokenizer_->decode(one, /*skip_special_tokens=*/false);
}

json ResponseBuilder::logprobs_for(const StreamEvent& e, Choice& c) const {
  return openai_logprobs(kind_ == ApiKind::kChat, e.output.token_ids, e.output.samples,
                         [this](int32_t id) { return token_text(id); }, c.text_offset);
}

json ResponseBuilder::usage() const {
  return {{"prompt_tokens", prompt_tokens_},
          {"completion_tokens", completion_tokens_},
          {"total_tokens", prompt_tokens_ + completion_tokens_}};
}

std::string ResponseBuilder::stream_events(const std::vector<StreamEvent>& events, bool include_usage) {
  std::string out;
  const char* object = kind_ == ApiKind::kChat ? "chat.completion.chunk" : "text_completion";
  for (const StreamEvent& e : events) {
    const size_t index = static_cast<size_t>(e.output.index);
    if (index >= choices_.size()) continue;
    Choice& c = choices_[index];
    completion_tokens_ += static_cast<int64_t>(e.output.token_ids.size());
    json base = {{"id", id_}, {"object", object}, {"created", created_}, {"model", model_}};
    if (include_usage) base["usage"] = nullptr;
    if (kind_ == ApiKind::kChat && !c.role_sent) {
      c.role_sent = true;
      json first = base;
      first["choices"] = json::array({{{"index", index},
                                        {"delta", {{"role", role_}, {"content", ""}}},
                                        {"logprobs", nullptr},
                                        {"finish_reason", nullptr}}});
      out += frame(first);
      if (!c.echo.empty()) {
        json echoed = base;
        echoed["choices"] = json::array({{{"index", index},
                                          {"delta", {{"content", c.echo}}},
                                          {"logprobs", nullptr},
                                          {"finish_reason", nullptr}}});
        out += frame(echoed);
        c.echo.clear();
      }
    }
    // Completions: the echo goes before the choice's first text (and the prompt's logprobs
    // before the first tokens' logprobs).
    std::string text = std::move(c.echo) + e.output.text;
    c.echo.clear();
    json tool_calls;
    if (c.tools) {
      ChoiceToolCalls::StreamPiece piece = c.tools->stream(text, e.output.finished);
      text = std::move(piece.content);
      tool_calls = std::move(piece.tool_calls);
    }
    json logprobs = prompt_logprobs_for(e, c);
    const bool after_prompt = !logprobs.is_null();
    if (logprobs_ && !e.output.token_ids.empty()) append_openai_logprobs(logprobs, logprobs_for(e, c));
    const bool has_logprobs = !logprobs.is_null();
    if (text.empty() && tool_calls.is_null() && !has_logprobs && !e.output.finished) continue;
    json choice = {{"index", index}};
    if (kind_ == ApiKind::kChat) {
      choice["delta"] = text.empty() ? json::object() : json{{"content", text}};
      if (!tool_calls.is_null()) choice["delta"]["tool_calls"] = std::move(tool_calls);
    } else {
      choice["text"] = text;
    }
    choice["logprobs"] = logprobs;
    // After the prompt's logprobs, offsets continue from their tokens' text (vLLM's count).
    c.text_offset += utf8_code_points(after_prompt ? e.output.text : text);
    if (e.output.finished) {
      c.finish_reason = tool_call_finish_reason(c.tools.get(), std::string(finish_reason_name(e.output.finish_reason)));
      if (any_finish_reason_.empty()) any_finish_reason_ = c.finish_reason;
      choice["finish_reason"] = c.finish_reason;
      if (e.output.stop_string || e.output.stop_token) {
        choice["stop_reason"] = e.output.stop_string ? json(*e.output.stop_string) : json(*e.output.stop_token);
      }
    } else {
      choice["finish_reason"] = nullptr;
    }
    base["choices"] = json::array({choice});
    out += frame(base);
  }
  return out;
}

std::string ResponseBuilder::stream_member_chunk(const std::string& name, json value) const {
  json chunk = {{"id", id_},
                {"object", kind_ == ApiKind::kChat ? "chat.completion.chunk" : "text_completion"},
                {"created", created_},
                {"model", model_},
                {"choices", json::array()}};
  chunk[name] = std::move(value);
  return frame(chunk);
}

std::string ResponseBuilder::stream_end(bool include_usage) {
  std::string out;
  if (include_usage) out += stream_member_chunk("usage", usage());
  out += "data: [DONE]\n\n";
  return out;
}

std::string ResponseBuilder::stream_error(const ApiError& error) {
  return "data: " + api_error_json(error) + "\n\ndata: [DONE]\n\n";
}

void ResponseBuilder::add_events(const std::vector<StreamEvent>& events) {
  for (const StreamEvent& e : events) {
    const size_t index = static_cast<size_t>(e.output.index);
    if (index >= choices_.size()) continue;
    Choice& c = choices_[index];
    completion_tokens_ += static_cast<int64_t>(e.output.token_ids.size());
    if (json prompt = prompt_logprobs_for(e, c); !prompt.is_null()) append_openai_logprobs(c.logprobs, prompt);
    if (logprobs_ && !e.output.token_ids.empty()) append_openai_logprobs(c.logprobs, logprobs_for(e, c));
    c.text += e.output.text;
    c.text_offset += utf8_code_points(e.output.text);
    if (e.output.finished) {
      c.finish_reason = std::string(finish_reason_name(e.output.finish_reason));
      if (any_finish_reason_.empty()) any_finish_reason_ = c.finish_reason;
    }
  }
}

std::string ResponseBuilder::full_response() const {
  json choices = json::array();
  for (size_t i = 0; i < choices_.size(); ++i) {
    const Choice& c = choices_[i];
    json lp = logprobs_ ? (c.logprobs.is_null() ? empty_openai_logprobs(kind_ == ApiKind::kChat) : c.logprobs) : json();
    if (kind_ == ApiKind::kChat) {
      json message = {{"role", role_}, {"content", c.echo + c.text}};
      std::string finish_reason = c.finish_reason;
      if (c.tools) {
        c.tools->complete_message(c.text, c.echo, message);
        if (!finish_reason.empty()) finish_reason = tool_call_finish_reason(c.tools.get(), finish_reason);
      }
      choices.push_back({{"index", i},
                         {"message", std::move(message)},
                         {"logprobs", lp},
                         {"finish_reason", finish_reason.empty() ? json() : json(finish_reason)}});
    } else {
      choices.push_back({{"index", i},
                         {"text", c.echo + c.text},
                         {"logprobs", lp},
                         {"finish_reason", c.finish_reason.empty() ? json() : json(c.finish_reason)}});
      if (prompt_logprobs_) choices.back()["prompt_logprobs"] = c.prompt_logprobs;
    }
  }
  json body = {{"id", id_},
               {"object", kind_ == ApiKind::kChat ? "chat.completion" : "text_completion"},
               {"created", created_},
               {"model", model_},
               {"choices", choices},
               {"usage", usage()}};
  // Chat has one prompt: vLLM puts its list beside the choices.
  if (kind_ == ApiKind::kChat && prompt_logprobs_) body["prompt_logprobs"] = choices_.front().prompt_logprobs;
  return dump(body);
}

}  // namespace weft
