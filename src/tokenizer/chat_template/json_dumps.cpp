#include "tokenizer/chat_template/json_dumps.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tokenizer/chat_template/unicode_text.h"

namespace weft::jinja {
namespace {

void append_u_escape(std::string& out, uint32_t unit) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "\\u%04x", unit);
  out += buf;
}

void dump_string(const std::string& s, bool ensure_ascii, std::string& out) {
  out += '"';
  if (!ensure_ascii) {
    for (unsigned char c : s) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20) {
            append_u_escape(out, c);
          } else {
            out += static_cast<char>(c);
          }
      }
    }
  } else {
    for (char32_t cp : utf8_decode(s)) {
      switch (cp) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (cp >= 0x20 && cp < 0x7f) {
            out += static_cast<char>(cp);
          } else if (cp > 0xFFFF) {
            uint32_t v = cp - 0x10000;
            append_u_escape(out, 0xD800 + (v >> 10));
            append_u_escape(out, 0xDC00 + (v & 0x3FF));
          } else {
            append_u_escape(out, cp);
          }
      }
    }
  }
  out += '"';
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return python_float_repr(d);
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {
    item_sep_ = o.item_separator ? *o.item_separator : (o.indent ? "," : ", ");
  }

  absl::Status dump(const Value& v, int depth, std::string& out) {
    if (depth > 512) return absl::InvalidArgumentError("tojson: value nested too deeply");
    switch (v.kind()) {
      case Value::Kind::kNone: out += "null"; return absl::OkStatus();
      case Value::Kind::kBool: out += v.as_bool() ? "true" : "false"; return absl::OkStatus();
      case Value::Kind::kInt: out += std::to_string(v.as_int()); return absl::OkStatus();
      case Value::Kind::kFloat: out += float_json(v.as_float()); return absl::OkStatus();
      case Value::Kind::kString: dump_string(v.as_string(), o_.ensure_ascii, out); return absl::OkStatus();
      case Value::Kind::kList: {
        const auto& items = v.items();
        if (items.empty()) {
          out += "[]";
          return absl::OkStatus();
        }
        out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (out.size() > o_.max_bytes) return too_long();
          if (i) out += item_sep_;
          newline(depth + 1, out);
          if (auto s = dump(items[i], depth + 1, out); !s.ok()) return s;
        }
        newline(depth, out);
        out += ']';
        return absl::OkStatus();
      }
      case Value::Kind::kDict: {
        std::vector<const std::pair<Value, Value>*> entries;
        for (const auto& e : v.as_dict().entries) entries.push_back(&e);
        if (entries.empty()) {
          out += "{}";
          return absl::OkStatus();
        }
        std::vector<std::string> keys;
        for (const auto* e : entries) {
          auto k = key_string(e->first);
          if (!k.ok()) return k.status();
          keys.push_back(*k);
        }
        std::vector<size_t> order(entries.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        if (o_.sort_keys) {
          std::stable_sort(order.begin(), order.end(),
                           [&](size_t a, size_t b) { return keys[a] < keys[b]; });
        }
        out += '{';
        bool first = true;
        for (size_t i : order) {
          if (out.size() > o_.max_bytes) return too_long();
          if (!first) out += item_sep_;
          first = false;
          newline(depth + 1, out);
          dump_string(keys[i], o_.ensure_ascii, out);
          out += o_.key_separator;
          if (auto s = dump(entries[i]->second, depth + 1, out); !s.ok()) return s;
        }
        newline(depth, out);
        out += '}';
        return absl::OkStatus();
      }
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("Object of type ", v.type_name(), " is not JSON serializable"));
    }
  }

 private:
  absl::Status too_long() const {
    return absl::ResourceExhaustedError(absl::StrCat("tojson: output longer than the limit of ", o_.max_bytes, " bytes"));
  }

  void newline(int depth, std::string& out) const {
    if (!o_.indent) return;
    out += '\n';
    for (int i = 0; i < depth; ++i) out += *o_.indent;
  }

  static absl::StatusOr<std::string> key_string(const Value& k) {
    switch (k.kind()) {
      case Value::Kind::kString: return k.as_string();
      case Value::Kind::kBool: return std::string(k.as_bool() ? "true" : "false");
      case Value::Kind::kNone: return std::string("null");
      case Value::Kind::kInt: return std::to_string(k.as_int());
      case Value::Kind::kFloat: return float_json(k.as_float());
      default:
        return absl::InvalidArgumentError(absl::StrCat(
            "keys must be str, int, float, bool or None, not ", k.type_name()));
    }
  }

  const JsonDumpOptions& o_;
  std::string item_sep_;
};

}  // namespace

absl::StatusOr<std::string> json_dumps(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  Dumper d(options);
  if (auto s = d.dump(v, 0, out); !s.ok()) return s;
  return out;
}

}  // namespace weft::jinja
