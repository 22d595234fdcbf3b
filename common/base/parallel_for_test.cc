#include "common/base/parallel_for.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace memaudit {
namespace {

// Every index runs exactly once whatever the thread count (0: one per
// hardware thread), and each slot gets its own index's result.
TEST(ParallelForTest, RunsEachIndexOnceOnAnyThreadCount) {
  for (size_t threads : {0, 1, 2, 7}) {
    for (size_t n : {0, 1, 5, 100}) {
      std::vector<std::atomic<int>> runs(n);
      std::vector<size_t> squares(n, 0);
      ParallelFor(n, threads, [&](size_t i) {
        runs[i]++;
        squares[i] = i * i;
      });
      for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(runs[i].load(), 1) << "threads " << threads << " n " << n << " i " << i;
        EXPECT_EQ(squares[i], i * i);
      }
    }
  }
}

// More than one thread really runs when asked: two items that each wait
// for the other to start would never both finish on one thread.
TEST(ParallelForTest, RunsItemsSideBySide) {
  std::atomic<int> started{0};
  ParallelFor(2, 2, [&](size_t) {
    started++;
    while (started.load() < 2) std::this_thread::yield();
  });
  EXPECT_EQ(started.load(), 2);
}

}  // namespace
}  // namespace memaudit
