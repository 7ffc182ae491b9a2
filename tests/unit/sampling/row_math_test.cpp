// The sampler's row passes (sampling/row_math.h) give the same bits on the AVX-512 path and on
// baseline x86-64 (so a seeded draw is the same on every machine): the two exp formulations over
// every float in the range they meet, and each pass against its plain definition, with
// cpu_features() limited to AVX2 (the baseline path) and not.
#include "sampling/row_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/cpu_features.h"

namespace weft {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(RowMath, BothExpFormulationsAgreeOnEveryInput) {
  // Every 61st bit pattern in [-100, -0] (18 million floats), the special values, and 64 floats
  // either side of each x where fx crosses an integer (where a wrong floor would show).
  std::vector<float> xs = {0.0f, -0.0f, -kInf, std::numeric_limits<float>::quiet_NaN(), -87.0f, -86.99999f,
                           -87.00001f, std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min()};
  for (uint32_t bits = std::bit_cast<uint32_t>(-0.0f); bits <= std::bit_cast<uint32_t>(-100.0f); bits += 61) {
    xs.push_back(std::bit_cast<float>(bits));
  }
  for (int k = -130; k <= 1; ++k) {
    // x whose fx = x * log2(e) + 0.5 lies just around the integer k.
    const float x = (static_cast<float>(k) - 0.5f) / 1.44269504088896341f;
    float below = x, above = x;
    for (int step = 0; step < 64; ++step) {
      xs.push_back(below);
      xs.push_back(above);
      below = std::nextafter(below, -kInf);
      above = std::nextafter(above, kInf);
    }
  }
  for (float x : xs) {
    if (x > 0.0f) continue;
    const float a = exp_nonpositive(x), b = exp_nonpositive_vectorised(x);
    ASSERT_EQ(std::bit_cast<uint32_t>(a), std::bit_cast<uint32_t>(b)) << "x = " << x;
  }
  // And it is exp: within 2 ulp where it does not underflow.
  for (float x : {-0.5f, -1.0f, -10.0f, -50.0f, -86.0f}) {
    EXPECT_NEAR(exp_nonpositive(x), std::exp(x), 2.5e-7f * std::exp(x)) << x;
  }
}

class RowMathPaths : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { ASSERT_TRUE(limit_cpu_features(GetParam()).ok()); }
  void TearDown() override { ASSERT_TRUE(limit_cpu_features("native").ok()); }
};

std::vector<float> random_row(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 4.0f);
  std::vector<float> row(static_cast<size_t>(n));
  for (float& v : row) v = dist(rng);
  return row;
}

TEST_P(RowMathPaths, EachPassIsItsPlainDefinitionBitForBit) {
  for (int64_t n : {1, 7, 8, 15, 16, 17, 1000, 49152, 151937}) {
    std::vector<float> row = random_row(n, static_cast<uint32_t>(n));
    if (n > 20) {
      row[5] = -kInf;
      row[n / 2] = std::numeric_limits<float>::quiet_NaN();
      row[n - 1] = 40.0f;  // the maximum in the tail
    }
    float want_max = row[0];
    for (float v : row) want_max = want_max < v ? v : want_max;  // std::max_element's rule
    EXPECT_EQ(std::bit_cast<uint32_t>(row_max(row.data(), n)), std::bit_cast<uint32_t>(want_max)) << n;
    EXPECT_EQ(*std::max_element(row.begin(), row.end()), row_max(row.data(), n)) << n;

    if (n > 20) row[n / 2] = -kInf;  // no NaN in the exp pass's input
    const float mx = row_max(row.data(), n);
    std::vector<float> w(static_cast<size_t>(n)), want_w(static_cast<size_t>(n));
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t i = 0; i < n; ++i) want_w[i] = exp_nonpositive(row[i] - mx);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      for (int j = 0; j < 8; ++j) acc[j] += want_w[i + j];
    }
    for (; i < n; ++i) acc[0] += want_w[i];
    const double want_sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    const double sum = exp_row(row.data(), mx, w.data(), n);
    EXPECT_EQ(std::bit_cast<uint64_t>(sum), std::bit_cast<uint64_t>(want_sum)) << n;
    for (int64_t k = 0; k < n; ++k) {
      ASSERT_EQ(std::bit_cast<uint32_t>(w[k]), std::bit_cast<uint32_t>(want_w[k])) << n << " at " << k;
    }

    std::vector<float> divided = row, want_divided = row;
    for (float& v : want_divided) v /= 0.7f;
    divide_row(divided.data(), n, 0.7f);
    for (int64_t k = 0; k < n; ++k) {
      ASSERT_EQ(std::bit_cast<uint32_t>(divided[k]), std::bit_cast<uint32_t>(want_divided[k])) << n << " at " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, RowMathPaths, ::testing::Values("native", "avx2"));

}  // namespace
}  // namespace weft
