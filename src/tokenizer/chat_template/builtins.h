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

}  // namespace weft::jinja
