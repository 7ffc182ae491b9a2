#include "tokenizer/chat_template/lexer.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tokenizer/chat_template/unicode_text.h"

namespace weft::jinja {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Python str.isspace() over the whole (non-empty) text.
bool all_space(std::string_view s) {
  if (s.empty()) return false;
  for (char32_t cp : utf8_decode(s)) {
    if (!py_isspace(cp)) return false;
  }
  return true;
}

std::string rstrip_ws(std::string_view s) { return py_strip(s, nullptr, false, true); }

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  absl::StatusOr<std::vector<Token>> run() {
    size_t pos = 0;
    bool line_starting = true;
    while (pos < src_.size()) {
      size_t tag = find_tag(pos);
      if (tag == std::string::npos) {
        emit_data(src_.substr(pos), pos);
        break;
      }
      char kind = src_[tag + 1];  // '{', '%' or '#'
      char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      std::string text = src_.substr(pos, tag - pos);
      size_t raw_end = 0;
      bool is_raw = kind == '%' && match_raw_begin(tag, &raw_end);
      if (sign == '-') {
        text = rstrip_ws(text);
      } else if (sign != '+' && kind != '{') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting) && all_space(std::string_view(text).substr(l_pos))) {
          text.resize(l_pos);
        }
      }
      emit_data(std::move(text), pos);
      size_t body = tag + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (is_raw) {
        auto end = lex_raw(raw_end);
        if (!end.ok()) return end.status();
        pos = *end;
      } else if (kind == '#') {
        auto end = lex_comment(tag, body);
        if (!end.ok()) return end.status();
        pos = *end;
      } else {
        auto end = lex_tag(tag, body, kind == '%');
        if (!end.ok()) return end.status();
        pos = *end;
      }
      line_starting = pos > 0 && src_[pos - 1] == '\n';
    }
    Token eof{TokenType::kEof, "", 0, 0.0, 0, 0};
    locate(src_.size(), eof);
    tokens_.push_back(eof);
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t pos) const {
    for (size_t i = src_.find('{', pos); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  void locate(size_t offset, Token& t) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    t.line = static_cast<int>(line);
    t.column = static_cast<int>(offset - line_starts_[line - 1] + 1);
  }

  absl::Status error(size_t offset, std::string_view msg) const {
    Token t;
    locate(offset, t);
    return absl::InvalidArgumentError(
        absl::StrCat("chat template syntax error at line ", t.line, ", column ", t.column, ": ", std::string(msg)));
  }

  void emit(TokenType type, std::string value, size_t offset) {
    Token t{type, std::move(value), 0, 0.0, 0, 0};
    locate(offset, t);
    tokens_.push_back(std::move(t));
  }

  void emit_data(std::string text, size_t offset) {
    if (!text.empty()) emit(TokenType::kData, std::move(text), offset);
  }

  // Matches `{%[-+]?\s*raw\s*(-%}\s*|%})` at `tag`; sets *end past it.
  bool match_raw_begin(size_t tag, size_t* end) const {
    size_t p = tag + 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    while (p < src_.size() && is_ws(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    while (p < src_.size() && is_ws(src_[p])) ++p;
    if (src_.compare(p, 3, "-%}") == 0) {
      p += 3;
      while (p < src_.size() && is_ws(src_[p])) ++p;
    } else if (src_.compare(p, 2, "%}") == 0) {
      p += 2;
    } else {
      return false;
    }
    *end = p;
    return true;
  }

  // Consumes a block end at p ("+%}", "-%}\s*", or "%}\n?"); returns its end or npos.
  size_t match_block_end(size_t p) const {
    if (src_.compare(p, 3, "+%}") == 0) return p + 3;
    if (src_.compare(p, 3, "-%}") == 0) {
      p += 3;
      while (p < src_.size() && is_ws(src_[p])) ++p;
      return p;
    }
    if (src_.compare(p, 2, "%}") == 0) {
      p += 2;
      if (p < src_.size() && src_[p] == '\n') ++p;  // trim_blocks
      return p;
    }
    return std::string::npos;
  }

  absl::StatusOr<size_t> lex_raw(size_t start) {
    for (size_t p = src_.find("{%", start); p != std::string::npos; p = src_.find("{%", p + 1)) {
      size_t q = p + 2;
      char sign = q < src_.size() ? src_[q] : '\0';
      if (sign == '-' || sign == '+') ++q;
      while (q < src_.size() && is_ws(src_[q])) ++q;
      if (src_.compare(q, 6, "endraw") != 0) continue;
      q += 6;
      while (q < src_.size() && is_ws(src_[q])) ++q;
      size_t end = match_block_end(q);
      if (end == std::string::npos) continue;
      std::string text = src_.substr(start, p - start);
      if (sign == '-') {
        text = rstrip_ws(text);
      } else if (sign != '+') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if (l_pos > 0 && all_space(std::string_view(text).substr(l_pos))) text.resize(l_pos);
      }
      emit_data(std::move(text), start);
      return end;
    }
    return error(start, "missing end of raw directive ({% endraw %})");
  }

  absl::StatusOr<size_t> lex_comment(size_t tag, size_t body) {
    size_t q = src_.find("#}", body);
    if (q == std::string::npos) return error(tag, "missing end of comment tag '#}'");
    if (q > body && src_[q - 1] == '+') return q + 2;
    if (q > body && src_[q - 1] == '-') {
      size_t p = q + 2;
      while (p < src_.size() && is_ws(src_[p])) ++p;
      return p;
    }
    size_t p = q + 2;
    if (p < src_.size() && src_[p] == '\n') ++p;  // trim_blocks applies to comments too
    return p;
  }

  absl::StatusOr<size_t> lex_tag(size_t tag, size_t pos, bool block) {
    emit(block ? TokenType::kBlockBegin : TokenType::kVariableBegin, "", tag);
    std::vector<char> balance;
    while (true) {
      if (pos >= src_.size()) {
        return error(tag, block ? "unexpected end of template, expected end of block '%}'"
                                : "unexpected end of template, expected end of print statement '}}'");
      }
      if (balance.empty()) {
        size_t end = std::string::npos;
        if (block) {
          end = match_block_end(pos);
        } else if (src_.compare(pos, 3, "-}}") == 0) {
          end = pos + 3;
          while (end < src_.size() && is_ws(src_[end])) ++end;
        } else if (src_.compare(pos, 2, "}}") == 0) {
          end = pos + 2;
        }
        if (end != std::string::npos) {
          emit(block ? TokenType::kBlockEnd : TokenType::kVariableEnd, "", pos);
          return end;
        }
      }
      char c = src_[pos];
      if (is_ws(c)) {
        ++pos;
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c))) {
        auto r = lex_number(pos);
        if (!r.ok()) return r.status();
        pos = *r;
        continue;
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t e = pos;
        while (e < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
        emit(TokenType::kName, src_.substr(pos, e - pos), pos);
        pos = e;
        continue;
      }
      if (c == '\'' || c == '"') {
        auto r = lex_string(pos);
        if (!r.ok()) return r.status();
        pos = *r;
        continue;
      }
      static constexpr std::string_view kTwo[] = {"**", "//", "==", "!=", ">=", "<="};
      std::string op;
      for (auto two : kTwo) {
        if (src_.compare(pos, 2, two) == 0) op = std::string(two);
      }
      if (op.empty() && std::string_view("+-/*%~[](){}<>=.:|,;").find(c) != std::string_view::npos) {
        op = std::string(1, c);
      }
      if (op.empty()) return error(pos, absl::StrCat("unexpected character '", std::string(1, c), "'"));
      if (op == "(" || op == "[" || op == "{") {
        balance.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
      } else if (op == ")" || op == "]" || op == "}") {
        if (balance.empty()) return error(pos, absl::StrCat("unexpected '", op, "'"));
        if (balance.back() != op[0]) {
          return error(pos, absl::StrCat("unexpected '", op, "', expected '", std::string(1, balance.back()), "'"));
        }
        balance.pop_back();
      }
      emit(TokenType::kOperator, op, pos);
      pos += op.size();
    }
  }

  absl::StatusOr<size_t> lex_number(size_t pos) {
    auto digits = [&](size_t p) {
      size_t s = p;
      while (p < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[p])) ||
                                 (src_[p] == '_' && p > s && p + 1 < src_.size() &&
                                  std::isdigit(static_cast<unsigned char>(src_[p + 1]))))) {
        ++p;
      }
      return p;
    };
    size_t e = digits(pos);
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' && std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      e = digits(e + 1);
      is_float = true;
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t p = e + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
      if (p < src_.size() && std::isdigit(static_cast<unsigned char>(src_[p]))) {
        e = digits(p);
        is_float = true;
      }
    }
    std::string text;
    for (size_t i = pos; i < e; ++i) {
      if (src_[i] != '_') text.push_back(src_[i]);
    }
    Token t{is_float ? TokenType::kFloat : TokenType::kInteger, src_.substr(pos, e - pos), 0, 0.0, 0, 0};
    locate(pos, t);
    if (is_float) {
      t.float_value = std::strtod(text.c_str(), nullptr);
    } else {
      errno = 0;
      t.int_value = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE) return error(pos, "integer literal out of range");
    }
    tokens_.push_back(std::move(t));
    return e;
  }

  // Parses a quoted literal and applies Python's unicode-escape decoding (what jinja2 does).
  absl::StatusOr<size_t> lex_string(size_t pos) {
    char quote = src_[pos];
    std::string out;
    size_t p = pos + 1;
    auto hex = [&](size_t at, int n, uint32_t* v) {
      if (at + n > src_.size()) return false;
      *v = 0;
      for (int i = 0; i < n; ++i) {
        char h = src_[at + i];
        if (!std::isxdigit(static_cast<unsigned char>(h))) return false;
        *v = *v * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
      }
      return true;
    };
    while (true) {
      if (p >= src_.size()) return error(pos, "unterminated string literal");
      char c = src_[p];
      if (c == quote) break;
      if (c != '\\') {
        out.push_back(c);
        ++p;
        continue;
      }
      if (p + 1 >= src_.size()) return error(pos, "unterminated string literal");
      char e = src_[p + 1];
      p += 2;
      switch (e) {
        case '\n': break;
        case '\\': out.push_back('\\'); break;
        case '\'': out.push_back('\''); break;
        case '"': out.push_back('"'); break;
        case 'a': out.push_back('\a'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'v': out.push_back('\v'); break;
        case 'x': case 'u': case 'U': {
          int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t v = 0;
          if (!hex(p, n, &v) || v > 0x10FFFF) return error(p - 2, absl::StrCat("invalid \\", std::string(1, e), " escape in string literal"));
          utf8_append(static_cast<char32_t>(v), out);
          p += n;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t v = static_cast<uint32_t>(e - '0');
            for (int i = 0; i < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++i, ++p) {
              v = v * 8 + static_cast<uint32_t>(src_[p] - '0');
            }
            utf8_append(static_cast<char32_t>(v), out);
          } else {
            out.push_back('\\');
            out.push_back(e);
          }
      }
    }
    emit(TokenType::kString, std::move(out), pos);
    return p + 1;
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

// jinja2 splits on \r\n, \r and \n, joins with \n, and drops one trailing newline.
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

absl::StatusOr<std::vector<Token>> tokenize(std::string_view source) {
  Lexer lexer(normalize_newlines(source));
  return lexer.run();
}

std::string describe_token(const Token& t) {
  switch (t.type) {
    case TokenType::kData: return "template data";
    case TokenType::kVariableBegin: return "begin of print statement '{{'";
    case TokenType::kVariableEnd: return "end of print statement '}}'";
    case TokenType::kBlockBegin: return "begin of statement block '{%'";
    case TokenType::kBlockEnd: return "end of statement block '%}'";
    case TokenType::kEof: return "end of template";
    case TokenType::kString: return "string literal";
    default: return absl::StrCat("'", t.value, "'");
  }
}

}  // namespace weft::jinja
