#include "engine/classifier_run.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
#include "common/testing/status_matchers.h"
#include "engine/device.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

using ::memaudit::testing::StatusIs;

// Two Gaussian-ish blobs in 16 dimensions, separable by the first pixel.
data::LabeledExamples SyntheticBlobs(uint32_t count) {
  data::LabeledExamples data;
  data.count = count;
  data.features = 16;
  data.classes = 2;
  SplitMix64 rng(5);
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t label = i % 2;
    data.labels.push_back(label);
    for (uint32_t f = 0; f < 16; ++f) {
      const uint64_t noise = rng.Uniform(60);
      data.pixels.push_back(static_cast<uint8_t>((f == 0 ? label * 150 : 60) + noise));
    }
  }
  return data;
}

ClassifierRunSpec SmallSpec() {
  ClassifierRunSpec spec;
  spec.hidden = {8};
  spec.learning_rate = 0.1;
  spec.epochs = 5;
  spec.batch_size = 16;
  spec.init_seed = 11;
  spec.order_seed = 12;
  for (uint32_t i = 0; i < 100; ++i) spec.train_indices.push_back(i);
  for (uint32_t i = 0; i < 200; ++i) spec.eval_indices.push_back(i);
  return spec;
}

// A task holding several devices (the worker pins its thread to them)
// trains a CNN data-parallel across them: repeatable bit for bit, and one
// device's training up to rounding. Two CPU ranks here (Gloo).
TEST(ClassifierRunTest, ACnnTrainsDataParallelOnTheThreadsDevices) {
  data::LabeledExamples data = SyntheticBlobs(200);
  ClassifierRunSpec spec = SmallSpec();
  ModelSpec cnn;
  cnn.kind = ModelKind::kCnn;
  cnn.hidden = {2, 4, 8};
  spec.model = cnn;  // the 16 features as one 4x4 channel
  auto one = RunClassifier(data, spec, nullptr);
  MEMAUDIT_ASSERT_OK(one);
  MEMAUDIT_ASSERT_OK(SetThreadDevices({"cpu", "cpu"}));
  auto a = RunClassifier(data, spec, nullptr);
  auto b = RunClassifier(data, spec, nullptr);
  ClassifierRunSpec mlp = SmallSpec();
  absl::Status refused = RunClassifier(data, mlp, nullptr).status();
  MEMAUDIT_ASSERT_OK(SetThreadDevices({}));
  if (a.status().code() == absl::StatusCode::kUnimplemented) GTEST_SKIP() << a.status();
  MEMAUDIT_ASSERT_OK(a);
  MEMAUDIT_ASSERT_OK(b);
  EXPECT_EQ(a->phi, b->phi) << "two ranks repeat bit for bit";
  EXPECT_EQ(a->steps, one->steps);
  double worst = 0;
  for (size_t i = 0; i < one->phi.size(); ++i) {
    worst = std::max(worst, std::abs(a->phi[i] - one->phi[i]));
  }
  EXPECT_LT(worst, 1e-3) << "data-parallel training is one device's up to rounding";
  EXPECT_EQ(a->train_accuracy, one->train_accuracy);
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument))
      << "an MLP ensemble trains on one device";
}

TEST(ClassifierRunTest, LearnsSeparableData) {
  data::LabeledExamples data = SyntheticBlobs(200);
  auto result = RunClassifier(data, SmallSpec(), nullptr);
  MEMAUDIT_ASSERT_OK(result);
  EXPECT_GT(result->train_accuracy, 0.95);
  EXPECT_EQ(result->steps, 5u * StepsPerEpoch(100, 16));
  ASSERT_EQ(result->phi.size(), 200u);
  ASSERT_EQ(result->loss.size(), 200u);
}

TEST(ClassifierRunTest, SameSeedsGiveBitIdenticalSignals) {
  data::LabeledExamples data = SyntheticBlobs(200);
  auto a = RunClassifier(data, SmallSpec(), nullptr);
  auto b = RunClassifier(data, SmallSpec(), nullptr);
  MEMAUDIT_ASSERT_OK(a);
  MEMAUDIT_ASSERT_OK(b);
  EXPECT_EQ(a->phi, b->phi);
  EXPECT_EQ(a->loss, b->loss);
  ClassifierRunSpec other = SmallSpec();
  other.order_seed = 13;
  auto c = RunClassifier(data, other, nullptr);
  EXPECT_NE(a->phi, c->phi);
}

