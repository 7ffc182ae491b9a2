// StreamingDetokenizer: for every corpus string (and the random id sequences) of every fixture,
// the concatenated deltas equal the full decode and each delta is valid UTF-8.
#include "tokenizer/streaming_detokenizer.h"

#include <algorithm>
#include <string>
#include <vector>

#include "fixture_util.h"
#include "tokenizer/utf8.h"

namespace weft {
namespace {

class StreamingTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamingTest, DeltasConcatenateToFullDecode) {
  const auto tok = testing::fixture_tokenizer(GetParam());
  ASSERT_NE(tok, nullptr);
  const auto& ref = testing::reference()["tokenizers"][GetParam()];
  std::vector<std::vector<int32_t>> sequences;
  for (const auto& c : ref["cases"]) sequences.push_back(c["ids"].get<std::vector<int32_t>>());
  for (const auto& c : ref["decodes"]) sequences.push_back(c["ids"].get<std::vector<int32_t>>());
  int failures = 0;
  for (const auto& ids : sequences) {
    for (const bool skip : {false, true}) {
      StreamingDetokenizer detok(tok, skip);
      std::string streamed;
      bool valid = true;
      for (const int32_t id : ids) {
        const std::string delta = detok.push(id);
        valid &= utf8::is_valid(delta);
        streamed += delta;
      }
      const std::string tail = detok.finish();
      valid &= utf8::is_valid(tail);
      streamed += tail;
      const std::string full = tok->decode(ids, skip);
      if ((streamed != full || !valid) && ++failures <= 10) {
        ADD_FAILURE() << GetParam() << " skip=" << skip << " ids " << testing::ids_str(ids)
                      << "\n  full     \"" << testing::escape(full) << "\"\n  streamed \""
                      << testing::escape(streamed) << "\" valid=" << valid;
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

// Banned-phrase rollback: truncating to k ids and pushing the rest again gives the deltas of a
// detokenizer that never saw the ids past k.
TEST_P(StreamingTest, TruncateReturnsToTheStateAfterThatPush) {
  const auto tok = testing::fixture_tokenizer(GetParam());
  ASSERT_NE(tok, nullptr);
  const auto& ref = testing::reference()["tokenizers"][GetParam()];
  for (const auto& c : ref["cases"]) {
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    for (size_t k = 0; k <= ids.size(); k += std::max<size_t>(1, ids.size() / 5)) {
      StreamingDetokenizer fresh(tok, true), rolled(tok, true);
      std::string expected, got;
      for (int32_t id : ids) expected += fresh.push(id);
      for (size_t i = 0; i < ids.size(); ++i) {
        const std::string delta = rolled.push(ids[i]);
        if (i < k) got += delta;
      }
      rolled.push(ids.empty() ? 0 : ids[0]);  // something else after the end, then undone too
      rolled.truncate(k);
      for (size_t i = k; i < ids.size(); ++i) got += rolled.push(ids[i]);
      EXPECT_EQ(got + rolled.finish(), expected + fresh.finish()) << testing::ids_str(ids) << " k=" << k;
    }
  }
}

TEST_P(StreamingTest, HoldsBackSplitCharacters) {
  const auto tok = testing::fixture_tokenizer(GetParam());
  ASSERT_NE(tok, nullptr);
  // An emoji is split over several byte-level or byte-fallback tokens.
  auto ids = tok->encode("a😀", false);
  ASSERT_TRUE(ids.ok());
  StreamingDetokenizer detok(tok, false);
  std::string streamed;
  for (const int32_t id : *ids) {
    const std::string delta = detok.push(id);
    EXPECT_EQ(delta.find(utf8::kReplacementUtf8), std::string::npos) << testing::escape(delta);
    streamed += delta;
  }
  streamed += detok.finish();
  EXPECT_EQ(streamed, tok->decode(*ids, false));
  EXPECT_EQ(streamed.substr(streamed.size() - 4), "😀");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, StreamingTest,
                         ::testing::Values("qwen3", "llama2", "deepseek_v3"));

}  // namespace
}  // namespace weft
