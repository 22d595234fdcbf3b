#include "cli/commands.h"

#include "gtest/gtest.h"

namespace memaudit::cli {
namespace {

TEST(DefaultWorkersTest, TwoUnlessTheyWouldShareTheCores) {
  EXPECT_EQ(DefaultWorkers(1, "cpu", 2), 2u);
  EXPECT_EQ(DefaultWorkers(2, "cpu", 2), 1u) << "2 workers x 2 threads on 2 cores";
  EXPECT_EQ(DefaultWorkers(2, "cpu", 4), 2u);
  EXPECT_EQ(DefaultWorkers(8, "cpu", 2), 1u) << "at least one";
  EXPECT_EQ(DefaultWorkers(1, "cpu", 1), 1u);
  EXPECT_EQ(DefaultWorkers(0, "cpu", 2), 2u) << "threads_per_task 0 is 1";
  EXPECT_EQ(DefaultWorkers(4, "cuda", 2), 2u) << "GPU workers train on their devices";
}

}  // namespace
}  // namespace memaudit::cli
