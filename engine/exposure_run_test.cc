#include "engine/exposure_run.h"

#include <string>

#include "common/testing/status_matchers.h"
#include "engine/lm_search.h"
#include "engine/text_corpus.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

using ::memaudit::testing::StatusIs;

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
  MEMAUDIT_ASSERT_OK(result);
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

// The built-in transformer through the same run: the heavily inserted canary
// is exposed far more than the single one and the controls, and extracted.
TEST(ExposureRunTest, ATransformerExposesAndGivesUpTheHeavilyInsertedCanary) {
  ExposureRunSpec spec = SmallSpec();
  spec.lm = ModelKind::kTransformerLm;
  spec.layers = 2;
  spec.embedding = 32;
  spec.heads = 4;
  spec.units = 64;
  spec.optimizer.learning_rate = 3e-3;
  spec.epochs = 20;
  auto result = RunExposure(spec, nullptr);
  MEMAUDIT_ASSERT_OK(result);
  ASSERT_EQ(result->canaries.size(), 4u);
  for (const auto& c : result->canaries) EXPECT_TRUE(c.exact) << c.secret;
  const auto& once = result->canaries[0];
  const auto& heavy = result->canaries[1];
  EXPECT_EQ(heavy.repeats, 40u);
  EXPECT_GT(heavy.exposure, 12.0);
  EXPECT_GT(heavy.exposure, once.exposure + 4);
  EXPECT_GT(heavy.exposure, result->canaries[2].exposure);  // a control
  EXPECT_GT(heavy.exposure, result->canaries[3].exposure);
  EXPECT_TRUE(result->extracted);
  auto again = RunExposure(spec, nullptr);
  MEMAUDIT_ASSERT_OK(again);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(again->canaries[i].px_bits, result->canaries[i].px_bits);
}

// Extractable memorization: held-out lines of the corpus inserted 1 and 48
// times, and never. The model reproduces the 48-times sequences' next 12
// characters from their first 12, not the never-inserted ones'; a model
// without insertions trains on the same text less the sequences.
TEST(ExposureRunTest, SequencesInsertedOftenAreExtractedAndControlsAreNot) {
  ExposureRunSpec spec = SmallSpec();
  spec.epochs = 10;
  spec.extractable = {4, 12, 12, {1, 48}, 9};
  spec.reference_samples = 0;
  auto result = RunExposure(spec, nullptr);
  MEMAUDIT_ASSERT_OK(result);
  ASSERT_EQ(result->extractable.size(), 12u);
  int often = 0, controls = 0;
  uint32_t often_matched = 0, control_matched = 0;
  for (size_t i = 0; i < 12; ++i) {
    const ExtractableSequence& s = result->extractable[i];
    EXPECT_EQ(s.duplicates, i < 4 ? 1u : i < 8 ? 48u : 0u) << i;
    EXPECT_EQ(s.extracted, s.matched == 12) << i;
    if (s.duplicates == 48) often += s.extracted, often_matched += s.matched;
    if (s.duplicates == 0) controls += s.extracted, control_matched += s.matched;
  }
  EXPECT_GE(often, 3);
  EXPECT_EQ(controls, 0);
  EXPECT_GT(often_matched, control_matched + 16);
  auto again = RunExposure(spec, nullptr);
  MEMAUDIT_ASSERT_OK(again);
  for (size_t i = 0; i < 12; ++i)
    EXPECT_EQ(again->extractable[i].matched, result->extractable[i].matched);
  // A model trained without the insertions (a reference model) scores every
  // sequence and decodes none; the 48-times ones are likelier under the
  // model that saw them.
  ExposureRunSpec reference = spec;
  reference.insert_canaries = false;
  auto ref = RunExposure(reference, nullptr);
  MEMAUDIT_ASSERT_OK(ref);
  ASSERT_EQ(ref->extractable.size(), 12u);
  for (size_t i = 0; i < 12; ++i) {
    EXPECT_FALSE(ref->extractable[i].extracted) << i;
    EXPECT_EQ(ref->extractable[i].matched, 0u) << i;
    EXPECT_EQ(ref->extractable[i].duplicates, result->extractable[i].duplicates) << i;
  }
  for (size_t i = 4; i < 8; ++i) {
    EXPECT_GT(result->extractable[i].membership.loss, ref->extractable[i].membership.loss) << i;
  }
  // Too few long lines: the field is named.
  spec.extractable.sequences = 1000;
  EXPECT_THAT(RunExposure(spec, nullptr), StatusIs(absl::StatusCode::kInvalidArgument,
                                                   ::testing::HasSubstr("extractable.sequences")));
}

