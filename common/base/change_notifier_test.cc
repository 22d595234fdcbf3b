#include "common/base/change_notifier.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"

namespace memaudit {
namespace {

TEST(ChangeNotifierTest, ASubscriberIsCalledBackByTheNextChangeWithTheNewVersion) {
  DeadlineTimer timer;
  ChangeNotifier changes(&timer);
  absl::Notification called;
  uint64_t seen = 0;
  changes.Subscribe(changes.version(), absl::Hours(1), [&](uint64_t v) {
    seen = v;
    called.Notify();
  });
  EXPECT_EQ(changes.subscribers(), 1u);
  EXPECT_FALSE(called.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  changes.Bump();
  ASSERT_TRUE(called.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(seen, 1u);
  EXPECT_EQ(changes.subscribers(), 0u);
  EXPECT_EQ(timer.pending(), 0u);  // its timeout was cancelled
}

TEST(ChangeNotifierTest, AVersionAlreadyPastWhatWasSeenCallsBackAtOnce) {
  DeadlineTimer timer;
  ChangeNotifier changes(&timer);
  changes.Bump();
  absl::Notification called;
  changes.Subscribe(0, absl::Hours(1), [&](uint64_t v) {
    EXPECT_EQ(v, 1u);
    called.Notify();
  });
  EXPECT_TRUE(called.WaitForNotificationWithTimeout(absl::Seconds(10)));
}

TEST(ChangeNotifierTest, NoChangeCallsBackAtTheTimeoutWithTheSameVersion) {
  DeadlineTimer timer;
  ChangeNotifier changes(&timer);
  absl::Notification called;
  const absl::Time start = absl::Now();
  changes.Subscribe(0, absl::Milliseconds(50), [&](uint64_t v) {
    EXPECT_EQ(v, 0u);
    called.Notify();
  });
  ASSERT_TRUE(called.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(50));
  EXPECT_EQ(changes.subscribers(), 0u);
}

TEST(ChangeNotifierTest, EachSubscriberIsCalledBackExactlyOnceUnderRacingChanges) {
  DeadlineTimer timer;
  ChangeNotifier changes(&timer);
  std::atomic<int> calls{0};
  constexpr int kSubscribers = 500;
  std::thread bumper([&] {
    for (int i = 0; i < 200; ++i) changes.Bump();
  });
  for (int i = 0; i < kSubscribers; ++i) {
    changes.Subscribe(changes.version(), absl::Milliseconds(i % 7), [&](uint64_t) { ++calls; });
  }
  bumper.join();
  for (int i = 0; i < 1000 && calls < kSubscribers; ++i) absl::SleepFor(absl::Milliseconds(10));
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(calls, kSubscribers);
}

TEST(ChangeNotifierTest, StopCallsBackEveryoneAndLaterSubscribersAtOnce) {
  DeadlineTimer timer;
  ChangeNotifier changes(&timer);
  absl::Notification first, later;
  changes.Subscribe(0, absl::Hours(1), [&](uint64_t) { first.Notify(); });
  changes.Stop();
  ASSERT_TRUE(first.WaitForNotificationWithTimeout(absl::Seconds(10)));
  changes.Subscribe(0, absl::Hours(1), [&](uint64_t) { later.Notify(); });
  EXPECT_TRUE(later.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(changes.Wait(0, absl::Hours(1)), 0u);  // returns, stopped
}

TEST(ChangeNotifierTest, WaitReturnsOnAChangeFromAnotherThread) {
  DeadlineTimer timer;
  ChangeNotifier changes(&timer);
  std::thread bumper([&] {
    absl::SleepFor(absl::Milliseconds(20));
    changes.Bump();
  });
  EXPECT_EQ(changes.Wait(0, absl::Seconds(30)), 1u);
  bumper.join();
}

}  // namespace
}  // namespace memaudit
