// jinja2's builtin filters (jinja2/filters.py) with Hugging Face's tojson override.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "core/html_escape.h"
#include "tokenizer/chat_template/builtins.h"
#include "tokenizer/chat_template/interpreter.h"
#include "tokenizer/chat_template/json_dumps.h"
#include "tokenizer/chat_template/operators.h"
#include "tokenizer/chat_template/unicode_text.h"

namespace weft::jinja {
namespace {

using Result = absl::StatusOr<Value>;

#define BIND(var, fn, ...)                          \
  auto var##_or = bind_args(fn, args, __VA_ARGS__); \
  if (!var##_or.ok()) return var##_or.status();     \
  auto& var = *var##_or

#define TRY(var, expr)                   \
  auto var##_or = (expr);                \
  if (!var##_or.ok()) return var##_or.status(); \
  auto& var = *var##_or

Value opt(const std::optional<Value>& v, Value dflt) { return v ? *v : std::move(dflt); }
bool flag(const std::optional<Value>& v) { return v && v->truthy(); }

Value ignore_case(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(py_lower(v.as_string()));
  return v;
}

// jinja2 make_attrgetter: dotted path, each part through getitem (integers as indices).
absl::StatusOr<Value> attr_path(const Value& item, const Value& attribute, const Value& dflt) {
  Value cur = item;
  if (attribute.is_int()) {
    TRY(v, get_item(cur, attribute));
    cur = v;
  } else {
    std::string path = attribute.str();
    size_t start = 0;
    while (true) {
      size_t dot = path.find('.', start);
      std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      Value key(part);
      if (!part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        // jinja2 looks digits up as an integer. One past 64 bits names nothing a template holds.
        int64_t index = 0;
        if (std::from_chars(part.data(), part.data() + part.size(), index).ec != std::errc()) {
          cur = Value::undefined(part);
          break;
        }
        key = Value(index);
      }
      TRY(v, get_item(cur, key));
      cur = v;
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
  }
  if (!dflt.is_none() && !dflt.is_undefined() && cur.is_undefined()) return dflt;
  return cur;
}

CallArgs rest_args(const CallArgs& args, size_t from) {
  CallArgs r;
  for (size_t i = from; i < args.positional.size(); ++i) r.positional.push_back(args.positional[i]);
  r.keyword = args.keyword;
  return r;
}

Result f_tojson(Interpreter& in, const Value& v, CallArgs& args) {
  BIND(b, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.max_bytes = in.limits().max_output_bytes;
  o.ensure_ascii = flag(b[0]);
  if (b[1] && !b[1]->is_none()) {
    if (b[1]->is_string()) {
      o.indent = b[1]->as_string();
    } else if (b[1]->is_int() || b[1]->is_bool()) {
      const int64_t width = std::max<int64_t>(0, b[1]->as_int());
      if (auto st = in.check_size(static_cast<uint64_t>(width)); !st.ok()) return st;
      o.indent = std::string(static_cast<size_t>(width), ' ');
    } else {
      return absl::InvalidArgumentError(absl::StrCat("tojson: indent must be an int or str, not ", b[1]->type_name()));
    }
  }
  if (b[2] && !b[2]->is_none()) {
    if (!b[2]->is_list() || b[2]->items().size() != 2 || !b[2]->items()[0].is_string() || !b[2]->items()[1].is_string()) {
      return absl::InvalidArgumentError("tojson: separators must be a pair of strings");
    }
    o.item_separator = b[2]->items()[0].as_string();
    o.key_separator = b[2]->items()[1].as_string();
  }
  o.sort_keys = flag(b[3]);
  TRY(s, json_dumps(v, o));
  return Value(std::move(s));
}

Result f_trim(Interpreter&, const Value& v, CallArgs& args) {
  BIND(b, "trim", {"chars"});
  std::string chars = b[0] && !b[0]->is_none() ? b[0]->str() : "";
  return Value(py_strip(v.str(), b[0] && !b[0]->is_none() ? &chars : nullptr, true, true));
}

Result f_length(Interpreter&, const Value& v, CallArgs& args) {
  if (!args.positional.empty() || !args.keyword.empty()) return absl::InvalidArgumentError("length() takes no arguments");
  TRY(n, length(v));
  return Value(n);
}

Result f_upper(Interpreter&, const Value& v, CallArgs&) { return Value(py_upper(v.str())); }
Result f_lower(Interpreter&, const Value& v, CallArgs&) { return Value(py_lower(v.str())); }
Result f_capitalize(Interpreter&, const Value& v, CallArgs&) { return Value(py_capitalize(v.str())); }

// jinja2's title splits on runs of [-\s({\[<] and capitalizes each piece.
Result f_title(Interpreter&, const Value& v, CallArgs&) {
  std::u32string cps = utf8_decode(v.str());
  auto is_sep = [](char32_t c) { return py_isspace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<'; };
  std::string out;
  size_t i = 0;
  while (i < cps.size()) {
    size_t j = i;
    bool sep = is_sep(cps[i]);
    while (j < cps.size() && is_sep(cps[j]) == sep) ++j;
    std::string piece = utf8_encode(std::u32string_view(cps).substr(i, j - i));
    if (sep) {
      out += piece;
    } else {
      std::string first = utf8_encode(std::u32string_view(cps).substr(i, 1));
      out += py_upper(first) + py_lower(utf8_encode(std::u32string_view(cps).substr(i + 1, j - i - 1)));
    }
    i = j;
  }
  return Value(std::move(out));
}

Result f_default(Interpreter&, const Value& v, CallArgs& args) {
  BIND(b, "default", {"default_value", "boolean"});
  if (v.is_undefined() || (flag(b[1]) && !v.truthy())) return opt(b[0], Value(""));
  return v;
}

Result f_join(Interpreter& in, const Value& v, CallArgs& args) {
  BIND(b, "join", {"d", "attribute"});
  TRY(items, iterate(v));
  std::string sep = b[0] ? b[0]->str() : "";
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    if (b[1] && !b[1]->is_none()) {
      TRY(a, attr_path(items[i], *b[1], Value::none()));
      out += a.str();
    } else {
      out += items[i].str();
    }
    if (auto s = in.check_size(out.size()); !s.ok()) return s;
  }
  return Value(std::move(out));
}

Result f_first(Interpreter&, const Value& v, CallArgs&) {
  TRY(items, iterate(v));
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Result f_last(Interpreter&, const Value& v, CallArgs&) {
  TRY(items, iterate(v));
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Result f_list(Interpreter&, const Value& v, CallArgs&) {
  TRY(items, iterate(v));
  return Value::list(std::move(items));
}

Result f_items(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) return absl::InvalidArgumentError("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, val] : v.as_dict().entries) out.push_back(Value::list({k, val}, true));
  return Value::list(std::move(out));
}

absl::StatusOr<Value> select_impl(Interpreter& in, const Value& v, CallArgs& args, bool by_attr, bool keep) {
  TRY(items, iterate(v));
  size_t first_arg = by_attr ? 1 : 0;
  if (by_attr && args.positional.empty()) return absl::InvalidArgumentError("selectattr/rejectattr: missing attribute name");
  std::string test = args.positional.size() > first_arg ? args.positional[first_arg].str() : "";
  CallArgs test_args = rest_args(args, first_arg + 1);
  std::vector<Value> out;
  for (const auto& item : items) {
    Value subject = item;
    if (by_attr) {
      TRY(a, attr_path(item, args.positional[0], Value::none()));
      subject = a;
    }
    bool ok;
    if (test.empty()) {
      ok = subject.truthy();
    } else {
      CallArgs ta = test_args;
      TRY(t, in.apply_test(test, subject, ta));
      ok = t;
    }
    if (ok == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Result f_selectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, true, true); }
Result f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, true, false); }
Result f_select(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, false, true); }
Result f_reject(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, false, false); }

Result f_map(Interpreter& in, const Value& v, CallArgs& args) {
  TRY(items, iterate(v));
  std::vector<Value> out;
  if (args.positional.empty()) {
    Value attribute, dflt = Value::none();
    for (const auto& [k, val] : args.keyword) {
      if (k == "attribute") attribute = val;
      else if (k == "default") dflt = val;
      else return absl::InvalidArgumentError(absl::StrCat("map: unexpected keyword argument '", k, "'"));
    }
    if (attribute.is_undefined()) return absl::InvalidArgumentError("map: expected a filter name or attribute=");
    for (const auto& item : items) {
      TRY(a, attr_path(item, attribute, dflt));
      out.push_back(a);
    }
  } else {
    std::string filter = args.positional[0].str();
    CallArgs fa = rest_args(args, 1);
    for (const auto& item : items) {
      CallArgs call = fa;
      TRY(r, in.apply_filter(filter, item, call));
      out.push_back(r);
    }
  }
  return Value::list(std::move(out));
}

Result f_reverse(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_string()) {
    std::u32string cps = utf8_decode(v.as_string());
    std::reverse(cps.begin(), cps.end());
    return Value(utf8_encode(cps));
  }
  TRY(items, iterate(v));
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Result f_replace(Interpreter& in, const Value& v, CallArgs& args) {
  BIND(b, "replace", {"old", "new", "count"});
  if (!b[0] || !b[1]) return absl::InvalidArgumentError("replace: expected old and new strings");
  CallArgs m;
  m.positional = {Value(b[0]->str()), Value(b[1]->str()), b[2] && !b[2]->is_none() ? *b[2] : Value(int64_t{-1})};
  auto method = find_method(Value(v.str()), "replace");
  return in.call(*method, m);
}

Result f_string(Interpreter&, const Value& v, CallArgs&) { return Value(v.str()); }

Result f_int(Interpreter&, const Value& v, CallArgs& args) {
  BIND(b, "int", {"default", "base"});
  Value dflt = opt(b[0], Value(int64_t{0}));
  TRY(base_arg, int_arg("int", "base", b[1], 10));
  // strtoll accepts 0 (auto-detect) and 2..36, as Python's int() does.
  if (base_arg != 0 && (base_arg < 2 || base_arg > 36)) return absl::InvalidArgumentError("int: base must be 0 or 2..36");
  int base = static_cast<int>(base_arg);
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  // A float past 64 bits (Python would give a big int) or not finite takes the default.
  auto to_int = [&dflt](double d) {
    const double t = std::trunc(d);
    return t >= -9.2233720368547758e18 && t < 9.2233720368547758e18 ? Value(static_cast<int64_t>(t)) : dflt;
  };
  if (v.is_float()) return to_int(v.as_float());
  if (v.is_string()) {
    std::string s = py_strip(v.as_string(), nullptr, true, true);
    std::string digits;
    for (char c : s) {
      if (c != '_') digits += c;
    }
    if (!digits.empty()) {
      char* end = nullptr;
      errno = 0;
      long long x = std::strtoll(digits.c_str(), &end, base);
      if (errno == 0 && *end == '\0') return Value(static_cast<int64_t>(x));
      double d = std::strtod(digits.c_str(), &end);
      if (*end == '\0') return to_int(d);
    }
  }
  return dflt;
}

Result f_float(Interpreter&, const Value& v, CallArgs& args) {
  BIND(b, "float", {"default"});
  if (v.is_number()) return Value(v.as_float());
  if (v.is_string()) {
    std::string s = py_strip(v.as_string(), nullptr, true, true);
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && *end == '\0') return Value(d);
  }
  return opt(b[0], Value(0.0));
}

// Python round(x, n): correctly rounded, ties to even (printf rounds the exact binary value).
double py_round(double x, int64_t n) {
  if (!std::isfinite(x)) return x;
  if (n >= 0) {
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(std::min<int64_t>(n, 300)), x);
    return std::strtod(buf, nullptr);
  }
  if (n < -400) return std::copysign(0.0, x);  // 10^400 overflows a double; Python gives 0.0 too.
  double p = std::pow(10.0, static_cast<double>(-n));
  return std::nearbyint(x / p) * p;
}

Result f_round(Interpreter&, const Value& v, CallArgs& args) {
  BIND(b, "round", {"precision", "method"});
  TRY(precision, int_arg("round", "precision", b[0], 0));
  std::string method = b[1] ? b[1]->str() : "common";
  if (!v.is_number()) return absl::InvalidArgumentError(absl::StrCat("round: expected a number, got ", v.type_name()));
  if (method == "common") {
    if (!v.is_float()) return Value(v.as_int());
    return Value(py_round(v.as_float(), precision));
  }
  if (method != "ceil" && method != "floor") return absl::InvalidArgumentError("round: method must be common, ceil or floor");
  double p = std::pow(10.0, static_cast<double>(precision));
  double x = v.as_float() * p;
  return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / p);
}

Result f_abs(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) {
    if (v.as_int() == INT64_MIN) return absl::InvalidArgumentError("integer overflow in abs()");
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  return absl::InvalidArgumentError(absl::StrCat("bad operand type for abs(): '", v.type_name(), "'"));
}

Result f_safe(Interpreter&, const Value& v, CallArgs&) { return Value(v.str()); }

Result f_escape(Interpreter&, const Value& v, CallArgs&) { return Value(html_escape(v.str())); }

Result f_indent(Interpreter& in, const Value& v, CallArgs& args) {
  BIND(b, "indent", {"width", "first", "blank"});
  std::string ind;
  if (b[0] && b[0]->is_string()) {
    ind = b[0]->as_string();
  } else {
    TRY(width, int_arg("indent", "width", b[0], 4));
    if (auto st = in.check_size(static_cast<size_t>(std::max<int64_t>(0, width))); !st.ok()) return st;
    ind = std::string(static_cast<size_t>(std::max<int64_t>(0, width)), ' ');
  }
  std::string s = v.str() + "\n";
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      lines.push_back(s.substr(start, i - start));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  std::string rv;
  if (flag(b[2])) {
    for (size_t i = 0; i < lines.size(); ++i) {
      rv += (i ? "\n" + ind : "") + lines[i];
      if (auto st = in.check_size(rv.size()); !st.ok()) return st;
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += "\n" + (lines[i].empty() ? "" : ind + lines[i]);
      if (auto st = in.check_size(rv.size()); !st.ok()) return st;
    }
  }
  if (flag(b[1])) rv = ind + rv;
  return Value(std::move(rv));
}

Result f_unique(Interpreter&, const Value& v, CallArgs& args) {
  BIND(b, "unique", {"case_sensitive", "attribute"});
  TRY(items, iterate(v));
  std::vector<Value> seen, out;
  for (const auto& item : items) {
    Value key = item;
    if (b[1] && !b[1]->is_none()) {
      TRY(a, attr_path(item, *b[1], Value::none()));
      key = a;
    }
    key = ignore_case(key, flag(b[0]));
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return values_equal(s, key); })) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Value::list(std::move(out));
}

