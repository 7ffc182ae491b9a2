#include "sampling/rng.h"

#include <gtest/gtest.h>

#include <set>

namespace weft {
namespace {

// Random123's known-answer vectors (tests/kat_vectors) for philox4x32_10.
TEST(Philox, MatchesRandom123KnownAnswers) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(
      philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
      (PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(
      philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
      (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(SamplingRng, CounterLayoutIsSeedStreamStep) {
  const uint64_t seed = 0x0123456789abcdefull;
  const uint64_t step = 0x0000000500000007ull;
  EXPECT_EQ(SamplingRng(seed, 3, step).block(9),
            philox4x32_10({9, 7, 5, 3}, {0x89abcdef, 0x01234567}));
}

TEST(SamplingRng, UniformIsInUnitIntervalAndDependsOnEveryInput) {
  std::set<double> seen;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    for (uint32_t stream = 0; stream < 4; ++stream) {
      for (uint64_t step = 0; step < 4; ++step) {
        const double u = SamplingRng(seed, stream, step).uniform();
        EXPECT_GE(u, 0.0);
        EXPECT_LT(u, 1.0);
        EXPECT_EQ(u, SamplingRng(seed, stream, step).uniform());
        seen.insert(u);
      }
    }
  }
  EXPECT_EQ(seen.size(), 64u);
}

TEST(SamplingRng, UniformMeanAndVarianceAreThoseOfU01) {
  constexpr int kN = 200000;
  double sum = 0.0, sum_sq = 0.0;
  for (int i = 0; i < kN; ++i) {
    const double u = SamplingRng(7, 0, i).uniform();
    sum += u;
    sum_sq += u * u;
  }
  const double mean = sum / kN;
  const double var = sum_sq / kN - mean * mean;
  // Standard error of the mean is sqrt(1/12 / kN) ~ 6.5e-4; allow 5 of them.
  EXPECT_NEAR(mean, 0.5, 5 * 6.5e-4);
  EXPECT_NEAR(var, 1.0 / 12.0, 2e-3);
}

TEST(SeedSource, FixedBaseSeedIsReproducible) {
  SeedSource a(5), b(5);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.next(), b.next());
  SeedSource c;
  EXPECT_NE(c.next(), c.next());
}

}  // namespace
}  // namespace weft
