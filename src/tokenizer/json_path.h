// Location of a value inside a tokenizer configuration file, used to build error messages that
// name the file and the field ("tokenizer.json: field pre_tokenizer.pretokenizers[1].type: ...").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace weft {

// Largest token id a tokenizer file may use (vocabulary, added tokens, post-processor ids):
// ids index tables sized by the largest id, so a file must not be able to ask for billions of
// entries. The largest published vocabularies are about 256k tokens.
inline constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;

namespace str_cat_detail {
inline void append(std::string& out, std::string_view s) { out.append(s); }
template <typename T>
requires std::is_arithmetic_v<T>
void append(std::string& out, T v) { out.append(std::to_string(v)); }
}  // namespace str_cat_detail

// Concatenates strings and numbers. (absl::StrCat in this toolchain does not take
// std::string_view, since its absl::string_view is a distinct type.)
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::string out;
  (str_cat_detail::append(out, args), ...);
  return out;
}

class JsonPath {
 public:
  JsonPath(std::string file, std::string field)
      : file_(std::move(file)), field_(std::move(field)) {}

  JsonPath child(std::string_view key) const;
  JsonPath index(size_t i) const;

  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }

  // InvalidArgument "<file>: field <field>: <what>".
  absl::Status error(std::string_view what) const;

  // Required string member `key` of object `obj` (this path names `obj`).
  absl::StatusOr<std::string> get_string(const nlohmann::json& obj, std::string_view key) const;
  // Optional member: absent or null gives `fallback`; any other non-matching type is an error.
  absl::StatusOr<bool> get_bool(const nlohmann::json& obj, std::string_view key,
                                bool fallback) const;
  absl::StatusOr<std::optional<std::string>> get_optional_string(const nlohmann::json& obj,
                                                                 std::string_view key) const;
  // The "type" member of a component object (normalizer, pre-tokenizer, decoder, ...).
  absl::StatusOr<std::string> get_type(const nlohmann::json& obj) const;

 private:
  std::string file_;
  std::string field_;
};

}  // namespace weft
