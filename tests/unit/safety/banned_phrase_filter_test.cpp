// The per-sequence screen: matches across token boundaries and tokenizations, NFKC and case
// forms, overlapping phrases, hold-back release, finish and rollback.
#include "safety/banned_phrase_filter.h"

#include <gtest/gtest.h>

#include <optional>

namespace weft {
namespace {

std::shared_ptr<const BannedPhraseSet> list(const std::vector<std::string>& phrases) {
  auto set = BannedPhraseSet::compile(phrases, "test", {});
  EXPECT_TRUE(set.ok()) << set.status();
  return *set;
}

// Feeds `tokens`; returns the first match's token (or nullopt) and checks on the way that
// the committed tokens never include the match's start.
std::optional<BannedPhraseFilter::Match> feed(BannedPhraseFilter& filter, const std::vector<std::string>& tokens,
                                              bool finish = true) {
  for (const std::string& t : tokens) {
    const int64_t committed = filter.committed();
    if (auto m = filter.append(t)) {
      EXPECT_GE(m->token, committed);
      return m;
    }
    EXPECT_GE(filter.committed(), committed);
  }
  if (finish) return filter.finish();
  return std::nullopt;
}

TEST(BannedPhraseFilterTest, FindsAPhraseAcrossTokensAndHoldsItsStartBack) {
  BannedPhraseFilter filter({list({"quick brown"})});
  EXPECT_FALSE(filter.append("The"));
  EXPECT_EQ(filter.committed(), 1);
  EXPECT_FALSE(filter.append(" qu"));
  EXPECT_EQ(filter.committed(), 1);  // " qu" may begin the phrase
  EXPECT_FALSE(filter.append("ick"));
  EXPECT_FALSE(filter.append(" bro"));
  EXPECT_FALSE(filter.append("wn"));  // complete, but a combining mark could still follow the n
  EXPECT_EQ(filter.committed(), 1);
  auto m = filter.append(" fox");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->token, 1);
  EXPECT_EQ(m->list, 0u);
  EXPECT_EQ(m->phrase, 0);
}

TEST(BannedPhraseFilterTest, FindsEveryTokenizationOfThePhraseAtTheTokenHoldingItsFirstByte) {
  const std::string text = "and MoSeS went";  // the phrase starts at byte 4
  const size_t n = text.size();
  for (uint32_t cuts = 0; cuts < (1u << (n - 1)); ++cuts) {
    std::vector<std::string> tokens(1);
    int64_t first = -1;
    for (size_t i = 0; i < n; ++i) {
      if (i > 0 && (cuts >> (i - 1)) & 1u) tokens.emplace_back();
      tokens.back().push_back(text[i]);
      if (i == 4) first = static_cast<int64_t>(tokens.size()) - 1;
    }
    BannedPhraseFilter filter({list({"moses"})});
    auto m = feed(filter, tokens);
    ASSERT_TRUE(m) << cuts;
    EXPECT_EQ(m->token, first) << cuts;
  }
}

TEST(BannedPhraseFilterTest, MatchesCaseAndCompatibilityFormsOfThePhrase) {
  for (const std::vector<std::string>& tokens :
       {std::vector<std::string>{"so ", "\uFB01", "NE!"}, {"so \uFF26\uFF29\uFF2E\uFF25", "."}, {"so Fi", "ne"},
        {"so f", "\u00AD", "ine"}}) {
    BannedPhraseFilter filter({list({"fine"})});
    auto m = feed(filter, tokens);
    ASSERT_TRUE(m) << tokens[1];
    EXPECT_EQ(m->token, tokens[0] == "so " ? 1 : 0);
  }
  BannedPhraseFilter composed({list({"caf\u00E9"})});
  EXPECT_TRUE(feed(composed, {"a cafe", "\u0301 ok"}));
}

TEST(BannedPhraseFilterTest, APhraseFollowedByACombiningMarkIsNotTheSameText) {
  BannedPhraseFilter marked({list({"cafe"})});
  EXPECT_FALSE(feed(marked, {"a cafe", "\u0301 ok"}));
  EXPECT_EQ(marked.committed(), 2);
  BannedPhraseFilter plain({list({"cafe"})});
  auto m = feed(plain, {"a cafe", " ok"});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->token, 0);
}

