// AdaptiveDeadline: the configured ceiling until warm, then a multiple of the recent p99 step time
// (scaled by tokens for large steps), never below the floor or above the ceiling.
#include "parallel/adaptive_deadline.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

using std::chrono::milliseconds;

AdaptiveDeadline::Options options() {
  AdaptiveDeadline::Options o;
  o.ceiling = milliseconds(300'000);
  o.floor = milliseconds(2'000);
  o.multiplier = 10;
  o.warmup_steps = 4;
  o.window = 100;
  return o;
}

TEST(AdaptiveDeadlineTest, CeilingUntilWarmThenAMultipleOfTheP99) {
  AdaptiveDeadline d(options());
  for (int i = 0; i < 3; ++i) {
    d.observe(0.5, 1);
    EXPECT_EQ(d.deadline(1), milliseconds(300'000)) << "not warm after " << i + 1 << " steps";
  }
  d.observe(0.5, 1);
  EXPECT_EQ(d.deadline(1), milliseconds(5'000));  // 10 x 0.5 s
  // Over the 100 most recent steps, the single slowest is above the p99, the second is it.
  for (int i = 0; i < 99; ++i) d.observe(0.1, 1);
  d.observe(0.9, 1);
  EXPECT_EQ(d.deadline(1), milliseconds(1'000 * 2));  // p99 0.1 s x 10 = 1 s, floored at 2 s
  d.observe(0.9, 1);
  EXPECT_EQ(d.deadline(1), milliseconds(9'000));
}

TEST(AdaptiveDeadlineTest, ClampedToTheFloorAndTheCeiling) {
  AdaptiveDeadline fast(options());
  for (int i = 0; i < 10; ++i) fast.observe(0.001, 1);
  EXPECT_EQ(fast.deadline(1), milliseconds(2'000));
  AdaptiveDeadline slow(options());
  for (int i = 0; i < 10; ++i) slow.observe(100.0, 1);
  EXPECT_EQ(slow.deadline(1), milliseconds(300'000));
  // A floor above the ceiling (a short --step-timeout) leaves the ceiling in force.
  AdaptiveDeadline::Options o = options();
  o.ceiling = milliseconds(1'000);
  AdaptiveDeadline short_timeout(o);
  for (int i = 0; i < 10; ++i) short_timeout.observe(0.001, 1);
  EXPECT_EQ(short_timeout.deadline(1), milliseconds(1'000));
}

TEST(AdaptiveDeadlineTest, LargeStepsScaleWithTheirTokens) {
  AdaptiveDeadline d(options());
  for (int i = 0; i < 20; ++i) d.observe(0.05, 10);  // decode steps: 5 ms per token
  EXPECT_EQ(d.deadline(10), milliseconds(2'000));      // 10 x 0.05 s = 0.5 s, floored
  EXPECT_EQ(d.deadline(2048), milliseconds(102'400));  // 10 x 0.005 s x 2048 tokens
}

TEST(AdaptiveDeadlineTest, OnlyTheRecentWindowCounts) {
  AdaptiveDeadline::Options o = options();
  o.window = 10;
  AdaptiveDeadline d(o);
  for (int i = 0; i < 10; ++i) d.observe(20.0, 1);  // a slow start (warm-up, contention)
  EXPECT_EQ(d.deadline(1), milliseconds(200'000));
  for (int i = 0; i < 10; ++i) d.observe(0.3, 1);
  EXPECT_EQ(d.deadline(1), milliseconds(3'000));
}

}  // namespace
}  // namespace weft