TEST(ExposureRunTest, CanaryFreeModelsScoreTheSameCanariesWithoutMemorizingThem) {
  auto trained = RunExposure(SmallSpec(), nullptr);
  MEMAUDIT_ASSERT_OK(trained);
  // The baseline: same seeds, no canaries in the corpus.
  ExposureRunSpec spec = SmallSpec();
  spec.insert_canaries = false;
  spec.reference_samples = 16;
  auto baseline = RunExposure(spec, nullptr);
  MEMAUDIT_ASSERT_OK(baseline);
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
  MEMAUDIT_ASSERT_OK(px_only);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(px_only->canaries[i].px_bits, baseline->canaries[i].px_bits);
    EXPECT_EQ(px_only->canaries[i].rank, 0u);
    EXPECT_FALSE(px_only->canaries[i].exact);
  }
  EXPECT_EQ(px_only->reference_px, baseline->reference_px);
  spec.model_seed = 99;
  auto reference = RunExposure(spec, nullptr);
  MEMAUDIT_ASSERT_OK(reference);
  EXPECT_EQ(reference->canaries[0].secret, trained->canaries[0].secret);
  EXPECT_NE(reference->canaries[0].px_bits, px_only->canaries[0].px_bits);
}

TEST(ExposureRunTest, EnumeratedSpaceHoldsEveryCanaryAtItsIndex) {
  ExposureRunSpec spec = SmallSpec();
  spec.epochs = 2;
  spec.enumerate_space = true;
  auto result = RunExposure(spec, nullptr);
  MEMAUDIT_ASSERT_OK(result);
  ASSERT_EQ(result->space_px.size(), 10000u);  // 4 digits
  ASSERT_EQ(result->space_index.size(), result->canaries.size());
  for (size_t i = 0; i < result->canaries.size(); ++i) {
    const CanaryExposure& c = result->canaries[i];
    // Lexicographic over "0123456789": the index is the secret's value.
    EXPECT_EQ(result->space_index[i], std::stoull(c.secret)) << c.secret;
    EXPECT_NEAR(result->space_px[result->space_index[i]], c.px_bits, 1e-4) << c.secret;
    // The exact rank counts the same space: the canary, and the others
    // within kPxTieBits of it or below.
    uint64_t rank = 1;
    for (size_t j = 0; j < result->space_px.size(); ++j) {
      rank += j != result->space_index[i] && result->space_px[j] <= c.px_bits + kPxTieBits;
    }
    EXPECT_EQ(rank, c.rank) << c.secret;
  }
  // A reference model (Px only, its own seed) enumerates the same order.
  spec.insert_canaries = false;
  spec.rank_canaries = false;
  spec.model_seed = 99;
  auto reference = RunExposure(spec, nullptr);
  MEMAUDIT_ASSERT_OK(reference);
  EXPECT_EQ(reference->space_index, result->space_index);
  for (size_t i = 0; i < reference->canaries.size(); ++i) {
    EXPECT_NEAR(reference->space_px[reference->space_index[i]], reference->canaries[i].px_bits,
                1e-4);
  }
  spec.enumerate_space = false;
  EXPECT_TRUE(RunExposure(spec, nullptr)->space_px.empty());
}

TEST(ExposureRunTest, DpSgdReportsEpsilonAndIsDeterministic) {
  ExposureRunSpec spec = SmallSpec();
  spec.epochs = 1;
  spec.dp = true;
  spec.dp_clip_norm = 1.0;
  spec.dp_noise_multiplier = 1.0;
  spec.dp_delta = 1e-5;
  auto a = RunExposure(spec, nullptr);
  MEMAUDIT_ASSERT_OK(a);
  ASSERT_GT(a->windows, 0u);
  // One epoch at q = 16 / windows and sigma = 1: a finite, moderate epsilon.
  EXPECT_GT(a->dp_epsilon, 0.1);
  EXPECT_LT(a->dp_epsilon, 20);
  auto b = RunExposure(spec, nullptr);
  MEMAUDIT_ASSERT_OK(b);
  EXPECT_EQ(a->dp_epsilon, b->dp_epsilon);
  for (size_t i = 0; i < a->canaries.size(); ++i) {
    EXPECT_EQ(a->canaries[i].px_bits, b->canaries[i].px_bits);
  }
  spec.dp = false;
  auto plain = RunExposure(spec, nullptr);
  MEMAUDIT_ASSERT_OK(plain);
  EXPECT_EQ(plain->dp_epsilon, 0);
  EXPECT_NE(plain->canaries[0].px_bits, a->canaries[0].px_bits) << "noise and clipping change it";
}

TEST(ExposureRunTest, RejectsBadSpecsAndStopsOnRequest) {
  ExposureRunSpec spec = SmallSpec();
  spec.digits = 0;
  EXPECT_THAT(RunExposure(spec, nullptr), StatusIs(absl::StatusCode::kInvalidArgument));
  spec = SmallSpec();
  spec.epochs = 0;  // would train zero steps and report a 0/0 loss
  EXPECT_EQ(RunExposure(spec, nullptr).status().message(), "epochs: must be > 0");
  EXPECT_THAT(RunExposure(SmallSpec(), [](uint64_t s) { return s < 2; }),
              StatusIs(absl::StatusCode::kCancelled));
}