TEST(BannedPhraseFilterTest, OverlappingPhrasesReportTheEarliestStart) {
  {
    BannedPhraseFilter filter({list({"he", "she", "hers"})});
    auto m = feed(filter, {"u", "s", "h", "e", "r"});
    ASSERT_TRUE(m);
    EXPECT_EQ(m->token, 1);  // "she", found when "r" arrives (no mark follows the e)
  }
  {
    BannedPhraseFilter filter({list({"abcd", "bc"})});
    auto m = feed(filter, {"a", "b", "c", "d"});
    ASSERT_TRUE(m);
    EXPECT_EQ(m->token, 1);  // "bc" completes first
  }
}

TEST(BannedPhraseFilterTest, ReleasesTextOnceItCannotBecomeAPhrase) {
  BannedPhraseFilter filter({list({"quick"})});
  EXPECT_FALSE(filter.append("a"));
  EXPECT_FALSE(filter.append(" qu"));
  EXPECT_EQ(filter.committed(), 1);
  EXPECT_FALSE(filter.append("ite"));  // "quit" is no prefix of "quick"
  EXPECT_EQ(filter.committed(), 3);
  EXPECT_FALSE(filter.append(" qui"));
  EXPECT_EQ(filter.committed(), 3);
  EXPECT_FALSE(filter.finish());  // the text ended before the phrase did
  EXPECT_EQ(filter.committed(), 4);
}

TEST(BannedPhraseFilterTest, FinishFindsAPhraseAtTheEndAndInTrailingText) {
  BannedPhraseFilter end({list({"amen"})});
  EXPECT_FALSE(end.append("so "));
  EXPECT_FALSE(end.append("Amen"));
  auto m = end.finish();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->token, 1);
  BannedPhraseFilter trailing({list({"amen"})});
  EXPECT_FALSE(trailing.append("so "));
  EXPECT_FALSE(trailing.append("Ame"));
  m = trailing.finish("n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->token, 1);
}

TEST(BannedPhraseFilterTest, EmptyTokensBeforeAPhraseBelongToIt) {
  // A token that added no text (its bytes start a character the next token completes).
  BannedPhraseFilter filter({list({"\u00E9t\u00E9"})});
  auto m = feed(filter, {"un ", "", "\u00E9t\u00E9", "!"});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->token, 1);
}

TEST(BannedPhraseFilterTest, RollbackIsTheStateBeforeTheToken) {
  auto phrases = list({"quick", "slow"});
  BannedPhraseFilter filter({phrases});
  auto m = feed(filter, {"x", " qu", "ick", " go"}, false);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->token, 1);
  filter.rollback(1);
  EXPECT_EQ(filter.num_tokens(), 1);
  EXPECT_EQ(filter.committed(), 1);
  BannedPhraseFilter fresh({phrases});
  EXPECT_FALSE(fresh.append("x"));
  // Both go on alike: the same commits and the same match.
  for (BannedPhraseFilter* f : {&filter, &fresh}) {
    EXPECT_FALSE(f->append(" qui"));
    EXPECT_FALSE(f->append("et"));
    EXPECT_EQ(f->committed(), 3);
    EXPECT_FALSE(f->append(" s"));
    EXPECT_FALSE(f->append("low"));
    auto again = f->finish();
    ASSERT_TRUE(again);
    EXPECT_EQ(again->token, 3);
  }
}

TEST(BannedPhraseFilterTest, SeveralListsAreScreenedTogether) {
  BannedPhraseFilter filter({list({"alpha"}), list({"beta"})});
  auto m = feed(filter, {"the beta test"});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->list, 1u);
  EXPECT_EQ(m->token, 0);
}

}  // namespace
}  // namespace weft
