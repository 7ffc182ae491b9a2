// The sliding windows of weft perplexity: a token is scored at most once, by a window that holds
// it and some history; with overlapping windows every token after the first is scored.
#include "launcher/perplexity_window.h"

#include <gtest/gtest.h>

#include <vector>

namespace weft {
namespace {

TEST(PerplexityWindows, NonOverlappingWhenStrideEqualsContext) {
  const auto w = perplexity_windows(10, 4, 4);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].begin, 0);
  EXPECT_EQ(w[0].end, 4);
  EXPECT_EQ(w[0].first_scored, 1);  // the first token has no history
  EXPECT_EQ(w[1].begin, 4);
  EXPECT_EQ(w[1].end, 8);
  EXPECT_EQ(w[1].first_scored, 5);  // token 4 starts a window that no earlier one covered
  EXPECT_EQ(w[2].begin, 8);
  EXPECT_EQ(w[2].end, 10);
  EXPECT_EQ(w[2].first_scored, 9);
}

TEST(PerplexityWindows, OverlappingWindowsScoreOnlyTheirNewTokens) {
  // The Hugging Face guide's example shape: context 8, stride 4 over 14 tokens.
  const auto w = perplexity_windows(14, 8, 4);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].begin, 0);
  EXPECT_EQ(w[0].end, 8);
  EXPECT_EQ(w[0].first_scored, 1);
  EXPECT_EQ(w[1].begin, 4);
  EXPECT_EQ(w[1].end, 12);
  EXPECT_EQ(w[1].first_scored, 8);  // tokens 8..11, each with at least 4 tokens of history
  EXPECT_EQ(w[2].begin, 8);
  EXPECT_EQ(w[2].end, 14);
  EXPECT_EQ(w[2].first_scored, 12);
}

TEST(PerplexityWindows, TokensAreScoredOnceForManyShapes) {
  for (int64_t n : {2, 3, 7, 64, 65, 1000}) {
    for (int64_t context : {2, 3, 5, 16, 100}) {
      for (int64_t stride = 1; stride <= context; stride += (stride < 4 ? 1 : context / 3 + 1)) {
        std::vector<int> times_scored(n, 0);
        int64_t last_begin = -1;
        for (const PerplexityWindow& w : perplexity_windows(n, context, stride)) {
          EXPECT_GT(w.begin, last_begin);
          EXPECT_EQ(w.begin % stride, 0);
          EXPECT_LE(w.end - w.begin, context);
          EXPECT_GT(w.first_scored, w.begin);
          for (int64_t t = w.first_scored; t < w.end; ++t) ++times_scored[t];
          last_begin = w.begin;
        }
        EXPECT_EQ(times_scored[0], 0) << n << " " << context << " " << stride;
        for (int64_t t = 1; t < n; ++t) {
          // Only non-overlapping windows leave a token out: the first of each window.
          const int expected = (stride == context && t % stride == 0) ? 0 : 1;
          ASSERT_EQ(times_scored[t], expected) << n << " " << context << " " << stride << " " << t;
        }
      }
    }
  }
}

}  // namespace
}  // namespace weft
