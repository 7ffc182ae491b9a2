#include "sampling/stop_checker.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

// Feeds deltas and returns what was emitted after each one.
std::vector<std::string> feed_all(StopStringMatcher& m, const std::vector<std::string>& deltas,
                                  std::optional<size_t>* stop_index = nullptr) {
  std::vector<std::string> emitted;
  for (const std::string& d : deltas) {
    auto r = m.feed(d);
    emitted.push_back(r.emit);
    if (r.stop_index.has_value() && stop_index != nullptr) *stop_index = r.stop_index;
  }
  return emitted;
}

TEST(StopStringMatcher, StopStringAcrossDeltasIsCutWithEverythingAfterIt) {
  StopStringMatcher m({"STOP"});
  std::optional<size_t> idx;
  const auto out = feed_all(m, {"Hello S", "T", "OP and more", "ignored"}, &idx);
  EXPECT_EQ(out, (std::vector<std::string>{"Hello ", "", "", ""}));
  EXPECT_EQ(idx, std::optional<size_t>(0));
}

TEST(StopStringMatcher, PartialMatchIsHeldBackThenReleased) {
  StopStringMatcher m({"</end>"});
  const auto out = feed_all(m, {"a </", "en", "x> b"});
  EXPECT_EQ(out, (std::vector<std::string>{"a ", "", "</enx> b"}));
  EXPECT_EQ(m.flush(), "");
}

TEST(StopStringMatcher, HeldTextIsReleasedByFlush) {
  StopStringMatcher m({"###"});
  EXPECT_EQ(m.feed("abc##").emit, "abc");
  EXPECT_EQ(m.flush(), "##");
}

TEST(StopStringMatcher, EarliestOfSeveralStopStringsWins) {
  StopStringMatcher m({"world", "lo w", "xyz"});
  std::optional<size_t> idx;
  const auto out = feed_all(m, {"hel", "lo wor", "ld"}, &idx);
  // "l" may begin "lo w", so it is held after the first delta.
  EXPECT_EQ(out, (std::vector<std::string>{"he", "l", ""}));
  EXPECT_EQ(idx, std::optional<size_t>(1));
}

TEST(StopStringMatcher, HoldBackUsesTheLongestPossiblePrefixOfAnyStop) {
  // "ab" could start "abc"; "b" alone could start "bd": hold the longer candidate.
  StopStringMatcher m({"abc", "bd"});
  EXPECT_EQ(m.feed("xxab").emit, "xx");
  auto r = m.feed("d");  // "abd": "bd" matches at 1
  EXPECT_EQ(r.emit, "a");
  EXPECT_EQ(r.stop_index, std::optional<size_t>(1));
}

TEST(StopStringMatcher, StopAtTheVeryBeginning) {
  StopStringMatcher m({"\n"});
  auto r = m.feed("\nrest");
  EXPECT_EQ(r.emit, "");
  EXPECT_EQ(r.stop_index, std::optional<size_t>(0));
}

TEST(StopStringMatcher, SelfOverlappingStopString) {
  // "aab": after "aaa" the pending "aa" may still begin the stop string.
  StopStringMatcher m({"aab"});
  EXPECT_EQ(m.feed("aaa").emit, "a");
  auto r = m.feed("b!");  // held "aa" + "b" completes it
  EXPECT_EQ(r.emit, "");
  EXPECT_TRUE(r.stop_index.has_value());
}

TEST(StopStringMatcher, WithoutStopStringsEverythingPassesThrough) {
  StopStringMatcher m({});
  EXPECT_EQ(m.feed("abc").emit, "abc");
  EXPECT_EQ(m.feed("").emit, "");
}

TEST(StopChecker, EosFinishesWithStopWithoutItsText) {
  SamplingParams p;
  p.stop = {"zz"};
  const std::vector<int32_t> eos = {2};
  StopChecker c(p, eos);
  auto s = c.append(5, "hi z");
  EXPECT_EQ(s.text, "hi ");
  EXPECT_EQ(s.finish, FinishReason::kNone);
  s = c.append(2, "</s>");
  EXPECT_EQ(s.finish, FinishReason::kStop);
  EXPECT_EQ(s.text, "z");  // held-back text that did not become a stop string
  EXPECT_EQ(s.stop_token, std::optional<int32_t>(2));
  EXPECT_TRUE(c.finished());
  EXPECT_EQ(finish_reason_name(s.finish), "stop");
}

