#include "batch/batch_record.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "core/bounded_json.h"
#include "serving/openai_logprobs.h"
#include "serving/openai_tool_calls.h"

namespace weft {
namespace {

// FNV-1a, then splitmix64's finaliser so similar custom_ids get unrelated-looking ids. Stable
// across runs and builds (ids must survive a restart).
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string batch_request_id(const std::string& custom_id) {
  return "batch_req_" + hex16(fnv1a(custom_id));
}

absl::StatusOr<BatchLine> parse_batch_line(const std::string& line,
                                           std::optional<std::string>* custom_id) {
  absl::StatusOr<nlohmann::json> parsed =
      parse_json_bounded<nlohmann::json>(line, "the line", request_json_limits());
  if (!parsed.ok()) return parsed.status();
  const nlohmann::json& j = *parsed;
  if (!j.is_object()) return absl::InvalidArgumentError("the line is not a JSON object");
  auto id = j.find("custom_id");
  if (id == j.end() || !id->is_string()) {
    return absl::InvalidArgumentError("custom_id: expected a string");
  }
  BatchLine out;
  out.custom_id = id->get<std::string>();
  if (custom_id != nullptr) *custom_id = out.custom_id;
  if (out.custom_id.empty()) return absl::InvalidArgumentError("custom_id: must not be empty");
  auto method = j.find("method");
  if (method != j.end() && !(method->is_string() && method->get<std::string>() == "POST")) {
    return absl::InvalidArgumentError("method: expected \"POST\"");
  }
  auto url = j.find("url");
  if (url == j.end() || !url->is_string()) {
    return absl::InvalidArgumentError("url: expected \"/v1/chat/completions\" or \"/v1/completions\"");
  }
  const std::string u = url->get<std::string>();
  if (u == "/v1/chat/completions") {
    out.endpoint = BatchEndpoint::kChatCompletions;
  } else if (u == "/v1/completions") {
    out.endpoint = BatchEndpoint::kCompletions;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "url: \"", u, "\" is not supported (expected /v1/chat/completions or /v1/completions)"));
  }
  auto body = j.find("body");
  if (body == j.end() || !body->is_object()) return absl::InvalidArgumentError("body: expected an object");
  out.body = std::move(*body);
  if (out.body.contains("tools")) {
    // Parsed again keeping key order (nlohmann::json sorts them); the same bounds held above.
    auto ordered = parse_json_bounded<nlohmann::ordered_json>(line, "the line", request_json_limits());
    if (ordered.ok()) out.tools_in_order = (*ordered)["body"]["tools"];
  }
  if (out.endpoint == BatchEndpoint::kChatCompletions) {
    auto messages = out.body.find("messages");
    if (messages == out.body.end() || !messages->is_array() || messages->empty()) {
      return absl::InvalidArgumentError("body.messages: expected a non-empty array");
    }
  } else {
    auto prompt = out.body.find("prompt");
    if (prompt == out.body.end() || !(prompt->is_string() || prompt->is_array())) {
      return absl::InvalidArgumentError("body.prompt: expected a string or an array of token ids");
    }
  }
  return out;
}

nlohmann::ordered_json output_record(const BatchResult& result, int64_t created) {
  const std::string request_id = batch_request_id(result.custom_id);
  const bool chat = result.endpoint == BatchEndpoint::kChatCompletions;
  nlohmann::ordered_json choices = nlohmann::ordered_json::array();
  int64_t completion_tokens = 0;
  for (size_t i = 0; i < result.choices.size(); ++i) {
    const BatchChoice& c = result.choices[i];
    completion_tokens += static_cast<int64_t>(c.token_ids.size());
    nlohmann::ordered_json choice = {{"index", i}};
    std::string finish_reason = c.finish_reason;
    if (chat && result.tool_calls) {
      ChoiceToolCalls calls(*result.tool_calls, result.parallel_tool_calls);
      nlohmann::json message;
      calls.complete_message(c.text, "", message);
      choice["message"] = {{"role", "assistant"}, {"content", message["content"]}};
      if (message.contains("tool_calls")) choice["message"]["tool_calls"] = message["tool_calls"];
      finish_reason = tool_call_finish_reason(&calls, finish_reason);
    } else if (chat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
    } else {
      choice["text"] = c.text;
    }
    if (result.include_token_ids) choice["token_ids"] = c.token_ids;
    choice["logprobs"] = !result.logprobs    ? nlohmann::ordered_json()
                         : c.logprobs.is_null() ? nlohmann::ordered_json(empty_openai_logprobs(chat))
                                                : nlohmann::ordered_json(c.logprobs);
    choice["finish_reason"] = finish_reason;
    if (result.prompt_logprobs && !chat) choice["prompt_logprobs"] = nlohmann::ordered_json(result.prompt_logprobs_list);
    choices.push_back(std::move(choice));
  }
  const std::string suffix = request_id.substr(std::string("batch_req_").size());
  nlohmann::ordered_json body = {
      {"id", (chat ? "chatcmpl-" : "cmpl-") + suffix},
      {"object", chat ? "chat.completion" : "text_completion"},
      {"created", created},
      {"model", result.model},
      {"choices", std::move(choices)},
      {"usage",
       {{"prompt_tokens", result.prompt_tokens},
        {"completion_tokens", completion_tokens},
        {"total_tokens", result.prompt_tokens + completion_tokens}}},
  };
  if (result.prompt_logprobs && chat) body["prompt_logprobs"] = nlohmann::ordered_json(result.prompt_logprobs_list);
  return {{"id", request_id},
          {"custom_id", result.custom_id},
          {"response", {{"status_code", 200}, {"request_id", request_id}, {"body", std::move(body)}}},
          {"error", nullptr}};
}

nlohmann::ordered_json error_record(const std::optional<std::string>& custom_id, int64_t line,
                            const std::string& code, const std::string& message) {
  nlohmann::ordered_json record;
  record["id"] = batch_request_id(custom_id.value_or(absl::StrCat("line ", line)));
  record["custom_id"] = custom_id ? nlohmann::ordered_json(*custom_id) : nlohmann::ordered_json(nullptr);
  record["response"] = {
      {"status_code", 400},
      {"body", {{"error", {{"message", message}, {"type", "invalid_request_error"}, {"code", code}}}}}};
  record["error"] = {{"code", code}, {"message", message}};
  record["line"] = line;
  return record;
}

std::string record_line(const nlohmann::ordered_json& record) {
  return record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace weft
