#include "parallel/step_watchdog.h"

#include <chrono>
#include <future>
#include <string>

#include <gtest/gtest.h>

namespace weft {
namespace {

using std::chrono::milliseconds;

TEST(StepWatchdog, MessageNamesRankStepAndDeadline) {
  EXPECT_EQ(StepWatchdog::expiry_message(2, 17, milliseconds(30000)),
            "rank 2: step 17 exceeded its deadline of 30 s");
  EXPECT_EQ(StepWatchdog::expiry_message(0, 3, milliseconds(1500)),
            "rank 0: step 3 exceeded its deadline of 1.5 s");
}

TEST(StepWatchdog, FiresOnceWhenNotDisarmed) {
  std::promise<std::string> fired;
  StepWatchdog dog(3, [&](const std::string& m) { fired.set_value(m); });
  dog.arm(5, milliseconds(20));
  std::future<std::string> f = fired.get_future();
  // A generous bound only so that a broken watchdog fails instead of hanging.
  ASSERT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_EQ(f.get(), "rank 3: step 5 exceeded its deadline of 0.02 s");
  EXPECT_EQ(dog.expirations(), 1);
}

TEST(StepWatchdog, DisarmedStepNeverFires) {
  int calls = 0;
  {
    StepWatchdog dog(0, [&](const std::string&) { ++calls; });
    dog.arm(1, milliseconds(3600 * 1000));
    dog.disarm();
    EXPECT_EQ(dog.expirations(), 0);
  }
  EXPECT_EQ(calls, 0);
}

TEST(StepWatchdog, RearmingReplacesTheStep) {
  std::promise<std::string> fired;
  StepWatchdog dog(1, [&](const std::string& m) { fired.set_value(m); });
  dog.arm(1, milliseconds(3600 * 1000));
  dog.arm(2, milliseconds(10));
  std::future<std::string> f = fired.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_EQ(f.get(), "rank 1: step 2 exceeded its deadline of 0.01 s");
}

TEST(StepWatchdog, ArmsAgainAfterFiring) {
  std::promise<std::string> first;
  std::promise<std::string> second;
  int calls = 0;
  StepWatchdog dog(4, [&](const std::string& m) {
    (calls++ == 0 ? first : second).set_value(m);
  });
  dog.arm(10, milliseconds(5));
  ASSERT_EQ(first.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  dog.arm(11, milliseconds(5));
  std::future<std::string> f = second.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_EQ(f.get(), "rank 4: step 11 exceeded its deadline of 0.005 s");
  EXPECT_EQ(dog.expirations(), 2);
}

}  // namespace
}  // namespace weft
