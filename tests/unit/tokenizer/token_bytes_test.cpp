// Tokenizer::token_bytes (the decoder chain's per-token bytes) and token_encoding on the
// fixture tokenizers: concatenated token bytes are what decode() prints wherever that is valid
// UTF-8, after a leading "a" so the text-start rules (Strip, Metaspace's prefix) are out of play.
#include <string>
#include <vector>

#include "fixture_util.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

class TokenBytes : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenBytes, ConcatenateToDecode) {
  auto tok = testing::fixture_tokenizer(GetParam());
  ASSERT_TRUE(tok);
  auto lead = tok->encode("a", /*add_special_tokens=*/false);
  ASSERT_TRUE(lead.ok() && lead->size() == 1u);
  uint64_t s = 12345;
  int checked = 0;
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<int32_t> ids = *lead;
    std::string expected = "a";
    for (int k = 0; k < 5; ++k) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      const int32_t id = static_cast<int32_t>((s >> 33) % tok->vocab_size());
      auto bytes = tok->token_bytes(id);
      if (!bytes || tok->is_special(id)) continue;
      ids.push_back(id);
      expected += *bytes;
    }
    const std::string decoded = tok->decode(ids, /*skip_special_tokens=*/false);
    if (decoded.find("\xEF\xBF\xBD") != std::string::npos) continue;  // bytes were repaired
    EXPECT_EQ(decoded, expected);
    ++checked;
  }
  EXPECT_GT(checked, 150);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenBytes, ::testing::Values("qwen3", "llama2", "deepseek_v3"));

TEST(TokenBytesOf, EncodingsAndRawBytes) {
  auto qwen = testing::fixture_tokenizer("qwen3");
  auto llama = testing::fixture_tokenizer("llama2");
  ASSERT_TRUE(qwen && llama);
  EXPECT_EQ(qwen->token_encoding(), TokenEncoding::kByteLevel);
  EXPECT_EQ(llama->token_encoding(), TokenEncoding::kByteFallback);
  EXPECT_EQ(qwen->token_bytes(*qwen->token_to_id("\xC4\xA0the")), " the");        // "Ġthe"
  EXPECT_EQ(llama->token_bytes(*llama->token_to_id("\xE2\x96\x81the")), " the");  // "▁the"
  // A byte token is one raw byte, not U+FFFD.
  EXPECT_EQ(llama->token_bytes(*llama->token_to_id("<0xE2>")), std::string("\xE2"));
  EXPECT_FALSE(qwen->token_bytes(qwen->vocab_size()).has_value());
}

}  // namespace
}  // namespace weft