// Stable sort by key; Python's reverse=True keeps equal items in their original order too.
absl::Status sort_by_key(std::vector<std::pair<Value, Value>>& keyed, bool reverse) {
  absl::Status err;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    auto r = reverse ? value_less(y.first, x.first) : value_less(x.first, y.first);
    if (!r.ok()) {
      err = r.status();
      return false;
    }
    return *r;
  });
  return err;
}

Result f_sort(Interpreter&, const Value& v, CallArgs& args) {
  BIND(b, "sort", {"reverse", "case_sensitive", "attribute"});
  TRY(items, iterate(v));
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& item : items) {
    Value key = item;
    if (b[2] && !b[2]->is_none()) {
      TRY(a, attr_path(item, *b[2], Value::none()));
      key = a;
    }
    keyed.emplace_back(ignore_case(key, flag(b[1])), item);
  }
  if (auto s = sort_by_key(keyed, flag(b[0])); !s.ok()) return s;
  std::vector<Value> out;
  for (auto& [k, item] : keyed) out.push_back(item);
  return Value::list(std::move(out));
}

Result f_dictsort(Interpreter&, const Value& v, CallArgs& args) {
  BIND(b, "dictsort", {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) return absl::InvalidArgumentError("dictsort: expected a mapping");
  std::string by = b[1] ? b[1]->str() : "key";
  if (by != "key" && by != "value") return absl::InvalidArgumentError("You can only sort by either \"key\" or \"value\"");
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& [k, val] : v.as_dict().entries) {
    keyed.emplace_back(ignore_case(by == "key" ? k : val, flag(b[0])), Value::list({k, val}, true));
  }
  if (auto s = sort_by_key(keyed, flag(b[2])); !s.ok()) return s;
  std::vector<Value> out;
  for (auto& [k, item] : keyed) out.push_back(item);
  return Value::list(std::move(out));
}

