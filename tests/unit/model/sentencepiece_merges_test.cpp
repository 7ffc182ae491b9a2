// sentencepiece_merges on small vocabularies, against what transformers' generate_merges returns
// for them (each expectation was printed by transformers 5.24; the whole vocabulary of a real
// trained model is checked against transformers by the gguf_sentencepiece test).
#include "model/sentencepiece_merges.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

using Merges = std::vector<std::pair<std::string, std::string>>;

TEST(SentencepieceMergesTest, EverySplitIntoTwoTokensRankedByTheWholeTokensScore) {
  const std::vector<std::string> tokens = {"a", "b", "c", "ab", "bc", "abc"};
  const std::vector<double> scores = {0, 0, 0, -1, -2, -3};
  // abc splits two ways ("a"+"bc", "ab"+"c"); the lowest score ranks last; single characters
  // (score 0) have no split.
  EXPECT_EQ(sentencepiece_merges(tokens, scores),
            (Merges{{"a", "b"}, {"b", "c"}, {"ab", "c"}, {"a", "bc"}}));
}

TEST(SentencepieceMergesTest, EqualScoresRankLongerPartsFirstThenFileOrder) {
  const std::vector<std::string> tokens = {"x", "y", "z", "yz", "xy", "xyz"};
  const std::vector<double> scores = {0, 0, 0, -1, -1, -1};
  // All score -1. The longer left part first ("xy"+"z"), then the longer right part ("x"+"yz"),
  // then the two of equal lengths in the order found: yz (file position 3) before xy (4).
  EXPECT_EQ(sentencepiece_merges(tokens, scores),
            (Merges{{"xy", "z"}, {"x", "yz"}, {"y", "z"}, {"x", "y"}}));
}

TEST(SentencepieceMergesTest, SplitsFallOnCharactersNotBytes) {
  // "é" is two bytes: no split inside it, so "é" + "t" is the only merge of "ét".
  const std::vector<std::string> tokens = {"\xc3\xa9", "t", "\xc3\xa9t", "\xc3", "\xa9t"};
  const std::vector<double> scores = {0, 0, -1, 0, 0};
  EXPECT_EQ(sentencepiece_merges(tokens, scores), (Merges{{"\xc3\xa9", "t"}}));
}

TEST(SentencepieceMergesTest, ARepeatedTokenCountsAtItsFirstPlaceWithItsLastScore) {
  const std::vector<std::string> tokens = {"p", "q", "pq", "r", "s", "rs", "pq"};
  const std::vector<double> scores = {0, 0, -5, 0, 0, -1, -1};
  // pq's last score (-1) ties rs; pq was found first, so it ranks first.
  EXPECT_EQ(sentencepiece_merges(tokens, scores), (Merges{{"p", "q"}, {"r", "s"}}));
}

}  // namespace
}  // namespace weft
