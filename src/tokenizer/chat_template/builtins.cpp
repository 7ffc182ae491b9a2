// jinja2's builtin tests and the globals Hugging Face's chat template environment defines.
#include "tokenizer/chat_template/builtins.h"

#include <ctime>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "tokenizer/chat_template/interpreter.h"
#include "tokenizer/chat_template/operators.h"
#include "tokenizer/chat_template/unicode_text.h"

namespace weft::jinja {

absl::StatusOr<std::vector<std::optional<Value>>> bind_args(std::string_view fn, const CallArgs& args,
                                                            std::initializer_list<std::string_view> names) {
  std::vector<std::optional<Value>> out(names.size());
  if (args.positional.size() > names.size()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(fn), "() takes at most ", names.size(), " argument(s) (",
                                                   args.positional.size(), " given)"));
  }
  for (size_t i = 0; i < args.positional.size(); ++i) out[i] = args.positional[i];
  for (const auto& [k, v] : args.keyword) {
    size_t i = 0;
    for (auto n : names) {
      if (n == k) break;
      ++i;
    }
    if (i == names.size()) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(fn), "() got an unexpected keyword argument '", k, "'"));
    }
    if (out[i]) return absl::InvalidArgumentError(absl::StrCat(std::string(fn), "() got multiple values for argument '", k, "'"));
    out[i] = v;
  }
  return out;
}

absl::StatusOr<int64_t> int_arg(std::string_view fn, std::string_view param, const std::optional<Value>& v,
                                int64_t absent) {
  if (!v || v->is_none()) return absent;
  if (!v->is_int() && !v->is_bool()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(fn), "(): '", std::string(param),
                                                   "' must be an integer, not ", v->type_name()));
  }
  return v->as_int();
}

