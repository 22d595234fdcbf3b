#include "cli/commands.h"

#include "common/training/device_name.h"
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

// `memaudit run` refuses, before it starts anything, a device whose workers
// would never take the spec's tasks (it used to wait for them forever).
TEST(CheckDeviceServesSpecTest, GpuTasksNeedCudaWorkersAndCpuTasksCpuWorkers) {
  EXPECT_TRUE(CheckDeviceServesSpec("cpu", 0).ok());
  EXPECT_TRUE(CheckDeviceServesSpec("cuda", 1).ok());
  EXPECT_TRUE(CheckDeviceServesSpec("cuda:1", 1).ok());
  EXPECT_TRUE(CheckDeviceServesSpec("auto", 0).ok()) << "resolved by each worker";
  EXPECT_TRUE(CheckDeviceServesSpec("auto", 1).ok());
  const absl::Status cpu = CheckDeviceServesSpec("cpu", 1);
  EXPECT_EQ(cpu.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(cpu.message().find("resources.gpus_per_task: 1"), absl::string_view::npos)
      << cpu.message();
  const absl::Status cuda = CheckDeviceServesSpec("cuda:0", 0);
  EXPECT_EQ(cuda.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(cuda.message().find("--device cpu"), absl::string_view::npos) << cuda.message();
}

}  // namespace
}  // namespace memaudit::cli
