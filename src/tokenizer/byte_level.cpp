#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace weft::byte_level {
namespace {

struct Tables {
  std::array<std::string, 256> to_utf8;
  std::array<char32_t, 256> to_cp;
  std::array<int, 512> from_cp;  // every alphabet code point is below 324

  Tables() {
    from_cp.fill(-1);
    char32_t extra = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      to_cp[b] = printable ? static_cast<char32_t>(b) : extra++;
    }
    for (int b = 0; b < 256; ++b) {
      utf8::append_code_point(to_utf8[b], to_cp[b]);
      from_cp[to_cp[b]] = b;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::array<std::string, 256>& byte_to_utf8() { return tables().to_utf8; }

int code_point_to_byte(char32_t cp) { return cp < 512 ? tables().from_cp[cp] : -1; }

void encode_bytes(std::string_view bytes, std::string& out) {
  const auto& t = tables().to_utf8;
  for (const char c : bytes) out.append(t[static_cast<unsigned char>(c)]);
}

bool decode_token(std::string_view token, std::string& out) {
  const size_t start = out.size();
  size_t pos = 0;
  while (pos < token.size()) {
    const int b = code_point_to_byte(utf8::next_code_point(token, pos));
    if (b < 0) {
      out.resize(start);
      return false;
    }
    out.push_back(static_cast<char>(b));
  }
  return true;
}

}  // namespace weft::byte_level
