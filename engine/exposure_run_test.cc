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

TEST(ExposureRunTest, RejectsBadSpecsAndStopsOnRequest) {
  ExposureRunSpec spec = SmallSpec();
  spec.digits = 0;
  EXPECT_EQ(RunExposure(spec, nullptr).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunExposure(SmallSpec(), [](uint64_t s) { return s < 2; }).status().code(),
            absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace memaudit::engine
