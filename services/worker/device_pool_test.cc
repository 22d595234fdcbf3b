#include "services/worker/device_pool.h"

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::worker {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(OfferedDevicesTest, EveryVisibleDeviceOrThoseListed) {
  EXPECT_THAT(*OfferedDevices("cpu", "", 0), IsEmpty());
  EXPECT_THAT(*OfferedDevices("cuda:1", "", 4), ElementsAre("cuda:1"));
  EXPECT_THAT(*OfferedDevices("cuda", "", 3), ElementsAre("cuda:0", "cuda:1", "cuda:2"));
  EXPECT_THAT(*OfferedDevices("cuda", "2,0", 3), ElementsAre("cuda:2", "cuda:0"));
}

TEST(OfferedDevicesTest, RefusesWhatIsNotDistinctDevicesOfThisMachine) {
  for (const char* bad : {"3", "-1", "0,0", "a", "1,"}) {
    absl::StatusOr<std::vector<std::string>> offered = OfferedDevices("cuda", bad, 3);
    EXPECT_THAT(offered, StatusIs(absl::StatusCode::kInvalidArgument)) << bad;
    EXPECT_NE(offered.status().message().find("--devices"), absl::string_view::npos) << bad;
  }
  EXPECT_THAT(OfferedDevices("cpu", "0", 1), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(OfferedDevices("cuda:0", "1", 2), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(PickDevicesTest, TheLowestFreeDevicesInOfferedOrder) {
  EXPECT_THAT(PickDevices(3, {}, 1), ElementsAre(0u));
  EXPECT_THAT(PickDevices(3, {0}, 1), ElementsAre(1u));
  EXPECT_THAT(PickDevices(3, {1}, 2), ElementsAre(0u, 2u));
  EXPECT_THAT(PickDevices(3, {0, 1, 2}, 1), IsEmpty());
  EXPECT_THAT(PickDevices(3, {2}, 0), IsEmpty());
  EXPECT_THAT(PickDevices(0, {}, 1), IsEmpty()) << "a CPU worker";
}

// memaudit run's workers offer the same GPUs from different first ones.
TEST(StartingAtTest, TurnsTheOfferedDevicesToStartAtTheGivenOneModuloTheirCount) {
  const std::vector<std::string> two = {"cuda:0", "cuda:1"};
  EXPECT_THAT(StartingAt(two, 0), ElementsAre("cuda:0", "cuda:1"));
  EXPECT_THAT(StartingAt(two, 1), ElementsAre("cuda:1", "cuda:0"));
  EXPECT_THAT(StartingAt(two, 3), ElementsAre("cuda:1", "cuda:0"));
  EXPECT_THAT(StartingAt({"cuda:0"}, 1), ElementsAre("cuda:0")) << "one GPU: shared";
  EXPECT_THAT(StartingAt({}, 1), IsEmpty()) << "a CPU worker";
}

}  // namespace
}  // namespace memaudit::worker
