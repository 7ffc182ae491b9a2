// GrammarVocabulary from real tokenizers: per-token bytes as weft's decoder produces them (and
// as xgrammar's own decoder reads the tokenizer.json strings), model vocab sizes that differ from
// the tokenizer's, stop ids, and never-allowed special tokens.
#include "constrain/grammar_vocabulary.h"

#include <string>
#include <vector>

#include "constrain_test_util.h"
#include "gtest/gtest.h"
#include "xgrammar/xgrammar.h"

namespace weft {
namespace {

using testing::load_tokenizer;

xgrammar::VocabType xgrammar_type(TokenEncoding e) {
  switch (e) {
    case TokenEncoding::kByteLevel:
      return xgrammar::VocabType::BYTE_LEVEL;
    case TokenEncoding::kByteFallback:
      return xgrammar::VocabType::BYTE_FALLBACK;
    case TokenEncoding::kRaw:
      break;
  }
  return xgrammar::VocabType::RAW;
}

class VocabularyPerTokenizer : public ::testing::TestWithParam<std::string> {};

// weft's per-token bytes agree with xgrammar's own decoding of the tokenizer.json strings
// (TokenizerInfo with the vocab type weft detected) for every id that is not an added token.
TEST_P(VocabularyPerTokenizer, TokenBytesMatchXgrammarDecoding) {
  auto tok = load_tokenizer(GetParam());
  ASSERT_TRUE(tok);
  std::vector<std::string> encoded(tok->vocab_size());
  for (int32_t id = 0; id < tok->vocab_size(); ++id) {
    if (auto s = tok->id_to_token(id)) encoded[id] = *s;
  }
  xgrammar::TokenizerInfo info(encoded, xgrammar_type(tok->token_encoding()));
  auto vocab = GrammarVocabulary::from_tokenizer(*tok);
  ASSERT_TRUE(vocab.ok()) << vocab.status();
  int compared = 0;
  for (int32_t id = 0; id < tok->vocab_size(); ++id) {
    if (tok->is_special(id) || (*vocab)->is_stop_token(id) || encoded[id].empty()) continue;
    // Added non-special tokens are text as written; xgrammar would byte-level-decode them.
    if (tok->token_to_id(encoded[id]) != id) continue;
    ASSERT_EQ((*vocab)->token_bytes(id), info.GetDecodedVocab()[id]) << "id " << id;
    ++compared;
  }
  EXPECT_GT(compared, tok->vocab_size() * 9 / 10);
}

// Concatenated token bytes are what Tokenizer::decode prints (where that is valid UTF-8),
// after a leading "a" so the decoder's start-of-text rules (Strip, Metaspace) do not apply.
TEST_P(VocabularyPerTokenizer, TokenBytesConcatenateToDecode) {
  auto tok = load_tokenizer(GetParam());
  ASSERT_TRUE(tok);
  auto vocab = GrammarVocabulary::from_tokenizer(*tok);
  ASSERT_TRUE(vocab.ok()) << vocab.status();
  const std::vector<int32_t> lead = testing::encode(*tok, "a");
  ASSERT_EQ(lead.size(), 1u);
  testing::FastRng rng(7);
  int checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<int32_t> ids = lead;
    std::string expected = "a";
    for (int k = 0; k < 6; ++k) {
      const int32_t id = static_cast<int32_t>(rng.next() % tok->vocab_size());
      if (!(*vocab)->may_be_allowed(id) || (*vocab)->is_stop_token(id)) continue;
      ids.push_back(id);
      expected.append((*vocab)->token_bytes(id));
    }
    const std::string decoded = tok->decode(ids, /*skip_special_tokens=*/false);
    if (decoded.find("\xEF\xBF\xBD") != std::string::npos) continue;  // U+FFFD: bytes repaired
    EXPECT_EQ(decoded, expected);
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, VocabularyPerTokenizer,
                         ::testing::Values("default-model", "qwen3", "llama2", "deepseek_v3"));

TEST(GrammarVocabulary, EncodingsAndStopIds) {
  auto qwen = load_tokenizer("qwen3");
  auto llama = load_tokenizer("llama2");
  ASSERT_TRUE(qwen && llama);
  EXPECT_EQ(qwen->token_encoding(), TokenEncoding::kByteLevel);
  EXPECT_EQ(llama->token_encoding(), TokenEncoding::kByteFallback);
  auto vocab = GrammarVocabulary::from_tokenizer(*llama);
  ASSERT_TRUE(vocab.ok()) << vocab.status();
  EXPECT_EQ((*vocab)->stop_token_ids(), std::vector<int32_t>{*llama->eos_id()});
  EXPECT_EQ((*vocab)->encoding(), TokenEncoding::kByteFallback);
  // "<0xE2>" is one raw byte; "▁the" starts with a space.
  EXPECT_EQ((*vocab)->token_bytes(*llama->token_to_id("<0xE2>")), "\xE2");
  EXPECT_EQ((*vocab)->token_bytes(*llama->token_to_id("\xE2\x96\x81the")), " the");
  EXPECT_EQ(llama->token_bytes(*llama->token_to_id("<0xE2>")), std::string("\xE2"));
}

TEST(GrammarVocabulary, SpecialTokensAreNeverAllowed) {
  auto tok = load_tokenizer("qwen3");
  ASSERT_TRUE(tok);
  auto vocab = GrammarVocabulary::from_tokenizer(*tok);
  ASSERT_TRUE(vocab.ok()) << vocab.status();
  const int32_t im_start = *tok->token_to_id("<|im_start|>");
  const int32_t im_end = *tok->token_to_id("<|im_end|>");  // qwen3's eos_token
  EXPECT_FALSE((*vocab)->may_be_allowed(im_start));
  EXPECT_TRUE((*vocab)->is_stop_token(im_end));
  // <think> is an added token that is not special: plain text.
  const int32_t think = *tok->token_to_id("<think>");
  EXPECT_EQ((*vocab)->token_bytes(think), "<think>");
}

TEST(GrammarVocabulary, ModelVocabSizeAboveAndBelowTheTokenizers) {
  auto tok = load_tokenizer("default-model");
  ASSERT_TRUE(tok);
  GrammarVocabularyOptions padded;
  padded.model_vocab_size = tok->vocab_size() + 100;
  auto big = GrammarVocabulary::from_tokenizer(*tok, padded);
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ((*big)->vocab_size(), tok->vocab_size() + 100);
  EXPECT_FALSE((*big)->may_be_allowed(tok->vocab_size() + 50));

  GrammarVocabularyOptions cut;
  cut.model_vocab_size = tok->vocab_size() - 10;
  auto small = GrammarVocabulary::from_tokenizer(*tok, cut);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ((*small)->vocab_size(), tok->vocab_size() - 10);

  GrammarVocabularyOptions bad_stop;
  bad_stop.stop_token_ids = {tok->vocab_size() + 5};
  auto refused = GrammarVocabulary::from_tokenizer(*tok, bad_stop);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("stop token id"), std::string::npos)
      << refused.status();

  GrammarVocabularyOptions several;
  several.stop_token_ids = {3, 0, 3};
  auto multi = GrammarVocabulary::from_tokenizer(*tok, several);
  ASSERT_TRUE(multi.ok()) << multi.status();
  EXPECT_EQ((*multi)->stop_token_ids(), (std::vector<int32_t>{0, 3}));
}

TEST(GrammarVocabulary, NoStopTokenIsAnError) {
  auto vocab = GrammarVocabulary::from_token_bytes({"a", "b"}, TokenEncoding::kRaw, 2, {});
  ASSERT_FALSE(vocab.ok());
  EXPECT_NE(vocab.status().message().find("no stop token"), std::string::npos) << vocab.status();
}

}  // namespace
}  // namespace weft