TEST(StopChecker, IgnoreEosRunsToLengthButStopTokenIdsStillStop) {
  SamplingParams p;
  p.ignore_eos = true;
  p.max_tokens = 3;
  const std::vector<int32_t> eos = {2};
  StopChecker c(p, eos);
  EXPECT_EQ(c.append(2, "a").finish, FinishReason::kNone);
  EXPECT_EQ(c.append(2, "b").finish, FinishReason::kNone);
  auto s = c.append(2, "c");
  EXPECT_EQ(s.finish, FinishReason::kLength);
  EXPECT_EQ(finish_reason_name(s.finish), "length");
  EXPECT_EQ(s.text, "c");

  p.stop_token_ids = {7};
  StopChecker d(p, eos);
  auto t = d.append(7, "x");
  EXPECT_EQ(t.finish, FinishReason::kStop);
  EXPECT_EQ(t.stop_token, std::optional<int32_t>(7));
}

TEST(StopChecker, StopStringFinishesAndNamesTheString) {
  SamplingParams p;
  p.stop = {"User:", "\n\n"};
  StopChecker c(p, {});
  EXPECT_EQ(c.append(1, "Answer.\n").text, "Answer.");
  auto s = c.append(1, "\nUser: hi");
  EXPECT_EQ(s.finish, FinishReason::kStop);
  EXPECT_EQ(s.text, "");
  EXPECT_EQ(s.stop_string, std::optional<std::string>("\n\n"));
}

TEST(StopChecker, MinTokensDefersAllStops) {
  SamplingParams p;
  p.min_tokens = 2;
  p.max_tokens = 5;
  p.stop = {"!"};
  const std::vector<int32_t> eos = {0};
  StopChecker c(p, eos);
  auto s = c.append(0, "!");  // 1 token < min_tokens: neither eos nor "!" stops
  EXPECT_EQ(s.finish, FinishReason::kNone);
  EXPECT_EQ(s.text, "!");
  s = c.append(3, "ok!");
  EXPECT_EQ(s.finish, FinishReason::kStop);
  EXPECT_EQ(s.text, "ok");
}

TEST(StopChecker, LengthReleasesHeldText) {
  SamplingParams p;
  p.max_tokens = 2;
  p.stop = {"<|im_end|>"};
  StopChecker c(p, {});
  EXPECT_EQ(c.append(1, "a").text, "a");
  auto s = c.append(1, "<|im");
  EXPECT_EQ(s.finish, FinishReason::kLength);
  EXPECT_EQ(s.text, "<|im");
  EXPECT_EQ(c.append(1, "more").finish, FinishReason::kNone);  // after finish: nothing
}

// The token part of the rule, foreseen without the text (banned phrases end the text with it).
TEST(StopChecker, TokenFinishForeseesStopTokensAndLength) {
  SamplingParams p;
  p.max_tokens = 5;
  p.min_tokens = 2;
  p.stop_token_ids = {9};
  const std::vector<int32_t> eos = {2};
  StopChecker checker(p, eos);
  EXPECT_EQ(checker.token_finish(2, 1), FinishReason::kNone);  // min_tokens holds eos back
  EXPECT_EQ(checker.token_finish(2, 2), FinishReason::kStop);
  EXPECT_EQ(checker.token_finish(9, 3), FinishReason::kStop);
  EXPECT_EQ(checker.token_finish(4, 4), FinishReason::kNone);
  EXPECT_EQ(checker.token_finish(4, 5), FinishReason::kLength);
  p.ignore_eos = true;
  EXPECT_EQ(StopChecker(p, eos).token_finish(2, 3), FinishReason::kNone);
  // It agrees with append.
  StopChecker run(p, eos);
  for (int n = 1; n <= 5; ++n) {
    const int32_t token = n == 3 ? 9 : 4;
    const FinishReason foreseen = run.token_finish(token, n);
    EXPECT_EQ(run.append(token, "x").finish, foreseen) << n;
    if (foreseen != FinishReason::kNone) break;
  }
  EXPECT_EQ(finish_reason_name(FinishReason::kContentFilter), "content_filter");
}

}  // namespace
}  // namespace weft