namespace {

using TestResult = absl::StatusOr<bool>;

absl::StatusOr<Value> one_arg(std::string_view test, const CallArgs& args) {
  auto b = bind_args(test, args, {"other"});
  if (!b.ok()) return b.status();
  if (!(*b)[0]) return absl::InvalidArgumentError(absl::StrCat("test '", std::string(test), "' needs an argument"));
  return *(*b)[0];
}

#define SIMPLE_TEST(fn, expr) \
  TestResult fn(Interpreter&, const Value& v, CallArgs&) { return (expr); }

SIMPLE_TEST(t_defined, !v.is_undefined())
SIMPLE_TEST(t_undefined, v.is_undefined())
SIMPLE_TEST(t_none, v.is_none())
SIMPLE_TEST(t_string, v.is_string())
SIMPLE_TEST(t_number, v.is_number())
SIMPLE_TEST(t_integer, v.is_int())
SIMPLE_TEST(t_float, v.is_float())
SIMPLE_TEST(t_mapping, v.is_dict())
SIMPLE_TEST(t_iterable, v.is_undefined() || v.is_string() || v.is_list() || v.is_dict())
SIMPLE_TEST(t_sequence, v.is_undefined() || v.is_string() || v.is_list() || v.is_dict())
SIMPLE_TEST(t_boolean, v.is_bool())
SIMPLE_TEST(t_true, v.is_bool() && v.as_bool())
SIMPLE_TEST(t_false, v.is_bool() && !v.as_bool())
SIMPLE_TEST(t_callable, v.is_callable())
SIMPLE_TEST(t_escaped, false)

TestResult t_odd(Interpreter&, const Value& v, CallArgs&) {
  if (!v.is_int() && !v.is_bool()) return absl::InvalidArgumentError(absl::StrCat("test 'odd' needs an integer, got ", v.type_name()));
  return (v.as_int() % 2) != 0;
}
TestResult t_even(Interpreter&, const Value& v, CallArgs&) {
  if (!v.is_int() && !v.is_bool()) return absl::InvalidArgumentError(absl::StrCat("test 'even' needs an integer, got ", v.type_name()));
  return (v.as_int() % 2) == 0;
}
TestResult t_divisibleby(Interpreter& in, const Value& v, CallArgs& a) {
  auto n = one_arg("divisibleby", a);
  if (!n.ok()) return n.status();
  auto r = binary_op("%", v, *n, in.limits().max_output_bytes);
  if (!r.ok()) return r.status();
  return values_equal(*r, Value(int64_t{0}));
}
TestResult t_lower(Interpreter&, const Value& v, CallArgs&) { return v.is_string() && py_lower(v.as_string()) == v.as_string(); }
TestResult t_upper(Interpreter&, const Value& v, CallArgs&) { return v.is_string() && py_upper(v.as_string()) == v.as_string(); }

TestResult compare_test(const char* op, const char* name, const Value& v, CallArgs& a) {
  auto other = one_arg(name, a);
  if (!other.ok()) return other.status();
  return compare_op(op, v, *other);
}
TestResult t_eq(Interpreter&, const Value& v, CallArgs& a) { return compare_test("==", "eq", v, a); }
TestResult t_ne(Interpreter&, const Value& v, CallArgs& a) { return compare_test("!=", "ne", v, a); }
TestResult t_lt(Interpreter&, const Value& v, CallArgs& a) { return compare_test("<", "lt", v, a); }
TestResult t_le(Interpreter&, const Value& v, CallArgs& a) { return compare_test("<=", "le", v, a); }
TestResult t_gt(Interpreter&, const Value& v, CallArgs& a) { return compare_test(">", "gt", v, a); }
TestResult t_ge(Interpreter&, const Value& v, CallArgs& a) { return compare_test(">=", "ge", v, a); }
TestResult t_in(Interpreter&, const Value& v, CallArgs& a) { return compare_test("in", "in", v, a); }
TestResult t_sameas(Interpreter&, const Value& v, CallArgs& a) {
  auto other = one_arg("sameas", a);
  if (!other.ok()) return other.status();
  if (v.kind() != other->kind()) return false;
  if (v.is_none() || v.is_undefined()) return true;
  return values_equal(v, *other);
}

// `namespace(...)`/`dict(...)` argument handling: an optional mapping or list of pairs, then keywords.
absl::StatusOr<Dict> dict_from_args(std::string_view fn, const CallArgs& args) {
  Dict d;
  if (args.positional.size() > 1) return absl::InvalidArgumentError(absl::StrCat(std::string(fn), "() expected at most 1 positional argument"));
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_dict()) {
      d = src.as_dict();
    } else if (src.is_list()) {
      for (const auto& pair : src.items()) {
        if (!pair.is_list() || pair.items().size() != 2) {
          return absl::InvalidArgumentError(absl::StrCat(std::string(fn), "(): sequence elements must be pairs"));
        }
        d.set(pair.items()[0], pair.items()[1]);
      }
    } else if (!src.is_undefined()) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(fn), "(): expected a mapping, got ", src.type_name()));
    }
  }
  for (const auto& [k, v] : args.keyword) d.set(Value(k), v);
  return d;
}

