// The tool calls of one chat choice in the OpenAI shapes, from the model's text
// (tool_call_parser.h):
//   non-streamed  message.tool_calls = [{"id": "call_...", "type": "function", "function":
//                 {"name", "arguments": JSON text}}], message.content = the text outside the
//                 calls, null when there is none and a call was found;
//   streamed      delta.content for text outside the calls (held back while it may start a
//                 marker), then delta.tool_calls entries: a call's first entry carries index,
//                 id, type and function.name (and function.arguments so far, maybe ""), later
//                 ones index and function.arguments pieces.
// With parallel_tool_calls false only the first call is kept (later ones are dropped, text and
// all). Call ids are the model's own where it writes them (Mistral's [CALL_ID]), else
// random_response_id("call_").
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "tool_calls/tool_call_parser.h"

namespace weft {

class ChoiceToolCalls {
 public:
  ChoiceToolCalls(ToolCallFormat format, bool parallel);

  struct StreamPiece {
    std::string content;
    nlohmann::json tool_calls;  // an array of delta entries, or null
  };
  // Streamed: one event's text (and whether the choice ends with it) -> its chunk's delta.
  StreamPiece stream(std::string_view text, bool finished);

  // Non-streamed: the reply's whole text -> message "content" and "tool_calls"; `prefix` (chat
  // echo) starts the content and is not parsed.
  void complete_message(std::string_view text, const std::string& prefix, nlohmann::json& message);

  // A call was found (streamed: one went out).
  bool called() const { return called_; }

 private:
  bool kept(int call) const { return parallel_ || call == 0; }

  ToolCallFormat format_;
  bool parallel_;
  ToolCallStreamParser stream_parser_;
  std::vector<std::string> ids_;
  bool called_ = false;
};

// "tool_calls" when the choice made calls and ended by itself ("stop"); else `reason` (a reply
// cut at max_tokens stays "length", so a client sees it was truncated, calls or not).
std::string tool_call_finish_reason(const ChoiceToolCalls* calls, const std::string& reason);

}  // namespace weft
