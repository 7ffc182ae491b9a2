// TokenBitmask layout and apply_token_bitmask on hand-made masks.
#include "constrain/token_bitmask.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace weft {
namespace {

TEST(TokenBitmask, LayoutAndCounts) {
  TokenBitmask mask(2, 70);
  EXPECT_EQ(mask.words_per_row(), 3);
  EXPECT_EQ(mask.count_allowed(0), 70);  // the bits past 70 do not count
  std::ranges::fill(mask.row(1), 0u);
  mask.row(1)[0] = 1u << 5;
  mask.row(1)[2] = 1u << 1;  // token 65
  EXPECT_EQ(mask.count_allowed(1), 2);
  EXPECT_TRUE(mask.allowed(1, 5));
  EXPECT_TRUE(mask.allowed(1, 65));
  EXPECT_FALSE(mask.allowed(1, 64));
  mask.allow_all(1);
  EXPECT_EQ(mask.count_allowed(1), 70);
}

TEST(TokenBitmask, ApplyMasksDisallowedAndPaddedLogits) {
  const int32_t vocab = 70;
  TokenBitmask mask(1, vocab);
  std::ranges::fill(mask.row(0), 0u);
  for (const int t : {0, 31, 32, 33, 63, 64, 69}) mask.row(0)[t >> 5] |= 1u << (t & 31);
  mask.row(0)[1] = ~0u;           // tokens 32..63 all allowed
  std::vector<float> logits(80);  // a padded row: 10 columns past the vocabulary
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i);
  apply_token_bitmask(logits, mask.row(0), vocab);
  for (int i = 0; i < 80; ++i) {
    const bool allowed = i < vocab && mask.allowed(0, i);
    if (allowed) {
      EXPECT_EQ(logits[i], static_cast<float>(i)) << i;
    } else {
      EXPECT_TRUE(std::isinf(logits[i]) && logits[i] < 0) << i;
    }
  }
}

TEST(TokenBitmask, BatchApplyWithRowIndices) {
  TokenBitmask mask(2, 40);
  std::ranges::fill(mask.row(0), 0u);
  mask.row(0)[0] = 1u << 3;  // row 0 allows token 3 only; row 1 allows all
  std::vector<float> logits(3 * 40, 1.0f);
  const std::vector<int32_t> rows = {1, 0, 0};
  ASSERT_TRUE(apply_token_bitmask(logits, 40, mask, rows).ok());
  int finite[3] = {0, 0, 0};
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 40; ++i) finite[r] += std::isfinite(logits[r * 40 + i]);
  EXPECT_EQ(finite[0], 40);
  EXPECT_EQ(finite[1], 1);
  EXPECT_EQ(finite[2], 1);
  EXPECT_TRUE(std::isfinite(logits[40 + 3]));
  EXPECT_FALSE(apply_token_bitmask(logits, 40, mask).ok());  // 3 rows, 2 mask rows
  EXPECT_FALSE(apply_token_bitmask(logits, 41, mask, rows).ok());
  const std::vector<int32_t> out_of_range = {0, 1, 2};
  EXPECT_FALSE(apply_token_bitmask(logits, 40, mask, out_of_range).ok());
}

}  // namespace
}  // namespace weft
