// Fuzzes the chat-template (Jinja) lexer, parser and interpreter: the input is template source,
// which is parsed and, when it parses, rendered over a fixed conversation with tight limits.
// Properties: no crash, no unbounded recursion or time; errors are statuses.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "nlohmann/json.hpp"
#include "tokenizer/chat_template/chat_template.h"

namespace {

const nlohmann::ordered_json& messages() {
  static const nlohmann::ordered_json m = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Hi <b>there</b> \u00e9\ud83d\ude00"},
    {"role": "assistant", "content": "Hello", "reasoning_content": "think",
     "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1, "b": [1.5, null, true]}}}]},
    {"role": "tool", "content": "{\"x\": 1}"},
    {"role": "user", "content": [{"type": "text", "text": "part"}, {"type": "image"}]}
  ])");
  return m;
}

const nlohmann::ordered_json& extra() {
  static const nlohmann::ordered_json e = nlohmann::ordered_json::parse(R"({
    "tools": [{"type": "function", "function": {"name": "f", "description": "d",
               "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}],
    "enable_thinking": false, "date_string": "26 Jul 2024"
  })");
  return e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tmpl = weft::ChatTemplate::parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!tmpl.ok()) return 0;
  weft::ChatTemplateLimits limits;
  limits.max_output_bytes = 1 << 16;
  limits.max_loop_iterations = 10'000;
  limits.max_call_depth = 16;
  limits.now = [] {
    std::tm t{};
    t.tm_year = 124;
    t.tm_mday = 1;
    return t;
  };
  (void)weft::render_chat(*tmpl, messages(), true, "<s>", "</s>", extra(), limits);
  (void)weft::render_chat(*tmpl, nlohmann::ordered_json::array(), false, "", "",
                          nlohmann::ordered_json(), limits);
  return 0;
}
