// Fuzzes one line of a `weft batch` input file through what the batch runner does with it before
// the engine: parse_batch_line (the bounded JSON reader with request limits, the OpenAI Batch
// line shape), then for chat lines the message normalisation and the unsupported-field checks
// shared with weft serve. Properties: no crash, no stack overflow on deep nesting (issue 18: a
// 150,000-deep line crashed every rerun), every rejection a status naming what was wrong.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "batch/batch_record.h"
#include "serving/openai_fields.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);
  std::optional<std::string> custom_id;
  absl::StatusOr<weft::BatchLine> parsed = weft::parse_batch_line(line, &custom_id);
  if (!parsed.ok()) {
    if (parsed.status().message().empty()) __builtin_trap();  // an error must say what is wrong
    return 0;
  }
  const bool chat = parsed->endpoint == weft::BatchEndpoint::kChatCompletions;
  (void)weft::unsupported_field(parsed->body, chat);
  if (chat) {
    nlohmann::ordered_json messages;
    if (auto it = parsed->body.find("messages"); it != parsed->body.end()) {
      (void)weft::chat_messages_for_template(*it, messages);
      (void)messages.dump();  // what the template renders from: must be safe to copy and print
    }
  }
  (void)parsed->body.dump();
  return 0;
}
