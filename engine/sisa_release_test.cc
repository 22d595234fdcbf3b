#include <cmath>

#include "common/base/seeding.h"
#include "common/testing/status_matchers.h"
#include "engine/release.h"
#include "engine/sisa.h"
#include "engine/test_util.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

using ::memaudit::testing::StatusIs;

ModelSpec Spec() {
  ModelSpec spec;
  spec.kind = ModelKind::kMlp;
  spec.inputs = 8;
  spec.classes = 3;
  spec.hidden = {16};
  return spec;
}

TrainerOptions Options() {
  TrainerOptions o;
  o.optimizer.kind = OptimizerKind::kMomentum;
  o.optimizer.learning_rate = 0.05;
  return o;
}

TEST(SisaTest, DeletionRetrainsOnlyTheShardFromItsSliceCheckpoint) {
  TensorDataset data = SyntheticBlobs(120, 8, 3, 2.0, 5);
  SisaLayout layout = BuildSisaLayout(testing::Range(120), 3, 4, 1);
  SisaOptions sisa;
  sisa.batch_size = 8;
  sisa.epochs_per_slice = 2;
  auto a = SisaEnsemble::Create(Spec(), Options(), layout, sisa);
  MEMAUDIT_ASSERT_OK(a);
  MEMAUDIT_ASSERT_OK((*a)->TrainAll(data));
  const std::vector<uint64_t> steps_before = (*a)->steps_trained();
  std::vector<std::vector<double>> before;
  for (uint32_t s = 0; s < 3; ++s) before.push_back(testing::FlatParams((*a)->shard_model(s)));

  const int64_t victim = layout.rows[1][2][0];  // shard 1, slice 2
  auto retrained = (*a)->Delete(data, {victim});
  MEMAUDIT_ASSERT_OK(retrained);
  EXPECT_EQ(*retrained, std::vector<uint32_t>{1});
  EXPECT_EQ(testing::FlatParams((*a)->shard_model(0)), before[0]);
  EXPECT_EQ(testing::FlatParams((*a)->shard_model(2)), before[2]);
  EXPECT_NE(testing::FlatParams((*a)->shard_model(1)), before[1]);
  // Only slices 2..3 of shard 1 were retrained.
  EXPECT_EQ((*a)->steps_trained()[0], steps_before[0]);
  EXPECT_LT((*a)->steps_trained()[1] - steps_before[1], steps_before[1]);

  // The result equals SISA trained from scratch without the victim.
  SisaLayout without = layout;
  auto& slice = without.rows[1][2];
  slice.erase(slice.begin());
  auto b = SisaEnsemble::Create(Spec(), Options(), without, sisa);
  MEMAUDIT_ASSERT_OK((*b)->TrainAll(data));
  for (uint32_t s = 0; s < 3; ++s) {
    EXPECT_EQ(testing::FlatParams((*a)->shard_model(s)), testing::FlatParams((*b)->shard_model(s)));
  }
  torch::Tensor p = (*a)->Posteriors(data.x());
  EXPECT_TRUE(torch::allclose(p.sum(1), torch::ones({120}, torch::kFloat64)));
  EXPECT_THAT((*a)->Delete(data, {victim}), StatusIs(absl::StatusCode::kNotFound));

  // Online deletion: the victim's replacement goes to the smallest shard
  // (shard 1, one row short), retraining only its last slice.
  const uint64_t steps_now = (*a)->steps_trained()[1];
  auto added = (*a)->Add(data, {victim});
  MEMAUDIT_ASSERT_OK(added);
  EXPECT_EQ(*added, 1u);
  EXPECT_EQ((*a)->steps_trained()[0], steps_before[0]);
  EXPECT_EQ((*a)->layout().rows[1][3].back(), victim);
  EXPECT_LT((*a)->steps_trained()[1] - steps_now, steps_now - steps_before[1]);
}

TEST(ReleaseTest, PoliciesShapeThePosterior) {
  torch::Tensor z = torch::tensor({{2.0, 1.0, 0.0, -1.0}, {0.0, 3.0, 0.5, 0.2}}, torch::kFloat64);
  torch::Tensor full = ReleasedPosteriors(z, {ReleaseKind::kFull});
  torch::Tensor top2 = ReleasedPosteriors(z, {ReleaseKind::kTopK, 2});
  EXPECT_TRUE(torch::allclose(top2.sum(1), torch::ones({2}, torch::kFloat64)));
  EXPECT_DOUBLE_EQ(top2[0][0].item<double>(), full[0][0].item<double>());
  EXPECT_DOUBLE_EQ(top2[0][2].item<double>(), top2[0][3].item<double>());
  EXPECT_NEAR(top2[0][2].item<double>(),
              (1 - full[0][0].item<double>() - full[0][1].item<double>()) / 2, 1e-15);
  torch::Tensor label = ReleasedPosteriors(z, {ReleaseKind::kLabelOnly});
  EXPECT_EQ(label[1][1].item<double>(), 1.0);
  EXPECT_EQ(label.sum().item<double>(), 2.0);
  torch::Tensor hot = ReleasedPosteriors(z, {ReleaseKind::kTemperature}, 100.0);
  EXPECT_NEAR(hot[0][0].item<double>(), 0.25, 0.01);
}

TEST(ReleaseTest, FitsTheTemperatureThatGeneratedTheLabels) {
  // Labels drawn from softmax(z / 2.5): the fitted temperature is about 2.5.
  SplitMix64 rng(3);
  const int n = 20000, c = 5;
  torch::Tensor z = torch::empty({n, c}, torch::kFloat64);
  torch::Tensor y = torch::empty({n}, torch::kLong);
  for (int i = 0; i < n; ++i) {
    double p[c], total = 0;
    for (int j = 0; j < c; ++j) {
      const double v = (rng.UniformDouble() - 0.5) * 12;
      z[i][j] = v;
      p[j] = std::exp(v / 2.5);
      total += p[j];
    }
    double u = rng.UniformDouble() * total;
    int label = 0;
    while (label < c - 1 && (u -= p[label]) > 0) ++label;
    y[i] = label;
  }
  EXPECT_NEAR(FitTemperature(z, y), 2.5, 0.1);
}

}  // namespace
}  // namespace memaudit::engine