Result f_sum(Interpreter& in, const Value& v, CallArgs& args) {
  BIND(b, "sum", {"attribute", "start"});
  TRY(items, iterate(v));
  Value total = opt(b[1], Value(int64_t{0}));
  for (const auto& item : items) {
    Value x = item;
    if (b[0] && !b[0]->is_none()) {
      TRY(a, attr_path(item, *b[0], Value::none()));
      x = a;
    }
    TRY(t, binary_op("+", total, x, in.limits().max_output_bytes));
    total = t;
  }
  return total;
}

absl::StatusOr<Value> min_max(const Value& v, CallArgs& args, bool want_max) {
  BIND(b, want_max ? "max" : "min", {"case_sensitive", "attribute"});
  TRY(items, iterate(v));
  if (items.empty()) return Value::undefined(want_max ? "No largest item, sequence was empty." : "No smallest item, sequence was empty.");
  const Value* best = nullptr;
  Value best_key;
  for (const auto& item : items) {
    Value key = item;
    if (b[1] && !b[1]->is_none()) {
      TRY(a, attr_path(item, *b[1], Value::none()));
      key = a;
    }
    key = ignore_case(key, flag(b[0]));
    if (best) {
      TRY(better, want_max ? value_less(best_key, key) : value_less(key, best_key));
      if (!better) continue;
    }
    best = &item;
    best_key = key;
  }
  return *best;
}

