// Methods of str, dict and list values that ImmutableSandboxedEnvironment allows.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "tokenizer/chat_template/builtins.h"
#include "tokenizer/chat_template/interpreter.h"
#include "tokenizer/chat_template/operators.h"
#include "tokenizer/chat_template/unicode_text.h"

namespace weft::jinja {
namespace {

using Args = std::vector<std::optional<Value>>;

absl::Status arg_type(std::string_view fn, std::string_view what, const Value& v) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(fn), "() argument must be ", std::string(what), ", not ", v.type_name()));
}

// Byte offset of code point index `cp` in s (clamped), and back.
size_t cp_to_byte(const std::string& s, int64_t cp) {
  int64_t seen = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (seen == cp) return i;
      ++seen;
    }
  }
  return s.size();
}
int64_t byte_to_cp(const std::string& s, size_t b) { return static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, b))); }

// Python str.split / rsplit.
std::vector<Value> split(const std::string& s, const std::optional<Value>& sep_arg, int64_t maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (!sep_arg || sep_arg->is_none()) {
    std::u32string cps = utf8_decode(s);
    std::vector<std::pair<size_t, size_t>> words;
    size_t i = 0;
    while (i < cps.size()) {
      while (i < cps.size() && py_isspace(cps[i])) ++i;
      if (i >= cps.size()) break;
      size_t j = i;
      while (j < cps.size() && !py_isspace(cps[j])) ++j;
      words.emplace_back(i, j);
      i = j;
    }
    if (maxsplit < 0 || static_cast<size_t>(maxsplit) >= words.size()) {
      for (auto [b, e] : words) parts.push_back(utf8_encode(std::u32string_view(cps).substr(b, e - b)));
    } else if (!from_right) {
      for (int64_t k = 0; k < maxsplit; ++k) parts.push_back(utf8_encode(std::u32string_view(cps).substr(words[k].first, words[k].second - words[k].first)));
      size_t rest = words[maxsplit].first;
      parts.push_back(utf8_encode(std::u32string_view(cps).substr(rest)));
    } else {
      size_t first_kept = words.size() - static_cast<size_t>(maxsplit);
      size_t b = 0;
      size_t end = words[first_kept - 1].second;
      parts.push_back(utf8_encode(std::u32string_view(cps).substr(b, end - b)));
      for (size_t k = first_kept; k < words.size(); ++k) parts.push_back(utf8_encode(std::u32string_view(cps).substr(words[k].first, words[k].second - words[k].first)));
    }
  } else {
    const std::string sep = sep_arg->as_string();
    if (!from_right) {
      size_t pos = 0;
      int64_t n = 0;
      while (maxsplit < 0 || n < maxsplit) {
        size_t f = s.find(sep, pos);
        if (f == std::string::npos) break;
        parts.push_back(s.substr(pos, f - pos));
        pos = f + sep.size();
        ++n;
      }
      parts.push_back(s.substr(pos));
    } else {
      size_t end = s.size();
      int64_t n = 0;
      std::vector<std::string> rev;
      while ((maxsplit < 0 || n < maxsplit) && end >= sep.size()) {
        size_t f = s.rfind(sep, end - sep.size());
        if (f == std::string::npos) break;
        rev.push_back(s.substr(f + sep.size(), end - f - sep.size()));
        end = f;
        ++n;
      }
      rev.push_back(s.substr(0, end));
      parts.assign(rev.rbegin(), rev.rend());
    }
  }
  std::vector<Value> out;
  for (auto& p : parts) out.emplace_back(std::move(p));
  return out;
}

