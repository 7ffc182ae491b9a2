#include "tokenizer/chat_template/operators.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "tokenizer/chat_template/unicode_text.h"

namespace weft::jinja {
namespace {

absl::Status type_error(std::string msg) { return absl::InvalidArgumentError(std::move(msg)); }

absl::Status unsupported(const std::string& op, const Value& a, const Value& b) {
  return type_error(absl::StrCat("unsupported operand type(s) for ", op, ": '", a.type_name(), "' and '",
                                 b.type_name(), "'"));
}

absl::Status too_big(size_t max_bytes) {
  return absl::ResourceExhaustedError(absl::StrCat("chat template value larger than the limit of ", max_bytes, " bytes"));
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

double py_fmod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

absl::StatusOr<Value> repeat(const Value& seq, int64_t n, size_t max_bytes) {
  if (n < 0) n = 0;
  // An empty sequence stays empty however often it repeats (without looping n times).
  if ((seq.is_string() && seq.as_string().empty()) || (seq.is_list() && seq.items().empty())) n = 0;
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (!s.empty() && static_cast<uint64_t>(n) > max_bytes / s.size()) return too_big(max_bytes);
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += s;
    return Value(std::move(out));
  }
  const auto& items = seq.items();
  if (!items.empty() && static_cast<uint64_t>(n) > max_bytes / items.size()) return too_big(max_bytes);
  std::vector<Value> out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), seq.as_list().is_tuple);
}

// Python slice.indices(): resolves start/stop/step against a length.
absl::StatusOr<std::vector<int64_t>> slice_indices(int64_t len, const Value& start, const Value& stop, const Value& step) {
  auto as_opt = [](const Value& v, const char* what) -> absl::StatusOr<std::optional<int64_t>> {
    if (v.is_undefined() || v.is_none()) return std::optional<int64_t>();
    if (v.is_int() || v.is_bool()) return std::optional<int64_t>(v.as_int());
    return type_error(absl::StrCat("slice indices must be integers or None, got ", v.type_name(), " for ", what));
  };
  auto st = as_opt(step, "step");
  if (!st.ok()) return st.status();
  int64_t s = st->value_or(1);
  if (s == 0) return type_error("slice step cannot be zero");
  auto b = as_opt(start, "start");
  if (!b.ok()) return b.status();
  auto e = as_opt(stop, "stop");
  if (!e.ok()) return e.status();
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += len;
      if (x < 0) x = s < 0 ? -1 : 0;
    } else if (x >= len) {
      x = s < 0 ? len - 1 : len;
    }
    return x;
  };
  int64_t lo = clamp(*b, s < 0 ? len - 1 : 0);
  int64_t hi = clamp(*e, s < 0 ? -1 : len);
  std::vector<int64_t> idx;
  // Steps are taken only while the next index stays inside (lo, hi], so i + s never overflows
  // however large |s| is; |s| is computed unsigned (s may be INT64_MIN).
  const uint64_t stride = s > 0 ? static_cast<uint64_t>(s) : static_cast<uint64_t>(-(s + 1)) + 1;
  if (s > 0) {
    for (int64_t i = lo; i < hi; i += s) {
      idx.push_back(i);
      if (static_cast<uint64_t>(hi - i) <= stride) break;
    }
  } else {
    for (int64_t i = lo; i > hi; i += s) {
      idx.push_back(i);
      if (static_cast<uint64_t>(i - hi) <= stride) break;
    }
  }
  return idx;
}

}  // namespace

absl::Status undefined_error(const Value& u) {
  std::string hint = u.is_undefined() ? u.undefined_hint() : "";
  return absl::InvalidArgumentError(hint.empty() ? std::string("value is undefined") : hint);
}