Result f_min(Interpreter&, const Value& v, CallArgs& a) { return min_max(v, a, false); }
Result f_max(Interpreter&, const Value& v, CallArgs& a) { return min_max(v, a, true); }

Result f_format(Interpreter& in, const Value& v, CallArgs& args) {
  if (!args.positional.empty() && !args.keyword.empty()) {
    return absl::InvalidArgumentError("can't handle positional and keyword arguments at the same time");
  }
  Value fmt_args;
  if (!args.keyword.empty()) {
    Dict d;
    for (const auto& [k, val] : args.keyword) d.set(Value(k), val);
    fmt_args = Value::dict(std::move(d));
  } else {
    fmt_args = Value::list(args.positional, true);
  }
  TRY(s, percent_format(v.str(), fmt_args, in.limits().max_output_bytes));
  return Value(std::move(s));
}

Result f_attr(Interpreter&, const Value& v, CallArgs& args) {
  BIND(b, "attr", {"name"});
  if (!b[0]) return absl::InvalidArgumentError("attr: missing attribute name");
  return get_attr(v, b[0]->str());
}

Result f_wordcount(Interpreter&, const Value& v, CallArgs&) {
  int64_t n = 0;
  bool in_word = false;
  for (char32_t cp : utf8_decode(v.str())) {
    bool w = py_isalpha(cp) || py_isdigit(cp) || cp == '_';
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

Result f_center(Interpreter& in, const Value& v, CallArgs& args) {
  BIND(b, "center", {"width"});
  std::string s = v.str();
  TRY(width, int_arg("center", "width", b[0], 80));
  int64_t len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return Value(s);
  int64_t marg = width - len;
  if (auto st = in.check_size(s.size() + static_cast<uint64_t>(marg)); !st.ok()) return st;
  int64_t left = marg / 2 + (marg & width & 1);
  return Value(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(marg - left), ' '));
}

}  // namespace

