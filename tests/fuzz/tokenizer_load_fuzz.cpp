// Fuzzes Tokenizer::load on an arbitrary tokenizer.json and tokenizer_config.json: the input is
// tokenizer.json, optionally followed by a NUL byte and tokenizer_config.json. A tokenizer that
// loads then encodes and decodes a few fixed inputs. Properties: no crash, every encoded id is
// below vocab_size().
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path dir = weft::fuzz::scratch_dir() / "tokenizer";
  static const bool made = std::filesystem::create_directories(dir);
  (void)made;
  const auto parts = weft::fuzz::split_at(
      std::string_view(reinterpret_cast<const char*>(data), size), std::string_view("\0", 1));
  weft::fuzz::write_file(dir / "tokenizer.json", parts.first);
  if (parts.found) {
    weft::fuzz::write_file(dir / "tokenizer_config.json", parts.second);
  } else {
    weft::fuzz::remove_file(dir / "tokenizer_config.json");
  }
  auto tokenizer = weft::Tokenizer::load(dir);
  if (!tokenizer.ok()) return 0;
  const weft::Tokenizer& tok = **tokenizer;
  for (const char* text : {"", "Hello world", " a  b\n\tc", "<s>[INST] x [/INST]", "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80 12345"}) {
    for (bool special : {false, true}) {
      auto ids = tok.encode(text, special);
      if (!ids.ok()) continue;
      for (int32_t id : *ids) WEFT_FUZZ_CHECK(id >= 0 && id < tok.vocab_size());
      (void)tok.decode(*ids, false);
      (void)tok.decode(*ids, true);
    }
  }
  std::vector<int32_t> ids;
  for (int32_t id = -2; id < 70; ++id) ids.push_back(id);
  ids.push_back(tok.vocab_size());
  ids.push_back(INT32_MAX);
  (void)tok.decode(ids, false);
  (void)tok.decode(ids, true);
  for (int32_t id : ids) {
    (void)tok.id_to_token(id);
    (void)tok.is_special(id);
    (void)tok.is_fallback_byte(id);
  }
  (void)tok.bos_id();
  (void)tok.eos_id();
  return 0;
}
