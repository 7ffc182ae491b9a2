// Fuzzes encode / decode / streaming decode of arbitrary input with the real tokenizers of
// tests/tokenizer_data/fixtures (qwen3, llama2, deepseek_v3). Input byte 0 picks the tokenizer
// (bits 0-1) and the mode: bit 2 add_special_tokens / skip_special_tokens, bit 3 decode (the
// rest is little-endian int32 ids, folded to a little past vocab_size() so unknown ids occur)
// instead of encode (the rest is the text). Properties: encode gives ids below vocab_size();
// decode output is valid UTF-8; the streaming detokenizer's deltas add up to decode() (its
// documented contract).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

std::vector<std::shared_ptr<const weft::Tokenizer>>& tokenizers() {
  static std::vector<std::shared_ptr<const weft::Tokenizer>> loaded;
  return loaded;
}

std::filesystem::path source_dir() {
  if (const char* env = std::getenv("WEFT_SOURCE_DIR")) return env;
  return WEFT_SOURCE_DIR;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (const char* name : {"qwen3", "llama2", "deepseek_v3"}) {
    const auto dir = source_dir() / "tests/tokenizer_data/fixtures" / name;
    auto tok = weft::Tokenizer::load(dir);
    if (!tok.ok()) {
      std::fprintf(stderr, "cannot load %s: %s\n", dir.c_str(),
                   std::string(tok.status().message()).c_str());
      std::abort();
    }
    tokenizers().push_back(std::move(*tok));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const auto& tok = tokenizers()[(mode & 3) % tokenizers().size()];
  const bool special = (mode & 4) != 0;
  const bool decode_mode = (mode & 8) != 0;
  ++data;
  --size;

  std::vector<int32_t> ids;
  if (decode_mode) {
    const uint32_t fold = static_cast<uint32_t>(tok->vocab_size()) + 8;
    for (size_t i = 0; i + 4 <= size; i += 4) {
      uint32_t raw;
      std::memcpy(&raw, data + i, 4);
      // Mostly valid ids; a set top bit keeps the raw value (negative or huge).
      ids.push_back(raw & 0x80000000u ? static_cast<int32_t>(raw)
                                      : static_cast<int32_t>(raw % fold));
    }
  } else {
    auto encoded = tok->encode(std::string_view(reinterpret_cast<const char*>(data), size), special);
    if (!encoded.ok()) return 0;
    for (int32_t id : *encoded) WEFT_FUZZ_CHECK(id >= 0 && id < tok->vocab_size());
    ids = std::move(*encoded);
  }

  const std::string text = tok->decode(ids, special);
  WEFT_FUZZ_CHECK(weft::utf8::is_valid(text));
  weft::StreamingDetokenizer stream(tok, special);
  std::string streamed;
  for (int32_t id : ids) streamed += stream.push(id);
  streamed += stream.finish();
  WEFT_FUZZ_CHECK(streamed == text);
  return 0;
}
