// Component-level checks with expectations taken from Hugging Face tokenizers 0.23 (outputs of
// the Python classes noted beside each case) and from Rust's String::from_utf8_lossy.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tokenizer/decoders.h"
#include "tokenizer/pre_tokenizers.h"
#include "tokenizer/utf8.h"

namespace weft {
namespace {

using nlohmann::json;

std::vector<std::string> pre_tokenize(const json& config, const std::string& text) {
  auto pre = make_pre_tokenizer(config, JsonPath("test.json", "pre_tokenizer"));
  EXPECT_TRUE(pre.ok()) << pre.status();
  std::vector<Piece> pieces{{text, true}};
  (*pre)->pre_tokenize(pieces);
  std::vector<std::string> out;
  for (const auto& p : pieces) out.push_back(p.text);
  return out;
}

std::string decode(const json& config, std::vector<std::string> tokens) {
  auto dec = make_decoder(config, JsonPath("test.json", "decoder"));
  EXPECT_TRUE(dec.ok()) << dec.status();
  (*dec)->decode_chain(tokens);
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

TEST(Utf8Test, LossyMatchesRustFromUtf8Lossy) {
  // Maximal subparts: "\xF0\x90\x80" is one U+FFFD, "\xC0" and "\x80" one each.
  EXPECT_EQ(utf8::from_bytes_lossy("a\xF0\x90\x80"
                                   "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(utf8::from_bytes_lossy("\xC0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8::from_bytes_lossy("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8::from_bytes_lossy("\xE4\xB8"), "\xEF\xBF\xBD");
  EXPECT_EQ(utf8::from_bytes_lossy("中"), "中");
  EXPECT_TRUE(utf8::is_valid("😀"));
  EXPECT_FALSE(utf8::is_valid("\xF5\x80\x80\x80"));
}

TEST(PreTokenizerTest, SplitBehaviors) {
  // pre_tokenizers.Split(pattern=' ', behavior=..., invert=...).pre_tokenize_str(' a  b ')
  EXPECT_EQ(pre_tokenize({{"type", "Split"},
                          {"pattern", {{"String", " "}}},
                          {"behavior", "MergedWithNext"},
                          {"invert", false}},
                         " a  b "),
            (std::vector<std::string>{" a", " ", " b", " "}));
  EXPECT_EQ(pre_tokenize({{"type", "Split"},
                          {"pattern", {{"String", " "}}},
                          {"behavior", "Contiguous"},
                          {"invert", true}},
                         " a  b "),
            (std::vector<std::string>{" ", "a", "  ", "b", " "}));
  EXPECT_EQ(pre_tokenize({{"type", "Split"},
                          {"pattern", {{"String", "a"}}},
                          {"behavior", "Removed"},
                          {"invert", true}},
                         "babab"),
            (std::vector<std::string>{"a", "a"}));
  EXPECT_EQ(pre_tokenize({{"type", "Split"},
                          {"pattern", {{"Regex", "\\s+"}}},
                          {"behavior", "MergedWithPrevious"},
                          {"invert", false}},
                         "a  b c"),
            (std::vector<std::string>{"a  ", "b ", "c"}));
}

TEST(PreTokenizerTest, DigitsAndByteLevelAndMetaspace) {
  // Digits(individual_digits=True).pre_tokenize_str('a٣4²x'): Unicode numerics split too.
  EXPECT_EQ(pre_tokenize({{"type", "Digits"}, {"individual_digits", true}}, "a٣4²x"),
            (std::vector<std::string>{"a", "٣", "4", "²", "x"}));
  EXPECT_EQ(pre_tokenize({{"type", "Digits"}, {"individual_digits", false}}, "a123b4"),
            (std::vector<std::string>{"a", "123", "b", "4"}));
  // ByteLevel(add_prefix_space=True, use_regex=True).pre_tokenize_str('hello  world')
  EXPECT_EQ(pre_tokenize({{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}},
                         "hello  world"),
            (std::vector<std::string>{"Ġhello", "Ġ", "Ġworld"}));
  // Metaspace(prepend_scheme='first', split=True).pre_tokenize_str('  hello world')
  EXPECT_EQ(pre_tokenize({{"type", "Metaspace"},
                          {"replacement", "▁"},
                          {"prepend_scheme", "first"},
                          {"split", true}},
                         "  hello world"),
            (std::vector<std::string>{"▁", "▁hello", "▁world"}));
}

TEST(DecoderTest, MatchesTokenizers) {
  // decoders.Metaspace(prepend_scheme='always').decode(['▁▁a▁b', '▁c', '▁'])
  EXPECT_EQ(decode({{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "always"}},
                   {"▁▁a▁b", "▁c", "▁"}),
            "ab c ");
  EXPECT_EQ(decode({{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "never"}},
                   {"▁▁a▁b", "▁c"}),
            "  a b c");
  // decoders.Strip(content=' ', left=2, right=1).decode(['  a  ', ' b '])
  EXPECT_EQ(
      decode({{"type", "Strip"}, {"content", " "}, {"start", 2}, {"stop", 1}}, {"  a  ", " b "}),
      "a b");
  // decoders.ByteLevel().decode(['Ġhi', '<|im_end|>', '日本', 'Ã'])
  EXPECT_EQ(decode({{"type", "ByteLevel"}}, {"Ġhi", "<|im_end|>", "日本", "Ã"}),
            " hi<|im_end|>日本\xEF\xBF\xBD");
  // ByteFallback: an invalid run gives one U+FFFD per byte; a valid run decodes.
  EXPECT_EQ(
      decode({{"type", "ByteFallback"}}, {"<0xE4>", "<0xB8>", "x", "<0xE4>", "<0xB8>", "<0xAD>"}),
      "\xEF\xBF\xBD\xEF\xBF\xBDx中");
}

}  // namespace
}  // namespace weft
