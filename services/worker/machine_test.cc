#include "services/worker/machine.h"

#include "gtest/gtest.h"

namespace memaudit::worker {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(MachineTest, TheCgroupLimitWinsWhenLower) {
  EXPECT_EQ(LowerMemoryMb(16 * kGiB, "8589934592\n"), 8192u);  // a pod's 8Gi limit
}

TEST(MachineTest, PhysicalMemoryWinsWithoutALimit) {
  EXPECT_EQ(LowerMemoryMb(16 * kGiB, "max"), 16384u);                  // cgroup v2
  EXPECT_EQ(LowerMemoryMb(16 * kGiB, "9223372036854771712"), 16384u);  // v1's "none"
  EXPECT_EQ(LowerMemoryMb(16 * kGiB, ""), 16384u);                     // no cgroup file
  EXPECT_EQ(LowerMemoryMb(16 * kGiB, "garbage"), 16384u);
}

TEST(MachineTest, ThisMachineHasSomeMemory) { EXPECT_GT(UsableMemoryMb(), 0u); }

}  // namespace
}  // namespace memaudit::worker
