#include "common/base/process.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::unique_ptr<Subprocess> Start(const std::vector<std::string>& argv) {
  auto process = Subprocess::Spawn(argv, "");
  EXPECT_TRUE(process.ok()) << process.status();
  return process.ok() ? *std::move(process) : nullptr;
}

// A child that ignores SIGTERM (ignored signals stay ignored across exec).
std::unique_ptr<Subprocess> StartDeaf() {
  return Start({"/bin/sh", "-c", "trap '' TERM; exec sleep 30"});
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/process_test-", getpid(), "-", name);
}

TEST(SubprocessTest, StopReturnsAsSoonAsTheChildExits) {
  auto child = Start({"/bin/sleep", "30"});
  ASSERT_NE(child, nullptr);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(child->Stop(5000), 128 + SIGTERM);
  // The grace period is an upper bound, not a wait: no polling interval.
  EXPECT_LT(SecondsSince(start), 0.5);
  EXPECT_TRUE(child->Exited());
}

TEST(SubprocessTest, StopKillsAChildThatOutlivesTheGracePeriod) {
  auto child = StartDeaf();
  ASSERT_NE(child, nullptr);
  // Until the shell has set its trap and exec'd, a SIGTERM would still end it.
  ASSERT_FALSE(child->WaitFor(200));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(child->Stop(300), 128 + SIGKILL);
  EXPECT_GE(SecondsSince(start), 0.29);
  EXPECT_LT(SecondsSince(start), 3.0);
}

TEST(SubprocessTest, WaitForTimesOutOnARunningChildAndSeesItsExit) {
  auto child = Start({"/bin/sh", "-c", "exit 7"});
  ASSERT_NE(child, nullptr);
  EXPECT_TRUE(child->WaitFor(10000));
  EXPECT_EQ(child->Wait(), 7);

  auto sleeper = Start({"/bin/sleep", "30"});
  ASSERT_NE(sleeper, nullptr);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(sleeper->WaitFor(100));
  EXPECT_GE(SecondsSince(start), 0.099);
  sleeper->Signal(SIGTERM);
  EXPECT_TRUE(sleeper->WaitFor(10000));
  EXPECT_EQ(sleeper->Wait(), 128 + SIGTERM);
}

TEST(SubprocessTest, StopAllWaitsOneGracePeriodForAllTogether) {
  std::vector<std::unique_ptr<Subprocess>> deaf;
  for (int i = 0; i < 3; ++i) deaf.push_back(StartDeaf());
  for (auto& d : deaf) ASSERT_NE(d, nullptr);
  auto quick = Start({"/bin/sleep", "30"});
  ASSERT_NE(quick, nullptr);
  ASSERT_FALSE(deaf.back()->WaitFor(200));  // every trap is set
  const auto start = std::chrono::steady_clock::now();
  Subprocess::StopAll({deaf[0].get(), nullptr, quick.get(), deaf[1].get(), deaf[2].get()}, 400);
  // One grace period for all, not one each (3 x 400 ms).
  EXPECT_LT(SecondsSince(start), 1.1);
  for (auto& d : deaf) EXPECT_EQ(d->Wait(), 128 + SIGKILL);
  EXPECT_EQ(quick->Wait(), 128 + SIGTERM);
}

TEST(WaitForPortFileTest, ReturnsThePortOnceItIsWritten) {
  const std::string path = TempPath("written.port");
  std::remove(path.c_str());
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_TRUE(WritePortFile(path, 4242).ok());
  });
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<int> port = WaitForPortFile(path, 10000);
  const double waited = SecondsSince(start);
  writer.join();
  MEMAUDIT_ASSERT_OK(port);
  EXPECT_EQ(*port, 4242);
  EXPECT_LT(waited, 2.0);
  std::remove(path.c_str());
}

TEST(WaitForPortFileTest, FailsAsSoonAsTheProcessExitsWithoutWritingIt) {
  const std::string path = TempPath("never.port");
  std::remove(path.c_str());
  auto child = Start({"/bin/sh", "-c", "sleep 0.1; exit 3"});
  ASSERT_NE(child, nullptr);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<int> port = WaitForPortFile(path, 20000, child.get());
  EXPECT_THAT(port.status(), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("exited")));
  EXPECT_LT(SecondsSince(start), 5.0);
  EXPECT_EQ(child->Wait(), 3);
}

TEST(WaitForPortFileTest, EndsWhenInterrupted) {
  const std::string path = TempPath("interrupted.port");
  std::remove(path.c_str());
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::thread interrupter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_EQ(write(fds[1], "x", 1), 1);
  });
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<int> port = WaitForPortFile(path, 20000, nullptr, fds[0]);
  interrupter.join();
  EXPECT_THAT(port.status(), StatusIs(absl::StatusCode::kCancelled));
  EXPECT_LT(SecondsSince(start), 5.0);
  close(fds[0]);
  close(fds[1]);
}

TEST(WaitForPortFileTest, TimesOut) {
  const std::string path = TempPath("late.port");
  std::remove(path.c_str());
  absl::StatusOr<int> port = WaitForPortFile(path, 100);
  EXPECT_THAT(port.status(), StatusIs(absl::StatusCode::kDeadlineExceeded));
  // A directory that does not exist: no inotify, the same answer.
  EXPECT_THAT(WaitForPortFile(TempPath("missing-dir/x.port"), 50).status(),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
}

}  // namespace
}  // namespace memaudit
