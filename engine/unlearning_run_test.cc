#include "engine/unlearning_run.h"

#include <cmath>

#include "common/base/seeding.h"
#include "common/testing/status_matchers.h"
#include "engine/rdp_accountant.h"
#include "engine/test_images.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

using ::memaudit::testing::StatusIs;

std::vector<uint32_t> Range(uint32_t begin, uint32_t end) {
  std::vector<uint32_t> v;
  for (uint32_t i = begin; i < end; ++i) v.push_back(i);
  return v;
}

UnlearningRunSpec Spec() {
  UnlearningRunSpec spec;
  spec.model.kind = ModelKind::kLogReg;
  spec.optimizer.kind = OptimizerKind::kSgd;
  spec.optimizer.learning_rate = 0.5;
  spec.epochs = 5;
  spec.batch_size = 8;
  spec.train_rows = Range(0, 40);
  spec.validation_rows = Range(100, 120);
  spec.seeds = {1, 2, 3, 4, 5};
  spec.releases = {{ReleaseKind::kFull},
                   {ReleaseKind::kLabelOnly},
                   {ReleaseKind::kTopK, 2},
                   {ReleaseKind::kTemperature}};
  for (uint32_t j = 0; j < 3; ++j) {
    UnlearningChildSpec c;
    c.removed = {j};
    c.queries = {j, 60 + j};  // the deleted sample, then a sample in neither model
    c.validation = Range(120 + 5 * j, 140 + 5 * j);
    c.seeds = spec.seeds;
    spec.children.push_back(c);
  }
  return spec;
}

TEST(UnlearningRunTest, ScratchReleasesBothVersionsPerPolicy) {
  const data::LabeledExamples data = BlockImages(200, 7), test = BlockImages(50, 8);
  auto run = RunUnlearning(data, &test, Spec(), nullptr);
  MEMAUDIT_ASSERT_OK(run);
  EXPECT_EQ(run->classes, 4u);
  EXPECT_EQ(run->models_trained, 4u);
  EXPECT_EQ(run->steps, 5u * 5u + 3u * 5u * 5u);  // ceil(40 / 8) and ceil(39 / 8) per epoch
  EXPECT_GT(run->train_accuracy, 0.7);
  EXPECT_GT(run->test_accuracy, 0.5);
  EXPECT_EQ(run->dp_epsilon, 0);
  ASSERT_EQ(run->children.size(), 3u);
  for (const UnlearningChildResult& c : run->children) {
    ASSERT_EQ(c.original.size(), 4u);
    ASSERT_EQ(c.unlearned.size(), 4u);
    for (size_t r = 0; r < 4; ++r) {
      ASSERT_EQ(c.original[r].size(), 2u * 4u);
      for (int q = 0; q < 2; ++q) {
        double sum = 0;
        for (int k = 0; k < 4; ++k) sum += c.unlearned[r][q * 4 + k];
        EXPECT_NEAR(sum, 1.0, 1e-12);
      }
    }
    // Label only: one-hot.
    for (double p : c.original[1]) EXPECT_TRUE(p == 0.0 || p == 1.0);
    // Top-2 keeps the two largest entries of the full posterior.
    std::vector<double> full(c.original[0].begin(), c.original[0].begin() + 4);
    std::sort(full.rbegin(), full.rend());
    std::vector<double> top2(c.original[2].begin(), c.original[2].begin() + 4);
    std::sort(top2.rbegin(), top2.rend());
    EXPECT_DOUBLE_EQ(top2[0], full[0]);
    EXPECT_DOUBLE_EQ(top2[1], full[1]);
    EXPECT_DOUBLE_EQ(top2[2], top2[3]);
  }
  // Deterministic.
  auto again = RunUnlearning(data, &test, Spec(), nullptr);
  MEMAUDIT_ASSERT_OK(again);
  EXPECT_EQ(again->children[2].unlearned[0], run->children[2].unlearned[0]);
}

