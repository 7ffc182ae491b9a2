// GPT-2 byte-level alphabet: each of the 256 byte values maps to one printable code point
// ("bytes_to_unicode"), so byte-level BPE vocabularies are plain strings.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace weft::byte_level {

// UTF-8 encoding of the code point byte `b` maps to.
const std::array<std::string, 256>& byte_to_utf8();

// The byte that code point `cp` stands for, or -1 when `cp` is not in the alphabet.
int code_point_to_byte(char32_t cp);

// Maps every byte of `bytes` to its alphabet code point (UTF-8 encoded) and appends to `out`.
void encode_bytes(std::string_view bytes, std::string& out);

// Inverse of encode_bytes for one token: appends the bytes its code points stand for. Returns
// false (appending nothing) when some code point is outside the alphabet.
bool decode_token(std::string_view token, std::string& out);

}  // namespace weft::byte_level
