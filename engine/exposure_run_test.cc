#include "engine/exposure_run.h"

#include "engine/text_corpus.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

ExposureRunSpec SmallSpec() {
  ExposureRunSpec spec;
  spec.corpus_text = SyntheticText(8000, 4);
  spec.prefix = "pin ";
  spec.digits = 4;
  spec.repeats = {1, 40};
  spec.controls = 2;
  spec.units = 48;
  spec.embedding = 16;
  spec.window = 48;
  spec.batch_size = 16;
  spec.epochs = 6;
  spec.optimizer.learning_rate = 0.01;
  spec.seed = 3;
  return spec;
}

TEST(ExposureRunTest, HeavilyInsertedCanaryIsExposedAndExtracted) {
  ExposureRunSpec spec = SmallSpec();
  spec.reference_samples = 64;
  auto result = RunExposure(spec, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->canaries.size(), 4u);
  EXPECT_NEAR(result->log2_space, 13.2877, 1e-3);
  for (const auto& c : result->canaries) {
    EXPECT_TRUE(c.exact) << c.secret;
    EXPECT_GE(c.rank, 1u);
  }
  const auto& heavy = result->canaries[1];
  EXPECT_EQ(heavy.repeats, 40u);
  EXPECT_GT(heavy.exposure, 12.0);
  EXPECT_GT(heavy.exposure, result->canaries[2].exposure);  // a control
  EXPECT_TRUE(result->extracted);
  // The reference sample: |S| Px values, none below the memorized canary's.
  ASSERT_EQ(result->reference_px.size(), 64u);
  for (double px : result->reference_px) EXPECT_GT(px, heavy.px_bits);
  // Determinism: the same spec gives the same numbers.
  auto again = RunExposure(SmallSpec(), nullptr);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(again->canaries[i].px_bits, result->canaries[i].px_bits);
}

TEST(ExposureRunTest, CanaryFreeModelsScoreTheSameCanariesWithoutMemorizingThem) {
  auto trained = RunExposure(SmallSpec(), nullptr);
  ASSERT_TRUE(trained.ok()) << trained.status();
  // The baseline: same seeds, no canaries in the corpus.
  ExposureRunSpec spec = SmallSpec();
  spec.insert_canaries = false;
  spec.reference_samples = 16;
  auto baseline = RunExposure(spec, nullptr);
  ASSERT_TRUE(baseline.ok()) << baseline.status();
  ASSERT_EQ(baseline->canaries.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(baseline->canaries[i].secret, trained->canaries[i].secret);
    EXPECT_TRUE(baseline->canaries[i].exact);
  }
  EXPECT_FALSE(baseline->extracted);
  EXPECT_EQ(baseline->extraction_queries, 0u) << "nothing inserted, nothing to extract";
  EXPECT_LT(baseline->windows, trained->windows);
  EXPECT_LT(baseline->canaries[1].exposure, trained->canaries[1].exposure - 5);
  // A reference model: Px only, on its own seed; the Px path is the one the
  // exact rank starts from, so a rank-free run of the baseline agrees with it.
  spec.rank_canaries = false;
  auto px_only = RunExposure(spec, nullptr);
  ASSERT_TRUE(px_only.ok()) << px_only.status();
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(px_only->canaries[i].px_bits, baseline->canaries[i].px_bits);
    EXPECT_EQ(px_only->canaries[i].rank, 0u);
    EXPECT_FALSE(px_only->canaries[i].exact);
  }
  EXPECT_EQ(px_only->reference_px, baseline->reference_px);
  spec.model_seed = 99;
  auto reference = RunExposure(spec, nullptr);
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_EQ(reference->canaries[0].secret, trained->canaries[0].secret);
  EXPECT_NE(reference->canaries[0].px_bits, px_only->canaries[0].px_bits);
}

TEST(ExposureRunTest, DpSgdReportsEpsilonAndIsDeterministic) {
  ExposureRunSpec spec = SmallSpec();
  spec.epochs = 1;
  spec.dp = true;
  spec.dp_clip_norm = 1.0;
  spec.dp_noise_multiplier = 1.0;
  spec.dp_delta = 1e-5;
  auto a = RunExposure(spec, nullptr);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_GT(a->windows, 0u);
  // One epoch at q = 16 / windows and sigma = 1: a finite, moderate epsilon.
  EXPECT_GT(a->dp_epsilon, 0.1);
  EXPECT_LT(a->dp_epsilon, 20);
  auto b = RunExposure(spec, nullptr);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->dp_epsilon, b->dp_epsilon);
  for (size_t i = 0; i < a->canaries.size(); ++i) {
    EXPECT_EQ(a->canaries[i].px_bits, b->canaries[i].px_bits);
  }
  spec.dp = false;
  auto plain = RunExposure(spec, nullptr);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->dp_epsilon, 0);
  EXPECT_NE(plain->canaries[0].px_bits, a->canaries[0].px_bits) << "noise and clipping change it";
}

TEST(ExposureRunTest, RejectsBadSpecsAndStopsOnRequest) {
  ExposureRunSpec spec = SmallSpec();
  spec.digits = 0;
  EXPECT_EQ(RunExposure(spec, nullptr).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunExposure(SmallSpec(), [](uint64_t s) { return s < 2; }).status().code(),
            absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace memaudit::engine