absl::StatusOr<Value> binary_op(const std::string& op, const Value& a, const Value& b, size_t max_bytes) {
  if (op == "~") {
    std::string s = a.str();
    std::string t = b.str();
    if (s.size() + t.size() > max_bytes) return too_big(max_bytes);
    return Value(s + t);
  }
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  const bool nums = a.is_number() && b.is_number();
  const bool any_float = a.is_float() || b.is_float();
  if (op == "+") {
    if (nums) {
      if (any_float) return Value(a.as_float() + b.as_float());
      int64_t r;
      if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) return type_error("integer overflow in +");
      return Value(r);
    }
    if (a.is_string() && b.is_string()) {
      if (a.as_string().size() + b.as_string().size() > max_bytes) return too_big(max_bytes);
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list() && a.as_list().is_tuple == b.as_list().is_tuple) {
      if (a.items().size() + b.items().size() > max_bytes) return too_big(max_bytes);
      std::vector<Value> out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return Value::list(std::move(out), a.as_list().is_tuple);
    }
    if (a.is_string()) return type_error(absl::StrCat("can only concatenate str (not \"", b.type_name(), "\") to str"));
    if (a.is_list()) return type_error(absl::StrCat("can only concatenate list (not \"", b.type_name(), "\") to list"));
    return unsupported("+", a, b);
  }
  if (op == "*") {
    if (nums) {
      if (any_float) return Value(a.as_float() * b.as_float());
      int64_t r;
      if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) return type_error("integer overflow in *");
      return Value(r);
    }
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int(), max_bytes);
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int(), max_bytes);
    return type_error(absl::StrCat("can't multiply sequence by non-int of type '", b.type_name(), "'"));
  }
  if (op == "%" && a.is_string()) {
    auto s = percent_format(a.as_string(), b, max_bytes);
    if (!s.ok()) return s.status();
    return Value(std::move(*s));
  }
  if (!nums) return unsupported(op, a, b);
  if (op == "-") {
    if (any_float) return Value(a.as_float() - b.as_float());
    int64_t r;
    if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) return type_error("integer overflow in -");
    return Value(r);
  }
  if (op == "/") {
    if (b.as_float() == 0.0) return type_error("division by zero");
    return Value(a.as_float() / b.as_float());
  }
  if (op == "//" || op == "%") {
    if (b.as_float() == 0.0) return type_error(op == "//" ? "integer division or modulo by zero" : "modulo by zero");
    if (any_float) {
      double x = a.as_float(), y = b.as_float();
      double m = py_fmod(x, y);
      return op == "%" ? Value(m) : Value(std::floor(x / y));
    }
    int64_t x = a.as_int(), y = b.as_int();
    if (y == -1) {  // x // -1 = -x overflows for INT64_MIN; x % -1 is always 0
      if (op == "%") return Value(int64_t{0});
      if (x == INT64_MIN) return type_error("integer overflow in //");
    }
    if (op == "//") return Value(floor_div(x, y));
    // Python's modulo takes the divisor's sign; computed without x - q * y, which can overflow.
    int64_t m = x % y;
    if (m != 0 && ((m < 0) != (y < 0))) m += y;
    return Value(m);
  }
  if (op == "**") {
    if (!any_float && b.as_int() >= 0) {
      int64_t base = a.as_int(), e = b.as_int(), r = 1;
      while (e > 0) {
        if (e & 1) {
          if (__builtin_mul_overflow(r, base, &r)) return type_error("integer overflow in **");
        }
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base)) return type_error("integer overflow in **");
      }
      return Value(r);
    }
    return Value(std::pow(a.as_float(), b.as_float()));
  }
  return type_error(absl::StrCat("unknown operator ", op));
}

absl::StatusOr<bool> contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined: return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        return type_error(absl::StrCat("'in <string>' requires string as left operand, not ", item.type_name()));
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const auto& v : container.items()) {
        if (values_equal(v, item)) return true;
      }
      return false;
    case Value::Kind::kDict: return container.as_dict().find(item) != nullptr;
    default:
      return type_error(absl::StrCat("argument of type '", container.type_name(), "' is not iterable"));
  }
}

