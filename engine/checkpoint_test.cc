// Checkpoints resume bit-exact; Fork() gives two arms one shared prefix.
#include <cstdio>
#include <filesystem>

#include "common/testing/status_matchers.h"
#include "engine/test_util.h"
#include "engine/trainer.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

using ::memaudit::testing::StatusIs;
using testing::FlatParams;
using testing::Range;

ModelFactory Factory() {
  ModelSpec spec;
  spec.kind = ModelKind::kMlp;
  spec.inputs = 8;
  spec.classes = 3;
  spec.hidden = {16, 16};
  spec.dropout = 0.2;  // exercises the dropout generator state
  return [spec] { return BuildModel(spec, 3); };
}

TrainerOptions Options(OptimizerKind kind, bool dp = false) {
  TrainerOptions o;
  o.optimizer.kind = kind;
  o.optimizer.learning_rate = 0.01;
  o.schedule.kind = LrScheduleKind::kCosine;
  o.schedule.total_steps = 40;
  o.dp.enabled = dp;
  o.dp.noise_multiplier = 0.5;
  o.dp.noise_seed = 4;
  return o;
}

TEST(CheckpointTest, SaveLoadResumesBitExact) {
  TensorDataset data = SyntheticBlobs(80, 8, 3, 2.0, 1);
  EpochSchedule schedule(Range(80), 16, 6);  // 5 steps per epoch
  const std::string path =
      (std::filesystem::temp_directory_path() / "memaudit_checkpoint_test.pt").string();
  for (OptimizerKind kind :
       {OptimizerKind::kMomentum, OptimizerKind::kAdam, OptimizerKind::kRmsProp}) {
    for (bool dp : {false, true}) {
      const uint64_t k = 13;  // not an epoch boundary
      auto straight = Trainer::Create(Factory(), Options(kind, dp));
      MEMAUDIT_ASSERT_OK(straight);
      MEMAUDIT_ASSERT_OK((*straight)->Train(data, schedule, 2 * k));

      auto first = Trainer::Create(Factory(), Options(kind, dp));
      MEMAUDIT_ASSERT_OK((*first)->Train(data, schedule, k));
      MEMAUDIT_ASSERT_OK((*first)->Save(path));
      first->reset();
      auto resumed = Trainer::Create(Factory(), Options(kind, dp));
      MEMAUDIT_ASSERT_OK((*resumed)->Load(path));
      EXPECT_EQ((*resumed)->step(), k);
      MEMAUDIT_ASSERT_OK((*resumed)->Train(data, schedule, 2 * k));
      EXPECT_EQ(FlatParams((*straight)->model()), FlatParams((*resumed)->model()))
          << static_cast<int>(kind) << " dp=" << dp;
    }
  }
  std::remove(path.c_str());
}

TEST(CheckpointTest, LoadRejectsMissingOrForeignFiles) {
  auto t = Trainer::Create(Factory(), Options(OptimizerKind::kAdam));
  EXPECT_THAT((*t)->Load("/nonexistent/ckpt"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT((*t)->Restore("not a checkpoint"), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(CheckpointTest, ForkSharesThePrefix) {
  TensorDataset data = SyntheticBlobs(80, 8, 3, 2.0, 1);
  EpochSchedule schedule(Range(80), 16, 6);
  auto base = Trainer::Create(Factory(), Options(OptimizerKind::kAdam));
  MEMAUDIT_ASSERT_OK((*base)->Train(data, schedule, 7));
  auto arm = (*base)->Fork();
  MEMAUDIT_ASSERT_OK(arm);
  EXPECT_EQ(FlatParams((*base)->model()), FlatParams((*arm)->model()));
  MEMAUDIT_ASSERT_OK((*base)->Train(data, schedule, 20));
  MEMAUDIT_ASSERT_OK((*arm)->Train(data, schedule, 20));
  EXPECT_EQ(FlatParams((*base)->model()), FlatParams((*arm)->model()));

  // Different updates after the fork diverge, and the original is untouched
  // by its fork.
  auto other = (*base)->Fork();
  const std::vector<double> before = FlatParams((*base)->model());
  MEMAUDIT_ASSERT_OK((*other)->Step(data.Gather({0, 1, 2, 3})));
  EXPECT_EQ(before, FlatParams((*base)->model()));
  MEMAUDIT_ASSERT_OK((*base)->Step(data.Gather({4, 5, 6, 7})));
  EXPECT_NE(FlatParams((*base)->model()), FlatParams((*other)->model()));
}

}  // namespace
}  // namespace memaudit::engine
