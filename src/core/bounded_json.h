// One JSON reader for every untrusted JSON input (model files, tokenizer.json, batch lines, HTTP
// bodies, CLI JSON): it builds nlohmann's DOM from SAX events, without recursion, and enforces
// its limits while it parses, so a hostile document costs time linear in its size and never
// more memory or stack than the limits allow.
//
// Why not nlohmann::json::parse: with a callback it is quadratic in the number of members of an
// object whose values are containers (it rescans the parent after every child); without one it
// builds any depth, and the recursive copy, dump and comparison of a deep DOM overflow the stack;
// and it silently keeps the last value of a repeated key.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace weft {

struct JsonLimits {
  // Deepest nesting of arrays/objects (the top-level container is depth 1).
  int max_depth = 64;
  // Most members of any one object and most elements of any one array.
  int64_t max_container_size = int64_t{1} << 20;
  // Most values in the whole document (every scalar, array and object counts one).
  int64_t max_values = int64_t{1} << 24;
  // A key repeated within one object is an error naming the key's path; false keeps the last
  // value, as Python's json and serde do.
  bool reject_duplicate_keys = true;
};

// Limits for one request-sized document from a client or a user's file (an HTTP body, a batch
// line, a CLI JSON line): nesting as deep as any real request needs (OpenAI's tool schemas nest a
// few levels), far below what the recursive copy and dump of a DOM can take.
inline constexpr int kMaxRequestJsonDepth = 64;
inline JsonLimits request_json_limits() {
  JsonLimits limits;
  limits.max_depth = kMaxRequestJsonDepth;
  return limits;
}

// Parses `text` into Json (nlohmann::json or nlohmann::ordered_json). Errors are InvalidArgument
// and start with `source`: not JSON (with the byte position), nesting deeper than
// limits.max_depth, a container larger than limits.max_container_size, more than
// limits.max_values values, a repeated key. Invalid UTF-8 in strings is an error, as in
// nlohmann's parser.
template <class Json>
absl::StatusOr<Json> parse_json_bounded(std::string_view text, std::string_view source,
                                        const JsonLimits& limits);

extern template absl::StatusOr<nlohmann::json> parse_json_bounded<nlohmann::json>(
    std::string_view, std::string_view, const JsonLimits&);
extern template absl::StatusOr<nlohmann::ordered_json> parse_json_bounded<nlohmann::ordered_json>(
    std::string_view, std::string_view, const JsonLimits&);

}  // namespace weft
