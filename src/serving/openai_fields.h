// Request-body rules shared by every OpenAI-compatible front end (weft serve and weft batch), so
// the same body is accepted, refused or rendered identically by both.
#pragma once

#include <optional>
#include <string>

#include "nlohmann/json.hpp"

namespace weft {

// A refused body field: `param` is the top-level field (OpenAI's error.param), `message` starts
// with the field's path ("messages[2].content[0]: ...").
struct FieldError {
  std::string param;
  std::string message;
};

// Chat `messages` -> the list a chat template renders: each message an object with a string
// role; content a string, null/absent, or an array of {"type": "text", "text": ...} parts, which
// are joined into one string (as vLLM does for text-only parts). Other members (name,
// tool_calls, ...) pass through unchanged, in their order.
std::optional<FieldError> chat_messages_for_template(const nlohmann::json& messages,
                                                     nlohmann::ordered_json& out);

// Fields weft does not implement and that would change the result: response_format other than
// text, non-empty tools, echo and suffix (completions), best_of other than n.
std::optional<FieldError> unsupported_field(const nlohmann::json& body, bool chat);

}  // namespace weft
