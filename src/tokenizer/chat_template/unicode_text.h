// UTF-8 helpers with Python str semantics: code-point indexing, str.isspace(), case mapping.
// Invalid UTF-8 bytes decode to U+FFFD.
#pragma once

#include <string>
#include <string_view>

namespace weft::jinja {

std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);
void utf8_append(char32_t cp, std::string& out);
// Number of code points (Python len(str)).
size_t utf8_length(std::string_view s);
bool is_ascii(std::string_view s);

// Python str.isspace() for one code point.
bool py_isspace(char32_t cp);
// Letters that have case (Python's "cased" characters, for title()).
bool py_iscased(char32_t cp);
bool py_isalpha(char32_t cp);
bool py_isdigit(char32_t cp);
bool py_islower(char32_t cp);
bool py_isupper(char32_t cp);

std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
// str.title(): upper-cases the first cased character after an uncased one, lower-cases the rest.
std::string py_title(std::string_view s);
// str.capitalize(): first character title-cased, the rest lower-cased.
std::string py_capitalize(std::string_view s);

// str.strip/lstrip/rstrip; `chars` null means whitespace.
std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right);

}  // namespace weft::jinja