absl::StatusOr<bool> compare_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return values_equal(a, b);
  if (op == "!=") return !values_equal(a, b);
  if (op == "in") return contains(b, a);
  if (op == "notin") {
    auto r = contains(b, a);
    if (!r.ok()) return r.status();
    return !*r;
  }
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  absl::StatusOr<bool> r = false;
  if (op == "<") return value_less(a, b);
  if (op == ">") return value_less(b, a);
  if (op == "<=") {
    r = value_less(b, a);
    if (!r.ok()) return r;
    return !*r;
  }
  if (op == ">=") {
    r = value_less(a, b);
    if (!r.ok()) return r;
    return !*r;
  }
  return type_error(absl::StrCat("unknown comparison ", op));
}

absl::StatusOr<std::vector<Value>> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return std::vector<Value>();
    case Value::Kind::kList: return v.items();
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& [k, val] : v.as_dict().entries) keys.push_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      for (char32_t cp : utf8_decode(v.as_string())) {
        std::string s;
        utf8_append(cp, s);
        chars.emplace_back(std::move(s));
      }
      return chars;
    }
    default: return type_error(absl::StrCat("'", v.type_name(), "' object is not iterable"));
  }
}

absl::StatusOr<int64_t> length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return 0;
    case Value::Kind::kString: return static_cast<int64_t>(utf8_length(v.as_string()));
    case Value::Kind::kList: return static_cast<int64_t>(v.items().size());
    case Value::Kind::kDict: return static_cast<int64_t>(v.as_dict().entries.size());
    default: return type_error(absl::StrCat("object of type '", v.type_name(), "' has no len()"));
  }
}

static Value missing_attr(const Value& obj, const std::string& name) {
  std::string type = obj.is_dict() ? "dict object" : absl::StrCat(obj.type_name(), " object");
  return Value::undefined(absl::StrCat("'", type, "' has no attribute '", name, "'"));
}

absl::StatusOr<Value> get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (auto m = find_method(obj, name)) return *m;
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find(std::string_view(name))) return *v;
  } else if (obj.is_namespace()) {
    if (const Value* v = obj.as_namespace().attrs.find(std::string_view(name))) return *v;
  }
  return missing_attr(obj, name);
}

absl::StatusOr<Value> get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find(key)) return *v;
  } else if (obj.is_namespace() && key.is_string()) {
    if (const Value* v = obj.as_namespace().attrs.find(std::string_view(key.as_string()))) return *v;
  } else if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      int64_t n = static_cast<int64_t>(obj.items().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.items()[static_cast<size_t>(i)];
    } else {
      std::u32string cps = utf8_decode(obj.as_string());
      int64_t n = static_cast<int64_t>(cps.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value(utf8_encode(std::u32string_view(cps).substr(static_cast<size_t>(i), 1)));
    }
    return Value::undefined(absl::StrCat(obj.type_name(), " object has no element ", key.as_int()));
  }
  if (key.is_string()) {
    if (auto m = find_method(obj, key.as_string())) return *m;
    return missing_attr(obj, key.as_string());
  }
  return Value::undefined(absl::StrCat("'", obj.type_name(), " object' has no element ", key.repr()));
}

absl::StatusOr<Value> slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (obj.is_list()) {
    auto idx = slice_indices(static_cast<int64_t>(obj.items().size()), start, stop, step);
    if (!idx.ok()) return idx.status();
    std::vector<Value> out;
    for (int64_t i : *idx) out.push_back(obj.items()[static_cast<size_t>(i)]);
    return Value::list(std::move(out), obj.as_list().is_tuple);
  }
  if (obj.is_string()) {
    std::u32string cps = utf8_decode(obj.as_string());
    auto idx = slice_indices(static_cast<int64_t>(cps.size()), start, stop, step);
    if (!idx.ok()) return idx.status();
    std::u32string out;
    for (int64_t i : *idx) out.push_back(cps[static_cast<size_t>(i)]);
    return Value(utf8_encode(out));
  }
  return type_error(absl::StrCat("'", obj.type_name(), "' object is not subscriptable"));
}