void ExpectSameCanaries(const std::vector<CanaryExposure>& a, const std::vector<CanaryExposure>& b,
                        const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].secret, b[i].secret) << what << " canary " << i;
    EXPECT_EQ(a[i].px_bits, b[i].px_bits) << what << " canary " << i;
    EXPECT_EQ(a[i].rank, b[i].rank) << what << " canary " << i;
    EXPECT_EQ(a[i].exact, b[i].exact) << what << " canary " << i;
    EXPECT_EQ(a[i].exposure, b[i].exposure) << what << " canary " << i;
  }
}

TEST(ExposureRunTest, EvaluationPointsMeasureEveryEpochWithoutChangingTraining) {
  ExposureRunSpec spec = SmallSpec();
  spec.dropout = 0.1;  // measuring must not draw from the dropout generator
  spec.reference_samples = 32;
  auto plain = RunExposure(spec, nullptr);
  MEMAUDIT_ASSERT_OK(plain);
  EXPECT_TRUE(plain->points.empty());
  spec.eval_every_epoch = true;
  std::vector<uint64_t> streamed;
  auto curve = RunExposure(spec, nullptr, [&](const ExposurePoint& p) {
    streamed.push_back(p.steps);
    return absl::OkStatus();
  });
  MEMAUDIT_ASSERT_OK(curve);
  // Training is bit-identical: same loss, same final numbers, same S, same
  // extraction.
  EXPECT_EQ(curve->steps, plain->steps);
  EXPECT_EQ(curve->final_loss, plain->final_loss);
  ExpectSameCanaries(curve->canaries, plain->canaries, "final");
  EXPECT_EQ(curve->reference_px, plain->reference_px);
  EXPECT_EQ(curve->extracted, plain->extracted);
  EXPECT_EQ(curve->extraction_queries, plain->extraction_queries);
  // One point per epoch (6), the last the final model, streamed in order.
  ASSERT_EQ(curve->points.size(), 6u);
  const uint64_t per_epoch = plain->steps / 6;
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(curve->points[i].steps, (i + 1) * per_epoch);
    ASSERT_EQ(curve->points[i].canaries.size(), 4u);
    for (const CanaryExposure& c : curve->points[i].canaries) EXPECT_GE(c.rank, 1u);
  }
  EXPECT_EQ(streamed, std::vector<uint64_t>({per_epoch, 2 * per_epoch, 3 * per_epoch, 4 * per_epoch,
                                             5 * per_epoch, 6 * per_epoch}));
  ExpectSameCanaries(curve->points.back().canaries, curve->canaries, "last point");
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(curve->points[i].final, i == 5);
  // A point mid-training is what the final measurement of a model trained
  // that far gives (2 epochs: the same schedule's first 2 * per_epoch steps).
  ExposureRunSpec two_epochs = SmallSpec();
  two_epochs.dropout = 0.1;
  two_epochs.epochs = 2;
  auto two = RunExposure(two_epochs, nullptr);
  MEMAUDIT_ASSERT_OK(two);
  ExpectSameCanaries(curve->points[1].canaries, two->canaries, "epoch 2");
  // The x40 canary becomes more exposed as training goes on.
  EXPECT_GT(curve->points.back().canaries[1].exposure, curve->points.front().canaries[1].exposure);
}

TEST(ExposureRunTest, EvaluationPointsEveryKSteps) {
  ExposureRunSpec spec = SmallSpec();
  auto plain = RunExposure(spec, nullptr);
  MEMAUDIT_ASSERT_OK(plain);
  spec.eval_every_steps = 7;
  auto curve = RunExposure(spec, nullptr);
  MEMAUDIT_ASSERT_OK(curve);
  EXPECT_EQ(curve->final_loss, plain->final_loss);
  ExpectSameCanaries(curve->canaries, plain->canaries, "final");
  const size_t expected = (plain->steps + 6) / 7;  // 7, 14, ... < steps, then the final model
  ASSERT_EQ(curve->points.size(), expected);
  for (size_t i = 0; i + 1 < expected; ++i) EXPECT_EQ(curve->points[i].steps, 7 * (i + 1));
  EXPECT_EQ(curve->points.back().steps, plain->steps);
  // A failing point callback stops the run with its status.
  auto stopped = RunExposure(
      spec, nullptr, [](const ExposurePoint&) { return absl::UnavailableError("scorer gone"); });
  EXPECT_THAT(stopped, StatusIs(absl::StatusCode::kUnavailable));
  spec.eval_every_epoch = true;  // both: refused
  EXPECT_THAT(RunExposure(spec, nullptr), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace memaudit::engine
