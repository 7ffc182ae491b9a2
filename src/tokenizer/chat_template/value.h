// The value type the chat template interpreter evaluates over: a small model of the Python objects
// a Jinja2 template sees (None, bool, int, float, str, list/tuple, dict, namespace, callables) plus
// jinja2's default Undefined. Lists, tuples and dicts are immutable and shared (templates run in
// jinja2's ImmutableSandboxedEnvironment, which forbids mutating them); namespaces are the one
// mutable object and have reference semantics, as in Python.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace weft::jinja {

class Value;
class Interpreter;

// Bounds the output of Value::str() / repr() on this thread while it is alive (one render).
class ReprBudget {
 public:
  explicit ReprBudget(size_t max_bytes);
  ~ReprBudget();
  ReprBudget(const ReprBudget&) = delete;
  ReprBudget& operator=(const ReprBudget&) = delete;
  // True once a str() / repr() under this budget stopped expanding; the interpreter then fails
  // the expression that asked for it.
  static bool exceeded();
};

// Arguments of a call: positional, then keyword (in call order).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct Undefined {
  std::string hint;  // what was looked up, for error messages ("'foo' is undefined")
};
struct None {};

struct List {
  std::vector<Value> items;
  bool is_tuple = false;  // only changes how it prints: (1, 2) vs [1, 2]
};

// Insertion-ordered dict (Python dicts keep insertion order, and tojson/items() expose it).
struct Dict {
  std::vector<std::pair<Value, Value>> entries;
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  // Inserts or overwrites, keeping the original position of an existing key.
  void set(Value key, Value value);
};

struct Namespace {
  Dict attrs;
};

// A builtin function, bound method or macro. `fn` receives the interpreter (for output limits,
// macro bodies, the clock) and the evaluated arguments.
struct Callable {
  std::string name;
  std::function<absl::StatusOr<Value>(Interpreter&, CallArgs&)> fn;
};

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kCallable
  };

  Value() : v_(Undefined{}) {}
  static Value undefined(std::string hint = {}) { return Value(Storage(Undefined{std::move(hint)})); }
  static Value none() { return Value(Storage(None{})); }
  Value(bool b) : v_(b) {}
  Value(int64_t i) : v_(i) {}
  Value(int i) : v_(static_cast<int64_t>(i)) {}
  Value(double d) : v_(d) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(std::string_view s) : v_(std::string(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  static Value list(std::vector<Value> items, bool is_tuple = false);
  static Value dict(Dict d);
  static Value ns(std::shared_ptr<Namespace> n) { return Value(Storage(std::move(n))); }
  static Value callable(std::string name, std::function<absl::StatusOr<Value>(Interpreter&, CallArgs&)> fn);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  // int, float or bool (Python's numbers.Number).
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_namespace() const { return kind() == Kind::kNamespace; }
  bool is_callable() const { return kind() == Kind::kCallable; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return is_bool() ? (as_bool() ? 1 : 0) : std::get<int64_t>(v_); }
  double as_float() const { return is_float() ? std::get<double>(v_) : static_cast<double>(as_int()); }
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const List& as_list() const { return *std::get<std::shared_ptr<const List>>(v_); }
  const std::vector<Value>& items() const { return as_list().items; }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<const Dict>>(v_); }
  Namespace& as_namespace() const { return *std::get<std::shared_ptr<Namespace>>(v_); }
  const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(v_); }
  const std::string& undefined_hint() const { return std::get<Undefined>(v_).hint; }

  // Python truthiness (Undefined is falsy).
  bool truthy() const;
  // Python str(): what {{ value }} prints. Undefined prints as "".
  // A namespace inside itself prints as <Namespace {...}> (Python's recursive repr). Past the
  // budget of ReprBudget (in force while a template renders), nested values are no longer
  // expanded and ReprBudget::exceeded() turns true: a list shared many times over has a printed
  // form exponentially larger than its memory.
  std::string str() const;
  // Python repr(), used inside containers; same guards as str().
  std::string repr() const;
  // Python type name, for error messages ("str", "int", "dict", ...).
  std::string type_name() const;

  static Value from_json(const nlohmann::ordered_json& j);
  static Value from_json(const nlohmann::json& j);

 private:
  using Storage = std::variant<Undefined, None, bool, int64_t, double, std::string,
                               std::shared_ptr<const List>, std::shared_ptr<const Dict>,
                               std::shared_ptr<Namespace>, std::shared_ptr<const Callable>>;
  explicit Value(Storage s) : v_(std::move(s)) {}
  Storage v_;
};

// Python ==: numbers compare by value across int/float/bool, containers element-wise,
// different types are unequal. Undefined equals only Undefined.
bool values_equal(const Value& a, const Value& b);

// Python <: numbers, strings (by code point), lists/tuples lexicographically. Other pairs are a
// TypeError in Python and an InvalidArgument error here.
absl::StatusOr<bool> value_less(const Value& a, const Value& b);

// Python float repr (shortest round-trip, "1.0", "1e+20", "1e-05", "inf", "nan").
std::string python_float_repr(double d);

// Python repr() of a str.
std::string python_string_repr(std::string_view s);

}  // namespace weft::jinja
