#include "engine/dp_audit_run.h"

#include <cmath>
#include <numeric>

#include "common/base/seeding.h"
#include "common/testing/status_matchers.h"
#include "engine/test_images.h"
#include "gtest/gtest.h"
#include "scoring/one_run_audit.h"

namespace memaudit::engine {
namespace {

using ::memaudit::testing::StatusIs;

constexpr uint32_t kPixels = 4096;
constexpr uint32_t kClasses = 10;
constexpr double kDelta = 1e-5;

// 64x64 images in which class y lights pixel y only: every other pixel is
// 0, so a logistic regression's weights on them (99.7% of its 40,970) get
// no gradient from the data and a gradient canary there is seen against the
// noise alone.
data::LabeledExamples SparseImages(uint32_t count, uint64_t seed) {
  data::LabeledExamples d;
  d.count = count;
  d.features = kPixels;
  d.classes = kClasses;
  SplitMix64 rng(seed);
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t y = static_cast<uint8_t>(rng.Uniform(kClasses));
    d.labels.push_back(y);
    for (uint32_t f = 0; f < kPixels; ++f) {
      d.pixels.push_back(f == y ? static_cast<uint8_t>(128 + rng.Uniform(128)) : 0);
    }
  }
  return d;
}

std::vector<uint8_t> Bits(uint32_t m, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<uint8_t> bits(m);
  for (uint8_t& b : bits) b = static_cast<uint8_t>(rng.Next() >> 63);
  return bits;
}

// m gradient canaries in a DP-SGD run of a logistic regression on 500 rows:
// 200 steps, so an included canary is sampled about 200 q = 6.7 times
// (q = 50 / (500 + its ~m/2 included peers)).
DpAuditRunSpec GradientSpec(uint32_t m, uint64_t seed) {
  DpAuditRunSpec spec;
  spec.model.kind = ModelKind::kLogReg;
  spec.optimizer.kind = OptimizerKind::kSgd;
  spec.optimizer.learning_rate = 0.1;
  spec.epochs = 20;
  spec.batch_size = 50;
  spec.dp = true;
  spec.clip_norm = 1.0;
  spec.dp_delta = kDelta;
  for (uint32_t r = 0; r < 500; ++r) spec.train_rows.push_back(r);
  spec.gradient_canaries = true;
  spec.included = Bits(m, DeriveSeed(seed, "included", 0));
  spec.init_seed = DeriveSeed(seed, "init", 0);
  spec.order_seed = DeriveSeed(seed, "order", 0);
  spec.noise_seed = DeriveSeed(seed, "noise", 0);
  spec.canary_seed = DeriveSeed(seed, "canaries", 0);
  return spec;
}

scoring::OneRunAuditResult Audit(const DpAuditRunResult& run, const std::vector<uint8_t>& in) {
  auto audit =
      scoring::AuditOneRun(run.scores, in, scoring::DefaultGuessBudgets(in.size()), kDelta, 0.95);
  EXPECT_TRUE(audit.ok()) << audit.status();
  return *audit;
}

TEST(DpAuditRunTest, TheSameSpecGivesTheSameBits) {
  const data::LabeledExamples data = SparseImages(600, 1);
  DpAuditRunSpec spec = GradientSpec(400, 3);
  spec.noise_multiplier = 1.0;
  auto a = RunDpAudit(data, spec, nullptr);
  auto b = RunDpAudit(data, spec, nullptr);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(a->scores.size(), 400u);
  EXPECT_EQ(a->scores, b->scores);
  EXPECT_EQ(a->steps, 20 * 10u);  // 500 rows / 50 per batch, 20 epochs
  EXPECT_GT(a->dp_epsilon, 0);
  EXPECT_EQ(a->noise_multiplier, 1.0);
}

// The soundness the one-run bound promises: a correct DP-SGD run is never
// shown to spend more than its accountant's epsilon (20 seeds at each of
// epsilon 1 and 4; at 95% confidence a single failure would be a 5% event,
// and the bound is conservative, so none is expected).
TEST(DpAuditRunTest, TheLowerBoundNeverExceedsTheAccountantsEpsilon) {
  const data::LabeledExamples data = SparseImages(600, 1);
  for (const double target : {1.0, 4.0}) {
    double largest = 0;
    for (uint64_t seed = 0; seed < 20; ++seed) {
      DpAuditRunSpec spec = GradientSpec(1000, 100 + seed);
      spec.target_epsilon = target;
      auto run = RunDpAudit(data, spec, nullptr);
      ASSERT_TRUE(run.ok()) << run.status();
      EXPECT_NEAR(run->dp_epsilon, target, 1e-3 * target);
      const scoring::OneRunAuditResult audit = Audit(*run, spec.included);
      EXPECT_LE(audit.epsilon_lower, run->dp_epsilon) << "seed " << seed;
      EXPECT_LE(audit.gdp_epsilon_lower, run->dp_epsilon) << "seed " << seed;
      largest = std::max(largest, audit.epsilon_lower);
    }
    // ... and not vacuously: the bound finds a good part of the budget.
    std::printf("target %g: largest lower bound over 20 seeds %g\n", target, largest);
    EXPECT_GT(largest, 0.15 * target) << "target " << target;
  }
}

// With no noise the canaries are seen exactly: the bound reaches what m
// canaries can prove at all.
TEST(DpAuditRunTest, WithoutNoiseTheBoundReachesWhatTheCanariesCanProve) {
  const data::LabeledExamples data = SparseImages(600, 1);
  DpAuditRunSpec spec = GradientSpec(1000, 5);
  spec.noise_multiplier = 0;
  auto run = RunDpAudit(data, spec, nullptr);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(std::isinf(run->dp_epsilon));
  const scoring::OneRunAuditResult audit = Audit(*run, spec.included);
  const double certifiable = scoring::PerfectAttackEpsilon(
      spec.included, scoring::DefaultGuessBudgets(1000), kDelta, 0.95);
  EXPECT_GT(certifiable, 4.0);
  EXPECT_GE(audit.epsilon_lower, 0.9 * certifiable);
}

// The audit catches a broken DP-SGD: a run claiming epsilon 1 whose noise is
// a tenth of what the accountant assumed.
TEST(DpAuditRunTest, ABrokenNoiseScaleIsCaught) {
  const data::LabeledExamples data = SparseImages(600, 1);
  DpAuditRunSpec spec = GradientSpec(1000, 9);
  spec.target_epsilon = 1.0;
  auto honest = RunDpAudit(data, spec, nullptr);
  ASSERT_TRUE(honest.ok()) << honest.status();
  spec.target_epsilon = 0;
  spec.noise_multiplier = honest->noise_multiplier / 10;
  auto broken = RunDpAudit(data, spec, nullptr);
  ASSERT_TRUE(broken.ok()) << broken.status();
  EXPECT_GT(Audit(*broken, spec.included).epsilon_lower, 1.0);
}

// Mislabelled input canaries that train have a lower loss than those that
// do not.
TEST(DpAuditRunTest, IncludedInputCanariesScoreHigher) {
  const data::LabeledExamples data = BlockImages(400, 2);
  DpAuditRunSpec spec;
  spec.model.kind = ModelKind::kMlp;
  spec.model.hidden = {256};
  spec.optimizer.kind = OptimizerKind::kSgd;
  spec.optimizer.learning_rate = 0.2;
  spec.epochs = 100;
  spec.batch_size = 32;
  for (uint32_t r = 200; r < 400; ++r) spec.train_rows.push_back(r);
  spec.included = Bits(200, 4);
  for (uint32_t i = 0; i < 200; ++i) {
    spec.canary_rows.push_back(i);
    spec.canary_labels.push_back((data.labels[i] + 1) % 4);
  }
  auto run = RunDpAudit(data, spec, nullptr);
  ASSERT_TRUE(run.ok()) << run.status();
  double in = 0, out = 0;
  const double n_in = std::accumulate(spec.included.begin(), spec.included.end(), 0.0);
  for (size_t i = 0; i < spec.included.size(); ++i) {
    (spec.included[i] ? in : out) += run->scores[i];
  }
  EXPECT_GT(in / n_in, out / (200 - n_in) + 0.25);
  EXPECT_EQ(run->dp_epsilon, 0);
  EXPECT_GT(run->train_accuracy, 0.8);

  // The same run scored by the logit-scaled confidence (the same bits
  // trained): phi = log(p / (1 - p)) >= log p = -loss for every canary, and
  // it separates the included ones too.
  spec.scaled_logit_score = true;
  auto scaled = RunDpAudit(data, spec, nullptr);
  ASSERT_TRUE(scaled.ok()) << scaled.status();
  double in_phi = 0, out_phi = 0;
  for (size_t i = 0; i < spec.included.size(); ++i) {
    (spec.included[i] ? in_phi : out_phi) += scaled->scores[i];
    // phi >= log p = -loss, with equality only when p_y -> 0.
    EXPECT_GE(scaled->scores[i], run->scores[i] - 1e-12) << i;
  }
  EXPECT_GT(in_phi / n_in, out_phi / (200 - n_in) + 0.25);
}

TEST(DpAuditRunTest, BadSpecsAreRefusedByField) {
  const data::LabeledExamples data = SparseImages(100, 1);
  DpAuditRunSpec spec = GradientSpec(10, 1);
  spec.dp = false;
  EXPECT_THAT(RunDpAudit(data, spec, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, "gradient_canaries: need DP-SGD"));
  spec = GradientSpec(50000, 1);  // more canaries than the 40,970 parameters
  spec.train_rows = {0, 1, 2};
  EXPECT_THAT(RunDpAudit(data, spec, nullptr).status().message(),
              ::testing::HasSubstr("canaries: 50000 gradient canaries"));
  spec = GradientSpec(10, 1);
  spec.gradient_canaries = false;
  EXPECT_THAT(RunDpAudit(data, spec, nullptr).status().message(),
              ::testing::HasSubstr("canary_rows, canary_labels"));
}

}  // namespace
}  // namespace memaudit::engine
