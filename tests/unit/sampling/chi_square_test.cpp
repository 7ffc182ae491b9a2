#include "chi_square.h"

#include <gtest/gtest.h>

namespace weft::testing {
namespace {

// Critical values from the NIST/SEMATECH e-Handbook, table 1.3.6.7.4 (upper tail).
TEST(ChiSquare, CriticalValuesMatchPublishedTable) {
  EXPECT_NEAR(chi_square_critical(1, 0.05), 3.841, 1e-3);
  EXPECT_NEAR(chi_square_critical(1, 0.001), 10.828, 1e-3);
  EXPECT_NEAR(chi_square_critical(5, 0.01), 15.086, 1e-3);
  EXPECT_NEAR(chi_square_critical(10, 0.001), 29.588, 1e-3);
  EXPECT_NEAR(chi_square_critical(30, 0.05), 43.773, 1e-3);
  EXPECT_NEAR(chi_square_critical(50, 0.001), 86.661, 1e-3);
  EXPECT_NEAR(chi_square_critical(100, 0.01), 135.807, 1e-3);
}

TEST(ChiSquare, StatisticOfAPerfectFitIsZeroAndOfABadFitLarge) {
  EXPECT_DOUBLE_EQ(chi_square({10, 20, 30}, {10, 20, 30}).statistic, 0.0);
  const ChiSquareResult bad = chi_square({30, 20, 10}, {10, 20, 30});
  EXPECT_EQ(bad.df, 2);
  EXPECT_GT(bad.statistic, chi_square_critical(bad.df, 0.001));
}

}  // namespace
}  // namespace weft::testing