namespace {

// A printf-style conversion's flags, width and precision (Python's grammar without '*').
struct PrintfSpec {
  std::string flags;  // of "-+ #0"
  size_t width = 0;
  std::optional<size_t> precision;
};

// Widths and precisions past this are refused: C's printf would pad them one byte at a time.
constexpr size_t kMaxFormatWidth = 4096;

absl::StatusOr<PrintfSpec> parse_printf_spec(std::string_view spec) {
  PrintfSpec out;
  size_t i = 0;
  while (i < spec.size() && std::string_view("-+ #0").find(spec[i]) != std::string_view::npos) out.flags += spec[i++];
  auto number = [&](size_t& value) {
    for (; i < spec.size() && spec[i] >= '0' && spec[i] <= '9'; ++i) {
      value = std::min<size_t>(value * 10 + static_cast<size_t>(spec[i] - '0'), kMaxFormatWidth + 1);
    }
  };
  number(out.width);
  if (i < spec.size() && spec[i] == '.') {
    ++i;
    size_t precision = 0;
    number(precision);
    out.precision = precision;
  }
  if (i != spec.size()) return type_error(absl::StrCat("unsupported format specification '%", std::string(spec), "'"));
  if (out.width > kMaxFormatWidth || out.precision.value_or(0) > kMaxFormatWidth) {
    return type_error(absl::StrCat("format width or precision above ", kMaxFormatWidth));
  }
  return out;
}

// snprintf of one number with `spec` and the length + conversion letters `conv`, into a string of
// the size it needs (bounded: width and precision are at most kMaxFormatWidth).
template <typename T>
std::string c_format(const PrintfSpec& spec, const std::string& conv, T value) {
  std::string f = "%" + spec.flags + (spec.width ? std::to_string(spec.width) : std::string()) +
                  (spec.precision ? "." + std::to_string(*spec.precision) : std::string()) + conv;
  const int n = std::snprintf(nullptr, 0, f.c_str(), value);
  if (n <= 0) return std::string();
  std::string out(static_cast<size_t>(n), '\0');
  std::snprintf(out.data(), out.size() + 1, f.c_str(), value);
  return out;
}

// %s / %r: precision cuts to that many code points, width pads with spaces ('-': on the right).
std::string pad_text(const PrintfSpec& spec, std::string text) {
  if (spec.precision) {
    std::u32string cps = utf8_decode(text);
    if (cps.size() > *spec.precision) text = utf8_encode(std::u32string_view(cps).substr(0, *spec.precision));
  }
  const size_t len = utf8_length(text);
  if (len >= spec.width) return text;
  const std::string pad(spec.width - len, ' ');
  return spec.flags.find('-') != std::string::npos ? text + pad : pad + text;
}

// %x / %X / %o of a signed value as Python writes it: a '-' before the magnitude.
std::string signed_radix(const PrintfSpec& spec, char conv, int64_t value) {
  if (value >= 0) return c_format(spec, std::string("ll") + conv, static_cast<long long>(value));
  const unsigned long long magnitude = static_cast<unsigned long long>(-(value + 1)) + 1;
  PrintfSpec inner = spec;
  inner.width = 0;
  std::string digits = "-" + c_format(inner, std::string("ll") + conv, magnitude);
  if (digits.size() >= spec.width) return digits;
  if (spec.flags.find('-') != std::string::npos) return digits + std::string(spec.width - digits.size(), ' ');
  if (spec.flags.find('0') != std::string::npos) return "-" + std::string(spec.width - digits.size(), '0') + digits.substr(1);
  return std::string(spec.width - digits.size(), ' ') + digits;
}

}  // namespace