TEST(ClassifierRunTest, StepCallbackCanStopTraining) {
  data::LabeledExamples data = SyntheticBlobs(200);
  uint64_t seen = 0;
  auto result = RunClassifier(data, SmallSpec(), [&](uint64_t steps) {
    seen = steps;
    return steps < 3;
  });
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kCancelled));
  EXPECT_EQ(seen, 3u);
}

// The membership recipe (momentum, weight decay, keep-matrix halves of an
// even pool, a short last batch): every packed member is bit-identical to
// its model trained alone, for logistic regression and MLPs, including
// widths whose GEMMs take LibTorch's naive small-matrix kernel (hidden 8).
TEST(ClassifierRunTest, PackedMembersEqualSingleRunsBitExact) {
  data::LabeledExamples data = SyntheticBlobs(300);
  const KeepMatrix keep = BuildKeepMatrix(3, 4, 200);
  for (uint32_t threads : {2u, 1u}) {
    for (const std::vector<uint32_t>& hidden : std::vector<std::vector<uint32_t>>{{}, {8}, {64}}) {
      std::vector<ClassifierRunSpec> runs;
      for (uint32_t i = 0; i < 4; ++i) {
        ClassifierRunSpec run = SmallSpec();
        run.hidden = hidden;
        run.weight_decay = 5e-4;
        run.epochs = 3;
        run.threads = threads;
        run.init_seed = DeriveSeed(9, "init", i);
        run.order_seed = DeriveSeed(9, "order", i);
        run.train_indices.clear();
        for (uint32_t j = 0; j < 200; ++j) {
          if (keep.in(i, j)) run.train_indices.push_back(j);
        }
        run.eval_indices.clear();
        for (uint32_t j = 0; j < 300; ++j) run.eval_indices.push_back(j);
        runs.push_back(std::move(run));
      }
      uint64_t last_step = 0;
      auto packed = RunClassifiers(data, runs, [&](uint64_t steps) {
        last_step = steps;
        return true;
      });
      MEMAUDIT_ASSERT_OK(packed);
      ASSERT_EQ(packed->size(), 4u);
      EXPECT_EQ(last_step, 3u * StepsPerEpoch(100, 16));
      for (uint32_t i = 0; i < 4; ++i) {
        auto alone = RunClassifier(data, runs[i], nullptr);
        MEMAUDIT_ASSERT_OK(alone);
        const std::string where =
            absl::StrCat("threads ", threads, " hidden ", hidden.size(), " model ", i);
        EXPECT_EQ((*packed)[i].phi, alone->phi) << where;
        EXPECT_EQ((*packed)[i].loss, alone->loss) << where;
        EXPECT_EQ((*packed)[i].train_accuracy, alone->train_accuracy) << where;
        EXPECT_EQ((*packed)[i].steps, alone->steps) << where;
      }
      // Packing in another grouping (two pairs) changes nothing either.
      auto pair = RunClassifiers(data, {runs[2], runs[3]}, nullptr);
      MEMAUDIT_ASSERT_OK(pair);
      EXPECT_EQ((*pair)[1].phi, (*packed)[3].phi);
    }
  }
}

TEST(ClassifierRunTest, PackingRefusesWhatIsNotExact) {
  data::LabeledExamples data = SyntheticBlobs(200);
  ClassifierRunSpec a = SmallSpec();
  ClassifierRunSpec b = SmallSpec();
  b.train_indices.pop_back();  // unequal sizes would pad batches
  EXPECT_THAT(RunClassifiers(data, {a, b}, nullptr), StatusIs(absl::StatusCode::kInvalidArgument));
  b = SmallSpec();
  b.learning_rate = 0.2;  // not one recipe
  EXPECT_THAT(RunClassifiers(data, {a, b}, nullptr), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(RunClassifiers(data, {}, nullptr), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ClassifierRunTest, RejectsIndicesOutsideTheData) {
  data::LabeledExamples data = SyntheticBlobs(50);
  auto result = RunClassifier(data, SmallSpec(), nullptr);
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace memaudit::engine
