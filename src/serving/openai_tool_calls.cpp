#include "serving/openai_tool_calls.h"

#include "serving/response_id.h"

namespace weft {
using nlohmann::json;

namespace {

// The id a call is sent with: the model's own (Mistral's [CALL_ID]) or a new one.
std::string call_id(const std::string& model_id) {
  return model_id.empty() ? random_response_id("call_") : model_id;
}

}  // namespace

ChoiceToolCalls::ChoiceToolCalls(ToolCallFormat format, bool parallel)
    : format_(format), parallel_(parallel), stream_parser_(format, /*whole=*/false) {}

ChoiceToolCalls::StreamPiece ChoiceToolCalls::stream(std::string_view text, bool finished) {
  std::vector<ToolCallDelta> deltas;
  stream_parser_.push(text, deltas);
  if (finished) stream_parser_.finish(deltas);
  StreamPiece out;
  json entries = json::array();
  int last_call = -1;  // the call entries.back() belongs to
  for (const ToolCallDelta& d : deltas) {
    if (d.kind == ToolCallDelta::Kind::kContent) {
      out.content += d.text;
      continue;
    }
    if (!kept(d.call) || d.kind == ToolCallDelta::Kind::kCallWithdrawn) continue;
    if (d.kind == ToolCallDelta::Kind::kCallStart) {
      ids_.resize(static_cast<size_t>(d.call) + 1);
      ids_[static_cast<size_t>(d.call)] = call_id(d.id);
      called_ = true;
      entries.push_back({{"index", d.call},
                         {"id", ids_[static_cast<size_t>(d.call)]},
                         {"type", "function"},
                         {"function", {{"name", d.text}, {"arguments", ""}}}});
      last_call = d.call;
    } else if (last_call == d.call) {
      entries.back()["function"]["arguments"] = entries.back()["function"]["arguments"].get<std::string>() + d.text;
    } else {
      entries.push_back({{"index", d.call}, {"function", {{"arguments", d.text}}}});
      last_call = d.call;
    }
  }
  if (!entries.empty()) out.tool_calls = std::move(entries);
  return out;
}

void ChoiceToolCalls::complete_message(std::string_view text, const std::string& prefix, json& message) {
  ParsedToolCalls parsed = parse_tool_calls(format_, text);
  json calls = json::array();
  for (size_t i = 0; i < parsed.calls.size(); ++i) {
    if (!kept(static_cast<int>(i))) break;
    calls.push_back({{"id", call_id(parsed.calls[i].id)},
                     {"type", "function"},
                     {"function", {{"name", parsed.calls[i].name}, {"arguments", parsed.calls[i].arguments}}}});
  }
  called_ = !calls.empty();
  const std::string content = prefix + parsed.content;
  message["content"] = content.empty() && called_ ? json() : json(content);
  if (called_) message["tool_calls"] = std::move(calls);
}

std::string tool_call_finish_reason(const ChoiceToolCalls* calls, const std::string& reason) {
  if (calls != nullptr && calls->called() && reason == "stop") return "tool_calls";
  return reason;
}

}  // namespace weft