absl::StatusOr<std::string> percent_format(const std::string& fmt, const Value& args, size_t max_bytes) {
  std::vector<Value> positional;
  if (args.is_list() && args.as_list().is_tuple) {
    positional = args.items();
  } else {
    positional.push_back(args);
  }
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (out.size() > max_bytes) return too_big(max_bytes);
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) return type_error("incomplete format");
    const Value* arg = nullptr;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string::npos || !args.is_dict()) return type_error("format requires a mapping");
      arg = args.as_dict().find(std::string_view(fmt).substr(i + 1, close - i - 1));
      if (!arg) return type_error(absl::StrCat("format key ", fmt.substr(i + 1, close - i - 1), " not found"));
      i = close + 1;
    }
    std::string spec;
    while (i < fmt.size() && std::string_view("-+ #0123456789.").find(fmt[i]) != std::string_view::npos) spec += fmt[i++];
    if (i >= fmt.size()) return type_error("incomplete format");
    char conv = fmt[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (!arg) {
      if (next >= positional.size()) return type_error("not enough arguments for format string");
      arg = &positional[next++];
    }
    auto parsed = parse_printf_spec(spec);
    if (!parsed.ok()) return parsed.status();
    switch (conv) {
      case 's': out += pad_text(*parsed, arg->str()); break;
      case 'r': out += pad_text(*parsed, arg->repr()); break;
      case 'd': case 'i': {
        if (!arg->is_number()) return type_error(absl::StrCat("%d format: a real number is required, not ", arg->type_name()));
        long long value = 0;
        if (arg->is_float()) {
          // Python prints any integral value; past 64 bits (or inf / nan) this refuses instead.
          const double t = std::trunc(arg->as_float());
          if (!(t >= -9.2233720368547758e18 && t < 9.2233720368547758e18)) {
            return type_error("%d format: the number does not fit in 64 bits");
          }
          value = static_cast<long long>(t);
        } else {
          value = arg->as_int();
        }
        out += c_format(*parsed, "lld", value);
        break;
      }
      case 'f': case 'e': case 'g': case 'x': case 'X': case 'o':
        if (!arg->is_number()) return type_error(absl::StrCat("format requires a number, not ", arg->type_name()));
        if ((conv == 'x' || conv == 'X' || conv == 'o') && arg->is_float()) {
          return type_error(absl::StrCat("%", std::string(1, conv), " format: an integer is required, not float"));
        }
        if (conv == 'x' || conv == 'X' || conv == 'o') {
          out += signed_radix(*parsed, conv, arg->as_int());
        } else {
          out += c_format(*parsed, std::string(1, conv), arg->as_float());
        }
        break;
      default: return type_error(absl::StrCat("unsupported format character '", std::string(1, conv), "'"));
    }
  }
  if (next < positional.size() && !args.is_dict()) return type_error("not all arguments converted during string formatting");
  if (out.size() > max_bytes) return too_big(max_bytes);
  return out;
}

absl::StatusOr<std::string> brace_format(const std::string& fmt, const CallArgs& args, size_t max_bytes) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') ++i;
      else return type_error("Single '}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos) return type_error("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    char conversion = 's';
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      if (bang + 1 < field.size()) conversion = field[bang + 1];
      field.resize(bang);
    }
    if (field.find(':') != std::string::npos) return type_error("format specs in str.format() are not supported");
    const Value* v = nullptr;
    if (field.empty()) {
      if (auto_index >= args.positional.size()) return type_error("Replacement index out of range for positional args tuple");
      v = &args.positional[auto_index++];
    } else if (std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      size_t idx = 0;
      const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), idx);
      if (ec != std::errc() || end != field.data() + field.size() || idx >= args.positional.size()) {
        return type_error("Replacement index out of range for positional args tuple");
      }
      v = &args.positional[idx];
    } else {
      for (const auto& [k, kv] : args.keyword) {
        if (k == field) v = &kv;
      }
      if (!v) return type_error(absl::StrCat("KeyError: '", field, "'"));
    }
    out += conversion == 'r' ? v->repr() : v->str();
    if (out.size() > max_bytes) return too_big(max_bytes);
  }
  return out;
}

}  // namespace weft::jinja
