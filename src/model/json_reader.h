// Strict JSON parsing for model files (config.json, generation_config.json, safetensors headers,
// model.safetensors.index.json): malformed text and duplicate object keys are errors that name
// the file, and typed field readers whose errors name the file, the field and the expected type.
#pragma once

#include <cstdint>
#include <optional>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace weft {

// Deepest nesting of arrays/objects parse_json_strict accepts. Model files nest a few levels;
// the limit keeps hostile files from overflowing the stack in nlohmann's recursive copy, dump
// and comparison (about 100k levels crash them).
inline constexpr int kMaxJsonNestingDepth = 128;
// Largest config.json / generation_config.json / model.safetensors.index.json read (real ones
// are kilobytes; indexes of the largest models a few MB).
inline constexpr uint64_t kMaxJsonFileBytes = uint64_t{64} << 20;

// Reads a JSON file's text. Errors: missing or unreadable file (naming it), a file larger than
// kMaxJsonFileBytes.
absl::StatusOr<std::string> read_json_file(const std::filesystem::path& path);

// Parses `text` with parse_json_bounded (core/bounded_json.h): time linear in its size, limits
// enforced while parsing. Errors (InvalidArgument) name `source`: not JSON (with the byte
// position), an object that repeats a key (the key and its path) — nlohmann would silently keep
// the last one —, nesting deeper than kMaxJsonNestingDepth, an object or array with more than
// `max_container_size` entries.
absl::StatusOr<nlohmann::json> parse_json_strict(std::string_view text, const std::string& source,
                                                 int64_t max_container_size = int64_t{1} << 20);

// "string", "integer", "number", "boolean", "object", "array" or "null": for error messages.
const char* json_type_name(const nlohmann::json& value);

// Typed reads of `object[key]`. Absent keys and JSON null give nullopt; a value of another type
// is an InvalidArgument "<source>: field '<key>' must be <expected>, got <type>". Integers must
// be JSON integers (1.0 is rejected); numbers accept integers and floats.
class JsonFields {
 public:
  JsonFields(const nlohmann::json& object, std::string source, std::string prefix = "")
      : object_(&object), source_(std::move(source)), prefix_(std::move(prefix)) {}

  bool has(std::string_view key) const;  // present and not null
  absl::StatusOr<std::optional<int64_t>> optional_int(std::string_view key) const;
  absl::StatusOr<std::optional<double>> optional_number(std::string_view key) const;
  absl::StatusOr<std::optional<bool>> optional_bool(std::string_view key) const;
  absl::StatusOr<std::optional<std::string>> optional_string(std::string_view key) const;
  // Absent or null is an error "<source>: missing required field '<key>'".
  absl::StatusOr<int64_t> required_int(std::string_view key) const;
  // An int or a list of ints (eos_token_id); absent or null gives an empty vector.
  absl::StatusOr<std::vector<int64_t>> int_or_int_list(std::string_view key) const;
  // A nested object (absent or null gives nullopt); its fields report as "<key>.<field>".
  absl::StatusOr<std::optional<JsonFields>> optional_object(std::string_view key) const;

  // "<prefix><key>", the name errors use.
  std::string field_name(std::string_view key) const;
  const std::string& source() const { return source_; }
  absl::Status type_error(std::string_view key, std::string_view expected) const;

 private:
  const nlohmann::json* find(std::string_view key) const;
  const nlohmann::json* object_;
  std::string source_;
  std::string prefix_;
};

}  // namespace weft