// Python str.replace. Stops (returning what it has) as soon as the output passes max_bytes, so
// the caller's size check fails before a huge string is built.
std::string replace_all(const std::string& s, const std::string& old, const std::string& repl, int64_t count,
                        size_t max_bytes) {
  std::string out;
  if (old.empty()) {
    std::u32string cps = utf8_decode(s);
    int64_t n = 0;
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (out.size() > max_bytes) return out;
      if (count < 0 || n < count) {
        out += repl;
        ++n;
      }
      if (i < cps.size()) utf8_append(cps[i], out);
    }
    return out;
  }
  size_t pos = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    if (out.size() > max_bytes) return out;
    size_t f = s.find(old, pos);
    if (f == std::string::npos) break;
    out.append(s, pos, f - pos);
    out += repl;
    pos = f + old.size();
    ++n;
  }
  out.append(s, pos, std::string::npos);
  return out;
}

template <typename F>
Value method(const std::string& name, F f) {
  return Value::callable(name, [f](Interpreter& in, CallArgs& a) -> absl::StatusOr<Value> { return f(in, a); });
}

std::optional<Value> string_method(const std::string& s, const std::string& name) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    bool left = name != "rstrip", right = name != "lstrip";
    return method(name, [s, name, left, right](Interpreter&, CallArgs& a) -> absl::StatusOr<Value> {
      auto b = bind_args(name, a, {"chars"});
      if (!b.ok()) return b.status();
      const auto& c = (*b)[0];
      if (c && !c->is_none() && !c->is_string()) return arg_type(name, "str or None", *c);
      std::string chars = c && c->is_string() ? c->as_string() : "";
      return Value(py_strip(s, c && c->is_string() ? &chars : nullptr, left, right));
    });
  }
  if (name == "startswith" || name == "endswith") {
    bool starts = name == "startswith";
    return method(name, [s, name, starts](Interpreter&, CallArgs& a) -> absl::StatusOr<Value> {
      auto b = bind_args(name, a, {"prefix"});
      if (!b.ok()) return b.status();
      if (!(*b)[0]) return absl::InvalidArgumentError(absl::StrCat(name, "() takes at least 1 argument"));
      std::vector<Value> options = (*b)[0]->is_list() ? (*b)[0]->items() : std::vector<Value>{*(*b)[0]};
      for (const auto& o : options) {
        if (!o.is_string()) return arg_type(name, "str or a tuple of str", o);
        const std::string& p = o.as_string();
        if (p.size() <= s.size() && (starts ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0)) {
          return Value(true);
        }
      }
      return Value(false);
    });
  }
  if (name == "split" || name == "rsplit") {
    bool right = name == "rsplit";
    return method(name, [s, name, right](Interpreter&, CallArgs& a) -> absl::StatusOr<Value> {
      auto b = bind_args(name, a, {"sep", "maxsplit"});
      if (!b.ok()) return b.status();
      const auto& sep = (*b)[0];
      if (sep && !sep->is_none() && !sep->is_string()) return arg_type(name, "str or None", *sep);
      if (sep && sep->is_string() && sep->as_string().empty()) return absl::InvalidArgumentError("empty separator");
      auto maxsplit = int_arg(name, "maxsplit", (*b)[1], -1);
      if (!maxsplit.ok()) return maxsplit.status();
      return Value::list(split(s, sep, *maxsplit, right));
    });
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize" || name == "splitlines" ||
      name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isalnum" || name == "islower" ||
      name == "isupper") {
    return method(name, [s, name](Interpreter&, CallArgs& a) -> absl::StatusOr<Value> {
      auto b = bind_args(name, a, {});
      if (!b.ok()) return b.status();
      if (name == "upper") return Value(py_upper(s));
      if (name == "lower") return Value(py_lower(s));
      if (name == "title") return Value(py_title(s));
      if (name == "capitalize") return Value(py_capitalize(s));
      if (name == "splitlines") {
        std::vector<Value> lines;
        size_t start = 0;
        for (size_t i = 0; i < s.size(); ++i) {
          if (s[i] == '\n' || s[i] == '\r') {
            lines.emplace_back(s.substr(start, i - start));
            if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
            start = i + 1;
          }
        }
        if (start < s.size()) lines.emplace_back(s.substr(start));
        return Value::list(std::move(lines));
      }
      std::u32string cps = utf8_decode(s);
      if (cps.empty()) return Value(false);
      bool has_cased = false;
      for (char32_t cp : cps) {
        bool ok = true;
        if (name == "isdigit") ok = py_isdigit(cp);
        if (name == "isalpha") ok = py_isalpha(cp);
        if (name == "isspace") ok = py_isspace(cp);
        if (name == "isalnum") ok = py_isalpha(cp) || py_isdigit(cp);
        if (name == "islower") ok = !py_isupper(cp);
        if (name == "isupper") ok = !py_islower(cp);
        if (py_iscased(cp)) has_cased = true;
        if (!ok) return Value(false);
      }
      if (name == "islower" || name == "isupper") return Value(has_cased);
      return Value(true);
    });
  }
  if (name == "replace") {
    return method(name, [s](Interpreter& in, CallArgs& a) -> absl::StatusOr<Value> {
      auto b = bind_args("replace", a, {"old", "new", "count"});
      if (!b.ok()) return b.status();
      if (!(*b)[0] || !(*b)[1] || !(*b)[0]->is_string() || !(*b)[1]->is_string()) {
        return absl::InvalidArgumentError("replace() takes two str arguments");
      }
      if ((*b)[2] && !(*b)[2]->is_int() && !(*b)[2]->is_bool()) {
        return absl::InvalidArgumentError("replace() count must be an integer");
      }
      std::string r = replace_all(s, (*b)[0]->as_string(), (*b)[1]->as_string(), (*b)[2] ? (*b)[2]->as_int() : -1,
                                  in.limits().max_output_bytes);
      if (auto st = in.check_size(r.size()); !st.ok()) return st;
      return Value(std::move(r));
    });
  }
  if (name == "find" || name == "rfind" || name == "count" || name == "index" || name == "rindex") {
    return method(name, [s, name](Interpreter&, CallArgs& a) -> absl::StatusOr<Value> {
      auto b = bind_args(name, a, {"sub", "start", "end"});
      if (!b.ok()) return b.status();
      if (!(*b)[0] || !(*b)[0]->is_string()) return absl::InvalidArgumentError(absl::StrCat(name, "() requires a str argument"));
      const std::string& sub = (*b)[0]->as_string();
      int64_t n = static_cast<int64_t>(utf8_length(s));
      auto start = int_arg(name, "start", (*b)[1], 0);
      if (!start.ok()) return start.status();
      auto end = int_arg(name, "end", (*b)[2], n);
      if (!end.ok()) return end.status();
      // Python slice bounds: negative counts from the end; both are clamped to [0, n].
      auto norm = [n](int64_t x) {
        if (x < 0) x = std::max<int64_t>(0, x + n);
        return std::min(x, n);
      };
      size_t lo = cp_to_byte(s, norm(*start));
      size_t hi = cp_to_byte(s, norm(*end));
      std::string window = lo <= hi ? s.substr(lo, hi - lo) : std::string();
      if (name == "count") {
        if (sub.empty()) return Value(static_cast<int64_t>(utf8_length(window)) + 1);
        int64_t c = 0;
        for (size_t p = window.find(sub); p != std::string::npos; p = window.find(sub, p + sub.size())) ++c;
        return Value(c);
      }
      size_t f = (name == "find" || name == "index") ? window.find(sub) : window.rfind(sub);
      if (lo > hi || f == std::string::npos) {
        if (name == "index" || name == "rindex") return absl::InvalidArgumentError("substring not found");
        return Value(int64_t{-1});
      }
      return Value(byte_to_cp(s, lo + f));
    });
  }
  if (name == "join") {
    return method(name, [s](Interpreter& in, CallArgs& a) -> absl::StatusOr<Value> {
      auto b = bind_args("join", a, {"iterable"});
      if (!b.ok()) return b.status();
      if (!(*b)[0]) return absl::InvalidArgumentError("join() takes exactly one argument");
      auto items = iterate(*(*b)[0]);
      if (!items.ok()) return items.status();
      std::string out;
      for (size_t i = 0; i < items->size(); ++i) {
        if (!(*items)[i].is_string()) {
          return absl::InvalidArgumentError(absl::StrCat("sequence item ", i, ": expected str instance, ", (*items)[i].type_name(), " found"));
        }
        if (i) out += s;
        out += (*items)[i].as_string();
        if (auto st = in.check_size(out.size()); !st.ok()) return st;
      }
      return Value(std::move(out));
    });
  }
  if (name == "format") {
    return method(name, [s](Interpreter& in, CallArgs& a) -> absl::StatusOr<Value> {
      auto r = brace_format(s, a, in.limits().max_output_bytes);
      if (!r.ok()) return r.status();
      return Value(std::move(*r));
    });
  }
  if (name == "removeprefix" || name == "removesuffix") {
    bool prefix = name == "removeprefix";
    return method(name, [s, name, prefix](Interpreter&, CallArgs& a) -> absl::StatusOr<Value> {
      auto b = bind_args(name, a, {"affix"});
      if (!b.ok()) return b.status();
      if (!(*b)[0] || !(*b)[0]->is_string()) return absl::InvalidArgumentError(absl::StrCat(name, "() requires a str argument"));
      const std::string& p = (*b)[0]->as_string();
      if (prefix && s.compare(0, p.size(), p) == 0) return Value(s.substr(p.size()));
      if (!prefix && p.size() <= s.size() && s.compare(s.size() - p.size(), p.size(), p) == 0) return Value(s.substr(0, s.size() - p.size()));
      return Value(s);
    });
  }
  return std::nullopt;
}