TEST(UnlearningRunTest, SharedOrderMeansTheOriginalLessTheDeletion) {
  const data::LabeledExamples data = BlockImages(200, 7);
  UnlearningRunSpec spec = Spec();
  // A child that deletes nothing is the original, bit for bit.
  spec.children[0].removed.clear();
  spec.children[0].validation = spec.validation_rows;
  // An independent child (own init and order) drifts further on a sample in
  // neither model than a shared-seed child does.
  spec.children[2].shared_order = false;
  spec.children[2].seeds = {11, 12, 13, 14, 15};
  auto run = RunUnlearning(data, nullptr, spec, nullptr);
  MEMAUDIT_ASSERT_OK(run);
  for (size_t r = 0; r < spec.releases.size(); ++r) {
    EXPECT_EQ(run->children[0].original[r], run->children[0].unlearned[r]) << "release " << r;
  }
  auto drift = [&](const UnlearningChildResult& c) {
    double d = 0;
    for (int k = 4; k < 8; ++k) d += std::abs(c.original[0][k] - c.unlearned[0][k]);
    return d;
  };
  EXPECT_GT(drift(run->children[2]), drift(run->children[1]));
}

TEST(UnlearningRunTest, SisaRetrainsOnlyAffectedShardsAndAddsOnline) {
  const data::LabeledExamples data = BlockImages(200, 7);
  UnlearningRunSpec spec = Spec();
  spec.method = UnlearningMethod::kSisa;
  spec.shards = 4;
  spec.slices = 2;
  spec.children[1].added = {150, 151};
  uint64_t last = 0;
  int calls = 0;
  auto run = RunUnlearning(data, nullptr, spec, [&](uint64_t steps) {
    EXPECT_GT(steps, last);
    last = steps;
    ++calls;
    return true;
  });
  MEMAUDIT_ASSERT_OK(run);
  EXPECT_EQ(calls, 4);  // the original, then each child
  EXPECT_EQ(last, run->steps);
  // 4 shards; each child retrains one shard, the online one another too.
  EXPECT_EQ(run->models_trained, 4u + 3u + 1u);
  // Shards of 10 in slices of 5: 5 epochs x (1 + 2) steps each.
  EXPECT_GE(run->steps, 4u * 15u + 3u * 5u);
  for (const UnlearningChildResult& c : run->children) {
    double sum = 0;
    for (int k = 0; k < 4; ++k) sum += c.unlearned[0][k];
    EXPECT_NEAR(sum, 1.0, 1e-12);
  }
}

TEST(UnlearningRunTest, DpSgdReportsEpsilonAndStops) {
  const data::LabeledExamples data = BlockImages(200, 7);
  UnlearningRunSpec spec = Spec();
  spec.dp = true;
  spec.noise_multiplier = 1.1;
  spec.children.resize(1);
  auto run = RunUnlearning(data, nullptr, spec, nullptr);
  MEMAUDIT_ASSERT_OK(run);
  auto expected =
      ComputeDpSgdEpsilon(8.0 / 40.0, 1.1, 25, 1e-5, DefaultRdpOrders(), RdpConversion::kImproved);
  MEMAUDIT_ASSERT_OK(expected);
  EXPECT_NEAR(run->dp_epsilon, expected->epsilon, 1e-12);
  EXPECT_GT(run->dp_epsilon, 0);

  // A target epsilon picks the noise: the original then spends just that.
  spec.target_epsilon = 2.0;
  auto calibrated = RunUnlearning(data, nullptr, spec, nullptr);
  MEMAUDIT_ASSERT_OK(calibrated);
  EXPECT_LE(calibrated->dp_epsilon, 2.0);
  EXPECT_GT(calibrated->dp_epsilon, 2.0 - 1e-3);
  EXPECT_GT(calibrated->noise_multiplier, 1.1) << "epsilon 2 needs more noise than sigma 1.1";
  auto check = ComputeDpSgdEpsilon(8.0 / 40.0, calibrated->noise_multiplier, 25, 1e-5,
                                   DefaultRdpOrders(), RdpConversion::kImproved);
  MEMAUDIT_ASSERT_OK(check);
  EXPECT_NEAR(check->epsilon, calibrated->dp_epsilon, 1e-12);

  auto stopped = RunUnlearning(data, nullptr, Spec(), [](uint64_t steps) { return steps < 7; });
  EXPECT_THAT(stopped, StatusIs(absl::StatusCode::kCancelled));

  UnlearningRunSpec bad = Spec();
  bad.children[0].removed = {150};
  EXPECT_THAT(RunUnlearning(data, nullptr, bad, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace memaudit::engine
