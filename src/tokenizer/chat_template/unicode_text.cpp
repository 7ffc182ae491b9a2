#include "tokenizer/chat_template/unicode_text.h"

#include <utf8proc.h>

namespace weft::jinja {

std::u32string utf8_decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                          static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
    if (n <= 0) {
      out.push_back(0xFFFD);
      i += 1;
    } else {
      out.push_back(static_cast<char32_t>(cp));
      i += static_cast<size_t>(n);
    }
  }
  return out;
}

void utf8_append(char32_t cp, std::string& out) {
  utf8proc_uint8_t buf[4];
  utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

std::string utf8_encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) utf8_append(cp, out);
  return out;
}

size_t utf8_length(std::string_view s) {
  if (is_ascii(s)) return s.size();
  return utf8_decode(s).size();
}

bool is_ascii(std::string_view s) {
  for (unsigned char c : s) {
    if (c >= 0x80) return false;
  }
  return true;
}

bool py_isspace(char32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x1C: case 0x1D: case 0x1E:
    case 0x1F: case 0x20: case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool py_iscased(char32_t cp) {
  auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT;
}

bool py_isalpha(char32_t cp) {
  auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}

bool py_isdigit(char32_t cp) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_ND;
}

bool py_islower(char32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_LL; }
bool py_isupper(char32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_LU; }

static char32_t to_upper(char32_t cp) { return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(cp))); }
static char32_t to_lower(char32_t cp) { return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))); }
static char32_t to_title(char32_t cp) { return static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(cp))); }

// Unconditional multi-character mappings of Unicode SpecialCasing.txt that Python applies.
static const char* special_upper(char32_t cp) {
  switch (cp) {
    case 0x00DF: return "SS";
    case 0x0149: return "\u02BCN";
    case 0x01F0: return "J\u030C";
    case 0x0390: return "\u0399\u0308\u0301";
    case 0x03B0: return "\u03A5\u0308\u0301";
    case 0x0587: return "\u0535\u0552";
    case 0x1E96: return "H\u0331";
    case 0x1E97: return "T\u0308";
    case 0x1E98: return "W\u030A";
    case 0x1E99: return "Y\u030A";
    case 0x1E9A: return "A\u02BE";
    case 0xFB00: return "FF";
    case 0xFB01: return "FI";
    case 0xFB02: return "FL";
    case 0xFB03: return "FFI";
    case 0xFB04: return "FFL";
    case 0xFB05: return "ST";
    case 0xFB06: return "ST";
    default: return nullptr;
  }
}

static const char* special_title(char32_t cp) {
  switch (cp) {
    case 0x00DF: return "Ss";
    case 0xFB00: return "Ff";
    case 0xFB01: return "Fi";
    case 0xFB02: return "Fl";
    case 0xFB03: return "Ffi";
    case 0xFB04: return "Ffl";
    case 0xFB05: return "St";
    case 0xFB06: return "St";
    default: return nullptr;
  }
}

static void append_upper(char32_t cp, std::string& out) {
  if (const char* sp = special_upper(cp)) {
    out += sp;
  } else {
    utf8_append(to_upper(cp), out);
  }
}

static void append_title(char32_t cp, std::string& out) {
  if (const char* sp = special_title(cp)) {
    out += sp;
  } else if (const char* up = special_upper(cp)) {
    out += up;
  } else {
    utf8_append(to_title(cp), out);
  }
}

// Python's lower(): U+0130 becomes "i" + combining dot, and capital sigma becomes final sigma
// at the end of a word (preceded by a cased letter, not followed by one).
static std::string lower_cps(const std::u32string& cps, size_t begin) {
  std::string out;
  for (size_t i = begin; i < cps.size(); ++i) {
    char32_t cp = cps[i];
    if (cp == 0x0130) {
      out += "i\u0307";
    } else if (cp == 0x03A3) {
      bool before = i > 0 && py_iscased(cps[i - 1]);
      bool after = i + 1 < cps.size() && py_iscased(cps[i + 1]);
      utf8_append(before && !after ? 0x03C2 : 0x03C3, out);
    } else {
      utf8_append(to_lower(cp), out);
    }
  }
  return out;
}

std::string py_upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : utf8_decode(s)) append_upper(cp, out);
  return out;
}

std::string py_lower(std::string_view s) { return lower_cps(utf8_decode(s), 0); }

std::string py_title(std::string_view s) {
  std::u32string cps = utf8_decode(s);
  std::string out;
  bool prev_cased = false;
  for (size_t i = 0; i < cps.size(); ++i) {
    char32_t cp = cps[i];
    if (py_iscased(cp)) {
      if (prev_cased) {
        out += lower_cps(std::u32string(1, cp), 0);
      } else {
        append_title(cp, out);
      }
      prev_cased = true;
    } else {
      utf8_append(cp, out);
      prev_cased = false;
    }
  }
  return out;
}

std::string py_capitalize(std::string_view s) {
  std::u32string cps = utf8_decode(s);
  if (cps.empty()) return "";
  std::string out;
  append_title(cps[0], out);
  return out + lower_cps(cps, 1);
}

std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::u32string cps = utf8_decode(s);
  std::u32string set;
  if (chars) set = utf8_decode(*chars);
  auto strip_it = [&](char32_t cp) {
    return chars ? set.find(cp) != std::u32string::npos : py_isspace(cp);
  };
  size_t b = 0, e = cps.size();
  if (left) {
    while (b < e && strip_it(cps[b])) ++b;
  }
  if (right) {
    while (e > b && strip_it(cps[e - 1])) --e;
  }
  return utf8_encode(std::u32string_view(cps).substr(b, e - b));
}

}  // namespace weft::jinja