FilterFn find_filter(std::string_view name) {
  static const std::unordered_map<std::string_view, FilterFn> kFilters = {
      {"tojson", f_tojson},       {"trim", f_trim},         {"length", f_length},     {"count", f_length},
      {"upper", f_upper},         {"lower", f_lower},       {"capitalize", f_capitalize}, {"title", f_title},
      {"default", f_default},     {"d", f_default},         {"join", f_join},         {"first", f_first},
      {"last", f_last},           {"list", f_list},         {"items", f_items},       {"selectattr", f_selectattr},
      {"rejectattr", f_rejectattr}, {"select", f_select},   {"reject", f_reject},     {"map", f_map},
      {"reverse", f_reverse},     {"replace", f_replace},   {"string", f_string},     {"int", f_int},
      {"float", f_float},         {"round", f_round},       {"abs", f_abs},           {"safe", f_safe},
      {"escape", f_escape},       {"e", f_escape},          {"forceescape", f_escape}, {"indent", f_indent},
      {"unique", f_unique},       {"sort", f_sort},         {"dictsort", f_dictsort}, {"sum", f_sum},
      {"min", f_min},             {"max", f_max},           {"format", f_format},     {"attr", f_attr},
      {"wordcount", f_wordcount}, {"center", f_center},
  };
  auto it = kFilters.find(name);
  return it == kFilters.end() ? nullptr : it->second;
}

}  // namespace weft::jinja
