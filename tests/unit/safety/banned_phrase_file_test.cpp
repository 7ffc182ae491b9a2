// The --banned-phrases file format.
#include "safety/banned_phrase_file.h"

#include <gtest/gtest.h>

#include <fstream>

namespace weft {
namespace {

TEST(BannedPhraseFileTest, OnePhrasePerLineWithCommentsAndBlankLinesSkipped) {
  auto phrases = parse_banned_phrase_lines("# a comment\nfoo bar\r\n\n   \n \tx\n\\#tag\n ass\nlast", "f", {});
  ASSERT_TRUE(phrases.ok()) << phrases.status();
  EXPECT_EQ(*phrases, (std::vector<std::string>{"foo bar", " \tx", "#tag", " ass", "last"}));
}

TEST(BannedPhraseFileTest, BoundsAndEncodingErrorsNameTheLine) {
  BannedPhraseLimits limits;
  limits.max_phrases = 2;
  limits.max_phrase_bytes = 5;
  EXPECT_EQ(parse_banned_phrase_lines("a\nb\nc\n", "f", limits).status().message(), "f:3: more than 2 phrases");
  EXPECT_EQ(parse_banned_phrase_lines("a\n# c\ntoolong\n", "f", limits).status().message(),
            "f:3: a phrase of 7 bytes, at most 5 are allowed");
  EXPECT_EQ(parse_banned_phrase_lines("ok\n\xC3(\n", "f", limits).status().message(), "f:2: not valid UTF-8");
}

TEST(BannedPhraseFileTest, LoadsAndCompilesAFile) {
  const std::string path = ::testing::TempDir() + "/banned_phrases.txt";
  std::ofstream(path) << "# list\nMoses\nthe LORD\n";
  auto set = load_banned_phrase_file(path, "--banned-phrases");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ((*set)->phrases(), (std::vector<std::string>{"Moses", "the LORD"}));
  std::ofstream(path) << "# nothing\n";
  EXPECT_EQ(load_banned_phrase_file(path, "--banned-phrases").status().message(),
            "--banned-phrases: " + path + " holds no phrase");
  EXPECT_FALSE(load_banned_phrase_file(path + ".missing", "--banned-phrases").ok());
}

}  // namespace
}  // namespace weft
