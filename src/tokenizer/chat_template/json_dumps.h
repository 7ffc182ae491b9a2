// Python json.dumps, as Hugging Face's chat-template `tojson` filter calls it
// (json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "tokenizer/chat_template/value.h"

namespace weft::jinja {

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // nullopt: single line; otherwise the per-level indent
  std::optional<std::string> item_separator;  // default ", " (or "," when indenting)
  std::string key_separator = ": ";
  bool sort_keys = false;
  // Longest output produced: past it, json_dumps fails with ResourceExhausted (a list shared many
  // times over serializes exponentially larger than its memory).
  size_t max_bytes = SIZE_MAX;
};

// Serializes `v` byte-for-byte as CPython's json module would. Undefined, namespaces and callables
// are not serializable ("Object of type Undefined is not JSON serializable").
absl::StatusOr<std::string> json_dumps(const Value& v, const JsonDumpOptions& options);

}  // namespace weft::jinja
