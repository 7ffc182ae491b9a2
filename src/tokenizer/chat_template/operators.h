// Python semantics of the operators, attribute/subscript access and iteration that templates use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tokenizer/chat_template/value.h"

namespace weft::jinja {

// The error raised when an Undefined is used in a way jinja2's default Undefined forbids
// (arithmetic, attribute or item access, calling).
absl::Status undefined_error(const Value& u);

// + - * / // % ** ~ on two values; `max_bytes` bounds strings and lists built by + * ~.
absl::StatusOr<Value> binary_op(const std::string& op, const Value& a, const Value& b, size_t max_bytes);
// == != < <= > >= in notin.
absl::StatusOr<bool> compare_op(const std::string& op, const Value& a, const Value& b);
absl::StatusOr<bool> contains(const Value& container, const Value& item);

// Items of a for loop / list(): list items, dict keys, string characters; Undefined is empty.
absl::StatusOr<std::vector<Value>> iterate(const Value& v);
// len(): code points of a string, items of a list or dict.
absl::StatusOr<int64_t> length(const Value& v);

// jinja2 getattr/getitem: obj.name tries the attribute (method) first, then the key; obj[key]
// the other way round. A missing one is Undefined; anything on Undefined is an error.
absl::StatusOr<Value> get_attr(const Value& obj, const std::string& name);
absl::StatusOr<Value> get_item(const Value& obj, const Value& key);
// obj[start:stop:step] on a list, tuple or string.
absl::StatusOr<Value> slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step);

// Python's `fmt % args` (printf-style) and str.format(*args, **kwargs), for the common cases.
// Both fail with ResourceExhausted once the output passes `max_bytes`.
absl::StatusOr<std::string> percent_format(const std::string& fmt, const Value& args, size_t max_bytes);
absl::StatusOr<std::string> brace_format(const std::string& fmt, const CallArgs& args, size_t max_bytes);

// Bound methods of str, dict and list values (`"x".strip`, `d.items`); nullopt if none.
std::optional<Value> find_method(const Value& obj, const std::string& name);

}  // namespace weft::jinja
