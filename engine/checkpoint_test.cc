// Checkpoints resume bit-exact; Fork() gives two arms one shared prefix.
#include <cstdio>
#include <filesystem>

#include "engine/test_util.h"
#include "engine/trainer.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

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
      ASSERT_TRUE(straight.ok());
      ASSERT_TRUE((*straight)->Train(data, schedule, 2 * k).ok());

      auto first = Trainer::Create(Factory(), Options(kind, dp));
      ASSERT_TRUE((*first)->Train(data, schedule, k).ok());
      ASSERT_TRUE((*first)->Save(path).ok());
      first->reset();
      auto resumed = Trainer::Create(Factory(), Options(kind, dp));
      ASSERT_TRUE((*resumed)->Load(path).ok());
      EXPECT_EQ((*resumed)->step(), k);
      ASSERT_TRUE((*resumed)->Train(data, schedule, 2 * k).ok());
      EXPECT_EQ(FlatParams((*straight)->model()), FlatParams((*resumed)->model()))
          << static_cast<int>(kind) << " dp=" << dp;
    }
  }
  std::remove(path.c_str());
}

TEST(CheckpointTest, LoadRejectsMissingOrForeignFiles) {
  auto t = Trainer::Create(Factory(), Options(OptimizerKind::kAdam));
  EXPECT_EQ((*t)->Load("/nonexistent/ckpt").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*t)->Restore("not a checkpoint").code(), absl::StatusCode::kInvalidArgument);
}

TEST(CheckpointTest, ForkSharesThePrefix) {
  TensorDataset data = SyntheticBlobs(80, 8, 3, 2.0, 1);
  EpochSchedule schedule(Range(80), 16, 6);
  auto base = Trainer::Create(Factory(), Options(OptimizerKind::kAdam));
  ASSERT_TRUE((*base)->Train(data, schedule, 7).ok());
  auto arm = (*base)->Fork();
  ASSERT_TRUE(arm.ok());
  EXPECT_EQ(FlatParams((*base)->model()), FlatParams((*arm)->model()));
  ASSERT_TRUE((*base)->Train(data, schedule, 20).ok());
  ASSERT_TRUE((*arm)->Train(data, schedule, 20).ok());
  EXPECT_EQ(FlatParams((*base)->model()), FlatParams((*arm)->model()));

  // Different updates after the fork diverge, and the original is untouched
  // by its fork.
  auto other = (*base)->Fork();
  const std::vector<double> before = FlatParams((*base)->model());
  ASSERT_TRUE((*other)->Step(data.Gather({0, 1, 2, 3})).ok());
  EXPECT_EQ(before, FlatParams((*base)->model()));
  ASSERT_TRUE((*base)->Step(data.Gather({4, 5, 6, 7})).ok());
  EXPECT_NE(FlatParams((*base)->model()), FlatParams((*other)->model()));
}

}  // namespace
}  // namespace memaudit::engine
