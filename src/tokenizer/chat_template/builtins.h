// Builtin filters, tests and global functions (jinja2's defaults plus Hugging Face's additions).
#pragma once

#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenizer/chat_template/value.h"

namespace weft::jinja {

class Interpreter;

using FilterFn = absl::StatusOr<Value> (*)(Interpreter&, const Value& input, CallArgs& args);
using TestFn = absl::StatusOr<bool> (*)(Interpreter&, const Value& input, CallArgs& args);

// nullptr when there is no such filter / test.
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);

// range, dict, namespace, raise_exception, strftime_now.
std::vector<std::pair<std::string, Value>> make_globals();

// Binds call arguments to parameter names: positionals in order, then keywords by name. Too many
// positionals, unknown or duplicate keywords are InvalidArgument errors naming `fn`.
absl::StatusOr<std::vector<std::optional<Value>>> bind_args(std::string_view fn, const CallArgs& args,
                                                            std::initializer_list<std::string_view> names);

// An optional integer parameter `param` of `fn`: an int or a bool (as Python accepts); absent or
// None gives `absent`. Any other type is an InvalidArgument error naming both.
absl::StatusOr<int64_t> int_arg(std::string_view fn, std::string_view param, const std::optional<Value>& v,
                                int64_t absent);

}  // namespace weft::jinja
