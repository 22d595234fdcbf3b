#include "engine/classifier_run.h"

#include "common/seeding.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

// Two Gaussian-ish blobs in 16 dimensions, separable by the first pixel.
LabeledImages SyntheticBlobs(uint32_t count) {
  LabeledImages data;
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

TEST(ClassifierRunTest, LearnsSeparableData) {
  LabeledImages data = SyntheticBlobs(200);
  auto result = RunClassifier(data, SmallSpec(), nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(result->train_accuracy, 0.95);
  EXPECT_EQ(result->steps, 5u * StepsPerEpoch(100, 16));
  ASSERT_EQ(result->phi.size(), 200u);
  ASSERT_EQ(result->loss.size(), 200u);
}

TEST(ClassifierRunTest, SameSeedsGiveBitIdenticalSignals) {
  LabeledImages data = SyntheticBlobs(200);
  auto a = RunClassifier(data, SmallSpec(), nullptr);
  auto b = RunClassifier(data, SmallSpec(), nullptr);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->phi, b->phi);
  EXPECT_EQ(a->loss, b->loss);
  ClassifierRunSpec other = SmallSpec();
  other.order_seed = 13;
  auto c = RunClassifier(data, other, nullptr);
  EXPECT_NE(a->phi, c->phi);
}

TEST(ClassifierRunTest, StepCallbackCanStopTraining) {
  LabeledImages data = SyntheticBlobs(200);
  uint64_t seen = 0;
  auto result = RunClassifier(data, SmallSpec(), [&](uint64_t steps) {
    seen = steps;
    return steps < 3;
  });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(seen, 3u);
}

TEST(ClassifierRunTest, RejectsIndicesOutsideTheData) {
  LabeledImages data = SyntheticBlobs(50);
  auto result = RunClassifier(data, SmallSpec(), nullptr);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace memaudit::engine
