// The Aho-Corasick automaton over the matching form.
#include "safety/banned_phrase_set.h"

#include <gtest/gtest.h>

#include "safety/phrase_normalizer.h"

namespace weft {
namespace {

std::shared_ptr<const BannedPhraseSet> compile(const std::vector<std::string>& phrases) {
  auto set = BannedPhraseSet::compile(phrases, "test", {});
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *set : nullptr;
}

// Every (end, phrase) a naive search finds equals what the automaton reports as the longest match
// ending at each code point.
TEST(BannedPhraseSetTest, FindsTheLongestPhraseEndingAtEachPosition) {
  const std::vector<std::string> phrases = {"he", "she", "his", "hers", "e", "ushers"};
  auto set = compile(phrases);
  const std::u32string text = normalize_phrase("ushershishe");
  int32_t state = BannedPhraseSet::kRoot;
  for (size_t i = 0; i < text.size(); ++i) {
    state = set->step(state, text[i]);
    size_t longest = 0;
    for (const std::string& p : phrases) {
      const std::u32string q = normalize_phrase(p);
      if (q.size() <= i + 1 && text.compare(i + 1 - q.size(), q.size(), q) == 0) longest = std::max(longest, q.size());
    }
    EXPECT_EQ(set->match_length(state), static_cast<int32_t>(longest)) << "at " << i;
    if (longest > 0) {
      EXPECT_EQ(normalize_phrase(set->phrases()[set->match_phrase(state)]).size(), longest);
    }
    // depth: the longest suffix that begins some phrase.
    size_t depth = 0;
    for (const std::string& p : phrases) {
      const std::u32string q = normalize_phrase(p);
      for (size_t len = std::min(q.size(), i + 1); len > depth; --len) {
        if (text.compare(i + 1 - len, len, q, 0, len) == 0) {
          depth = len;
          break;
        }
      }
    }
    EXPECT_EQ(set->depth(state), static_cast<int32_t>(depth)) << "at " << i;
  }
}

TEST(BannedPhraseSetTest, RefusesBadListsNamingTheEntry) {
  BannedPhraseLimits limits;
  limits.max_phrases = 2;
  limits.max_phrase_bytes = 4;
  auto too_many = BannedPhraseSet::compile({"a", "b", "c"}, "bad_words", limits);
  EXPECT_EQ(too_many.status().message(), "bad_words: 3 phrases, at most 2 are allowed");
  auto too_long = BannedPhraseSet::compile({"a", "abcde"}, "bad_words", limits);
  EXPECT_EQ(too_long.status().message(), "bad_words[1]: 5 bytes, at most 4 are allowed");
  auto empty = BannedPhraseSet::compile({"\u200B"}, "bad_words", {});
  EXPECT_EQ(empty.status().message(), "bad_words[0]: empty (or only default-ignorable characters)");
  auto invalid = BannedPhraseSet::compile({"ok", "\xC3"}, "bad_words", {});
  EXPECT_EQ(invalid.status().message(), "bad_words[1]: not valid UTF-8");
}

TEST(BannedPhraseSetTest, KeepsEquivalentPhrasesOnce) {
  auto set = compile({"Fine", "\uFB01ne", "FINE", "other"});
  EXPECT_EQ(set->phrases(), (std::vector<std::string>{"Fine", "other"}));
}

}  // namespace
}  // namespace weft