absl::StatusOr<Value> g_range(Interpreter&, CallArgs& args) {
  if (!args.keyword.empty()) return absl::InvalidArgumentError("range() takes no keyword arguments");
  std::vector<int64_t> a;
  for (const auto& v : args.positional) {
    if (!v.is_int() && !v.is_bool()) {
      return absl::InvalidArgumentError(absl::StrCat("'", v.type_name(), "' object cannot be interpreted as an integer"));
    }
    a.push_back(v.as_int());
  }
  if (a.empty() || a.size() > 3) return absl::InvalidArgumentError("range expected 1 to 3 arguments");
  int64_t start = a.size() == 1 ? 0 : a[0];
  int64_t stop = a.size() == 1 ? a[0] : a[1];
  int64_t step = a.size() == 3 ? a[2] : 1;
  if (step == 0) return absl::InvalidArgumentError("range() arg 3 must not be zero");
  __int128 n = 0;
  if (step > 0 && stop > start) n = ((__int128)stop - start + step - 1) / step;
  if (step < 0 && stop < start) n = ((__int128)start - stop - step - 1) / (-(__int128)step);
  // Same bound as jinja2's sandbox (MAX_RANGE).
  if (n > 100000) {
    return absl::ResourceExhaustedError("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  }
  std::vector<Value> out;
  // In 128 bits: i * step may pass 64 bits although every start + i * step lies in [start, stop).
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) out.emplace_back(static_cast<int64_t>(start + static_cast<__int128>(i) * step));
  return Value::list(std::move(out));
}

absl::StatusOr<Value> g_dict(Interpreter&, CallArgs& args) {
  auto d = dict_from_args("dict", args);
  if (!d.ok()) return d.status();
  return Value::dict(std::move(*d));
}

absl::StatusOr<Value> g_namespace(Interpreter& in, CallArgs& args) {
  auto d = dict_from_args("namespace", args);
  if (!d.ok()) return d.status();
  for (const auto& [k, v] : d->entries) {
    if (k.is_string() && !k.as_string().empty() && k.as_string()[0] == '_') {
      return absl::PermissionDeniedError(absl::StrCat(
          "Chat templates cannot store underscore-prefixed attributes on a namespace, but got ", k.repr(), "."));
    }
  }
  auto ns = std::make_shared<Namespace>();
  ns->attrs = std::move(*d);
  in.track_namespace(ns);
  return Value::ns(std::move(ns));
}

absl::StatusOr<Value> g_raise_exception(Interpreter&, CallArgs& args) {
  auto b = bind_args("raise_exception", args, {"message"});
  if (!b.ok()) return b.status();
  absl::Status s = absl::InvalidArgumentError((*b)[0] ? (*b)[0]->str() : "");
  s.SetPayload(kRaiseExceptionPayload, absl::Cord("1"));
  return s;
}

absl::StatusOr<Value> g_strftime_now(Interpreter& in, CallArgs& args) {
  auto b = bind_args("strftime_now", args, {"format"});
  if (!b.ok()) return b.status();
  if (!(*b)[0] || !(*b)[0]->is_string()) return absl::InvalidArgumentError("strftime_now() expects a format string");
  std::tm tm{};
  if (in.limits().now) {
    tm = in.limits().now();
  } else {
    std::time_t t = std::time(nullptr);
    localtime_r(&t, &tm);
  }
  const std::string& fmt = (*b)[0]->as_string();
  if (fmt.empty()) return Value("");
  // strftime returns 0 both for "buffer too small" and for an empty result; grow a few times.
  for (size_t cap = 256; cap <= (size_t{1} << 20); cap *= 4) {
    std::string buf(cap, '\0');
    size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
    if (n > 0) {
      buf.resize(n);
      return Value(std::move(buf));
    }
  }
  return Value("");
}

}  // namespace

TestFn find_test(std::string_view name) {
  static const std::unordered_map<std::string_view, TestFn> kTests = {
      {"defined", t_defined}, {"undefined", t_undefined}, {"none", t_none}, {"string", t_string},
      {"number", t_number},   {"integer", t_integer},     {"float", t_float}, {"mapping", t_mapping},
      {"iterable", t_iterable}, {"sequence", t_sequence}, {"boolean", t_boolean}, {"true", t_true},
      {"false", t_false},     {"callable", t_callable},   {"escaped", t_escaped}, {"odd", t_odd},
      {"even", t_even},       {"divisibleby", t_divisibleby}, {"lower", t_lower}, {"upper", t_upper},
      {"equalto", t_eq},      {"eq", t_eq},               {"==", t_eq},        {"sameas", t_sameas},
      {"ne", t_ne},           {"!=", t_ne},               {"lt", t_lt},        {"lessthan", t_lt},
      {"<", t_lt},            {"le", t_le},               {"<=", t_le},        {"gt", t_gt},
      {"greaterthan", t_gt},  {">", t_gt},                {"ge", t_ge},        {">=", t_ge},
      {"in", t_in},
  };
  auto it = kTests.find(name);
  return it == kTests.end() ? nullptr : it->second;
}

std::vector<std::pair<std::string, Value>> make_globals() {
  return {
      {"range", Value::callable("range", g_range)},
      {"dict", Value::callable("dict", g_dict)},
      {"namespace", Value::callable("namespace", g_namespace)},
      {"raise_exception", Value::callable("raise_exception", g_raise_exception)},
      {"strftime_now", Value::callable("strftime_now", g_strftime_now)},
  };
}

}  // namespace weft::jinja