std::optional<Value> dict_method(const Value& d, const std::string& name) {
  if (name == "get") {
    return method(name, [d](Interpreter&, CallArgs& a) -> absl::StatusOr<Value> {
      auto b = bind_args("get", a, {"key", "default"});
      if (!b.ok()) return b.status();
      if (!(*b)[0]) return absl::InvalidArgumentError("get() expected at least 1 argument");
      if (const Value* v = d.as_dict().find(*(*b)[0])) return *v;
      return (*b)[1] ? *(*b)[1] : Value::none();
    });
  }
  if (name == "items" || name == "keys" || name == "values") {
    return method(name, [d, name](Interpreter&, CallArgs& a) -> absl::StatusOr<Value> {
      auto b = bind_args(name, a, {});
      if (!b.ok()) return b.status();
      std::vector<Value> out;
      for (const auto& [k, v] : d.as_dict().entries) {
        if (name == "items") out.push_back(Value::list({k, v}, true));
        else out.push_back(name == "keys" ? k : v);
      }
      return Value::list(std::move(out));
    });
  }
  return std::nullopt;
}

std::optional<Value> list_method(const Value& l, const std::string& name) {
  if (name == "index" || name == "count") {
    return method(name, [l, name](Interpreter&, CallArgs& a) -> absl::StatusOr<Value> {
      auto b = bind_args(name, a, {"value"});
      if (!b.ok()) return b.status();
      if (!(*b)[0]) return absl::InvalidArgumentError(absl::StrCat(name, "() takes exactly one argument"));
      int64_t count = 0;
      for (size_t i = 0; i < l.items().size(); ++i) {
        if (values_equal(l.items()[i], *(*b)[0])) {
          if (name == "index") return Value(static_cast<int64_t>(i));
          ++count;
        }
      }
      if (name == "index") return absl::InvalidArgumentError(absl::StrCat((*b)[0]->repr(), " is not in list"));
      return Value(count);
    });
  }
  return std::nullopt;
}

}  // namespace

std::optional<Value> find_method(const Value& obj, const std::string& name) {
  if (obj.is_string()) return string_method(obj.as_string(), name);
  if (obj.is_dict()) return dict_method(obj, name);
  if (obj.is_list()) return list_method(obj, name);
  return std::nullopt;
}

}  // namespace weft::jinja
