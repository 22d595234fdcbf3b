#include "common/base/deadline_timer.h"

#include <gtest/gtest.h>

#include <vector>

#include "absl/synchronization/notification.h"

namespace memaudit {
namespace {

TEST(DeadlineTimerTest, RunsCallbacksInDeadlineOrderNotInTheOrderGiven) {
  DeadlineTimer timer;
  absl::Mutex mu;
  std::vector<int> order;
  absl::Notification last;
  const absl::Time now = absl::Now();
  timer.At(now + absl::Milliseconds(60), [&] {
    absl::MutexLock lock(&mu);
    order.push_back(3);
    last.Notify();
  });
  timer.At(now + absl::Milliseconds(20), [&] {
    absl::MutexLock lock(&mu);
    order.push_back(1);
  });
  timer.At(now + absl::Milliseconds(40), [&] {
    absl::MutexLock lock(&mu);
    order.push_back(2);
  });
  ASSERT_TRUE(last.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::MutexLock lock(&mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_GE(absl::Now() - now, absl::Milliseconds(60));
}

TEST(DeadlineTimerTest, AnEarlierDeadlineAddedWhileSleepingIsNotDelayed) {
  DeadlineTimer timer;
  timer.At(absl::Now() + absl::Hours(1), [] {});
  absl::Notification ran;
  const absl::Time start = absl::Now();
  timer.At(start + absl::Milliseconds(10), [&] { ran.Notify(); });
  ASSERT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(DeadlineTimerTest, ACancelledCallbackNeverRuns) {
  DeadlineTimer timer;
  bool ran = false;
  const DeadlineTimer::Id id = timer.At(absl::Now() + absl::Milliseconds(30), [&] { ran = true; });
  EXPECT_TRUE(timer.Cancel(id));
  EXPECT_FALSE(timer.Cancel(id));
  absl::Notification after;
  timer.At(absl::Now() + absl::Milliseconds(60), [&] { after.Notify(); });
  ASSERT_TRUE(after.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_FALSE(ran);
  EXPECT_EQ(timer.pending(), 0u);
}

TEST(DeadlineTimerTest, PostRunsAtOnceAndACallbackMayScheduleAnother) {
  DeadlineTimer timer;
  absl::Notification second;
  timer.Post([&] { timer.Post([&] { second.Notify(); }); });
  EXPECT_TRUE(second.WaitForNotificationWithTimeout(absl::Seconds(10)));
}

TEST(DeadlineTimerTest, DestructionDropsWhatIsNotDue) {
  bool ran = false;
  {
    DeadlineTimer timer;
    timer.At(absl::Now() + absl::Hours(1), [&] { ran = true; });
  }
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace memaudit
