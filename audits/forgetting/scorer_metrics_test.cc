#include "audits/forgetting/scorer_metrics.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "audits/forgetting/attacks.h"
#include "audits/forgetting/signals.h"
#include "common/testing/promtool.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::scorer {
namespace {

using forgetting::ForgettingLiraScores;
using ::testing::HasSubstr;
using ::testing::Not;

v1::AuditSpec Spec() {
  v1::AuditSpec spec;
  spec.set_name("test");
  v1::ForgettingAudit* f = spec.mutable_forgetting();
  f->set_strategy("inject");
  f->set_attack("checkpoint_calibrated");
  f->set_fpr(0.1);
  f->set_trials(2);
  f->mutable_injected()->set_size(10);
  f->add_eval_points(0);
  f->add_eval_points(100);
  return spec;
}

// Point 0: the injected arm's calibrated scores all beat the baseline's.
// Point 100: identical arms, nothing to tell apart.
ForgettingSignals HandBuilt() {
  ForgettingSignals s;
  for (uint32_t t = 0; t < 2; ++t) {
    std::vector<double> ckpt(10), base(10), high(10);
    for (int i = 0; i < 10; ++i) {
      ckpt[i] = i * 0.1;
      base[i] = ckpt[i] + 0.01 * i;
      high[i] = ckpt[i] + 5 + i;
    }
    s[{forgetting::kCheckpointPoint, forgetting::kPhiCheckpoint}][t] = ckpt;
    s[{forgetting::kCheckpointPoint, forgetting::kLossCheckpoint}][t] = ckpt;
    s[{"0", forgetting::kPhiInjected}][t] = high;
    s[{"0", forgetting::kPhiBaseline}][t] = base;
    s[{"0", forgetting::kLossInjected}][t] = base;
    s[{"0", forgetting::kLossBaseline}][t] = base;
    s[{"100", forgetting::kPhiInjected}][t] = base;
    s[{"100", forgetting::kPhiBaseline}][t] = base;
    s[{"100", forgetting::kLossInjected}][t] = base;
    s[{"100", forgetting::kLossBaseline}][t] = base;
  }
  return s;
}

TEST(ForgettingMetricsTest, CurveSeparatesThenForgets) {
  auto results = ScoreForgetting(Spec(), HandBuilt());
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_EQ(results->kind(), v1::FORGETTING);
  const v1::ForgettingResults& f = results->forgetting();
  ASSERT_EQ(f.curve_size(), 2);
  EXPECT_EQ(f.curve(0).steps_since_injection(), 0u);
  EXPECT_DOUBLE_EQ(f.curve(0).accuracy().mean(), 1.0);
  EXPECT_DOUBLE_EQ(f.curve(0).auc().mean(), 1.0);
  EXPECT_DOUBLE_EQ(f.curve(0).tpr().mean(), 1.0);
  EXPECT_EQ(f.curve(0).epsilon_clamped_trials(), 2u);  // FPR = 0: clamped to 1/10
  EXPECT_NEAR(f.curve(0).epsilon().mean(), std::log(10.0), 1e-12);
  EXPECT_EQ(f.curve(1).steps_since_injection(), 100u);
  EXPECT_LE(f.curve(1).accuracy().mean(), 0.5 + 1e-12);
  EXPECT_NEAR(f.curve(1).auc().mean(), 0.5, 1e-12);
}

// The value of `series` (its name and labels as exposed) in an exposition;
// NaN when it is absent.
double Sample(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return std::nan("");
  return std::strtod(text.c_str() + at + series.size() + 2, nullptr);
}

// How many series of `family` an exposition holds.
size_t SeriesOf(const std::string& text, const std::string& family) {
  size_t series = 0;
  for (size_t at = 0; (at = text.find("\n" + family + "{", at)) != std::string::npos; ++at) {
    ++series;
  }
  return series;
}

TEST(ForgettingMetricsTest, CurveGaugesCarryTheIntervalAroundTheMean) {
  v1::AuditResults results;
  results.set_audit_id("a-1");
  v1::ForgettingResults* f = results.mutable_forgetting();
  f->set_strategy("inject");
  f->set_fpr_target(0.1);
  struct Point {
    uint64_t steps;
    double mean, low, high;
  };
  for (const Point& p :
       {Point{0, 0.9, 0.8, 1.0}, Point{50, 0.7, 0.61, 0.79}, Point{400, 0.55, 0.5, 0.6}}) {
    v1::ForgettingCurvePoint* c = f->add_curve();
    c->set_steps_since_injection(p.steps);
    c->mutable_accuracy()->set_mean(p.mean);
    c->mutable_accuracy()->set_low(p.low);
    c->mutable_accuracy()->set_high(p.high);
  }
  prometheus::Registry registry;
  PublishForgetting(&registry, results, "t");
  const std::string text = metrics::Exposition(registry);
  const auto labels = [](uint64_t steps) {
    return absl::StrCat("{audit=\"a-1\",steps_since_injection=\"", steps,
                        "\",strategy=\"inject\",team=\"t\"}");
  };
  for (const v1::ForgettingCurvePoint& c : f->curve()) {
    const std::string l = labels(c.steps_since_injection());
    EXPECT_NEAR(Sample(text, "memaudit_forgetting_mi_accuracy_ratio" + l), c.accuracy().mean(),
                1e-12);
    EXPECT_NEAR(Sample(text, "memaudit_forgetting_mi_accuracy_low_ratio" + l), c.accuracy().low(),
                1e-12);
    EXPECT_NEAR(Sample(text, "memaudit_forgetting_mi_accuracy_high_ratio" + l), c.accuracy().high(),
                1e-12);
  }
  for (const char* family :
       {"memaudit_forgetting_mi_accuracy_ratio", "memaudit_forgetting_mi_accuracy_low_ratio",
        "memaudit_forgetting_mi_accuracy_high_ratio"}) {
    EXPECT_EQ(SeriesOf(text, family), 3u) << family;
  }
  const auto check = memaudit::testing::CheckMetricsWithPromtool(text);
  if (!check.has_value()) GTEST_SKIP() << "promtool not installed";
  EXPECT_EQ(check->status, 0) << check->output;
  EXPECT_EQ(check->output, "");
}

// Scored from trials that differ, the interval is wider than a point and
// holds the mean.
TEST(ForgettingMetricsTest, ScoredCurveGaugesBracketTheMean) {
  ForgettingSignals s = HandBuilt();
  // Trial 1 separates only half of Dp at step 100.
  std::vector<double>& phi = s[{"100", forgetting::kPhiInjected}][1];
  for (size_t i = 0; i < phi.size(); i += 2) phi[i] += 5;
  auto results = ScoreForgetting(Spec(), s);
  MEMAUDIT_ASSERT_OK(results);
  results->set_audit_id("a-1");
  prometheus::Registry registry;
  PublishForgetting(&registry, *results, "t");
  const std::string text = metrics::Exposition(registry);
  const std::string l =
      "{audit=\"a-1\",steps_since_injection=\"100\",strategy=\"inject\",team=\"t\"}";
  const double mean = Sample(text, "memaudit_forgetting_mi_accuracy_ratio" + l);
  const double low = Sample(text, "memaudit_forgetting_mi_accuracy_low_ratio" + l);
  const double high = Sample(text, "memaudit_forgetting_mi_accuracy_high_ratio" + l);
  EXPECT_NEAR(mean, results->forgetting().curve(1).accuracy().mean(), 1e-12);
  EXPECT_LT(low, mean);
  EXPECT_GT(high, mean);
}

// At k = 0 the baseline arm is the checkpoint: every calibrated non-member
// score is 0, and the point says it measures ties; later points do not.
TEST(ForgettingMetricsTest, APointWhoseNonMembersAllTieIsMarked) {
  ForgettingSignals s = HandBuilt();
  for (uint32_t t = 0; t < 2; ++t) {
    s[{"0", forgetting::kPhiBaseline}][t] =
        s[{forgetting::kCheckpointPoint, forgetting::kPhiCheckpoint}][t];
  }
  auto results = ScoreForgetting(Spec(), s);
  MEMAUDIT_ASSERT_OK(results);
  const v1::ForgettingResults& f = results->forgetting();
  EXPECT_THAT(f.curve(0).degenerate(), HasSubstr("count ties here, not forgetting"));
  EXPECT_EQ(f.curve(1).degenerate(), "");
  // The hand-built point 0 (a baseline that moved) is a regular point.
  auto regular = ScoreForgetting(Spec(), HandBuilt());
  MEMAUDIT_ASSERT_OK(regular);
  EXPECT_EQ(regular->forgetting().curve(0).degenerate(), "");
}

TEST(ForgettingMetricsTest, AttackChoiceMatters) {
  v1::AuditSpec spec = Spec();
  spec.mutable_forgetting()->set_attack("calibrated_loss");
  auto results = ScoreForgetting(spec, HandBuilt());
  MEMAUDIT_ASSERT_OK(results);
  // The hand-built losses do not differ between arms.
  EXPECT_NEAR(results->forgetting().curve(0).auc().mean(), 0.5, 1e-12);
}

TEST(ForgettingMetricsTest, ReplayAttackScoresDistanceFromTheReplayAndAddsTheStandardCurve) {
  v1::AuditSpec spec = Spec();
  spec.mutable_forgetting()->set_attack("deterministic_replay");
  ForgettingSignals s = HandBuilt();
  for (uint32_t t = 0; t < 2; ++t) {
    // Point 100: the arms' calibrated scores are identical (the standard
    // attack is at chance) but the injected arm is off the replay by 1e-9.
    std::vector<double> off = s[{"100", forgetting::kPhiBaseline}][t];
    for (double& v : off) v += 1e-9;
    s[{"100", forgetting::kPhiInjected}][t] = off;
    s[{"0", forgetting::kPhiReplay}][t] = s[{"0", forgetting::kPhiBaseline}][t];
    s[{"100", forgetting::kPhiReplay}][t] = s[{"100", forgetting::kPhiBaseline}][t];
  }
  // Trial 1's replay missed the baseline at point 100 (nondeterminism).
  s[{"100", forgetting::kPhiReplay}][1][0] += 1e-12;
  auto results = ScoreForgetting(spec, s);
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  const v1::ForgettingResults& f = results->forgetting();
  EXPECT_EQ(f.attack(), "deterministic_replay");
  ASSERT_EQ(f.curve_size(), 2);
  EXPECT_DOUBLE_EQ(f.curve(0).accuracy().mean(), 1.0);
  EXPECT_DOUBLE_EQ(f.curve(1).accuracy().mean(), 1.0);
  EXPECT_EQ(f.curve(0).replay_exact_trials(), 2u);
  EXPECT_EQ(f.curve(1).replay_exact_trials(), 1u);
  EXPECT_EQ(f.standard_attack(), "checkpoint_calibrated");
  ASSERT_EQ(f.standard_curve_size(), 2);
  EXPECT_DOUBLE_EQ(f.standard_curve(0).accuracy().mean(), 1.0);
  // Each injected score beats only the baseline scores of its own and lower
  // examples: accuracy max (TPR + TNR) / 2 = 0.55.
  EXPECT_NEAR(f.standard_curve(1).accuracy().mean(), 0.55, 1e-9);
  // phi_replay is required: without it no point is reached.
  ForgettingSignals no_replay = HandBuilt();
  auto partial = ScoreForgetting(spec, no_replay);
  MEMAUDIT_ASSERT_OK(partial);
  EXPECT_FALSE(partial->complete());
  EXPECT_EQ(partial->forgetting().curve_size(), 0);
  // ... and refused by audits of the other attacks.
  v1::Observation o;
  o.set_run(0);
  o.set_point("0");
  o.set_signal(forgetting::kPhiReplay);
  for (int i = 0; i < 10; ++i) o.add_values(i);
  MEMAUDIT_EXPECT_OK(ValidateForgettingObservation(spec.forgetting(), o));
  EXPECT_THAT(ValidateForgettingObservation(Spec().forgetting(), o).message(),
              HasSubstr("observation.signal"));
  // The plain audit's results carry no standard curve.
  EXPECT_EQ(ScoreForgetting(Spec(), HandBuilt())->forgetting().standard_curve_size(), 0);
}

TEST(ForgettingMetricsTest, LiraReferencesCalibrateEachExampleAtTheSameStep) {
  v1::AuditSpec spec = Spec();
  spec.mutable_forgetting()->set_attack("lira_references");
  spec.mutable_forgetting()->set_reference_models(3);
  ForgettingSignals s = HandBuilt();
  for (uint32_t t = 0; t < 2; ++t) {
    // Point 100: each example drifted by 3i since the checkpoint, which
    // swamps the injected arm's +0.5 for checkpoint calibration; references
    // at the same step drifted alike (+-0.1), so LiRA sees the +0.5.
    const std::vector<double>& ckpt =
        s[{forgetting::kCheckpointPoint, forgetting::kPhiCheckpoint}][t];
    std::vector<double> base(10), injected(10);
    for (int i = 0; i < 10; ++i) {
      base[i] = ckpt[i] + 3 * i;
      injected[i] = base[i] + 0.5;
    }
    s[{"100", forgetting::kPhiBaseline}][t] = base;
    s[{"100", forgetting::kPhiInjected}][t] = injected;
    for (uint32_t j = 0; j < 3; ++j) {
      std::vector<double> ref = base;
      for (int i = 0; i < 10; ++i)
        ref[i] += 0.1 * (static_cast<double>(j) - 1) * ((i % 2) ? 1 : -1);
      s[{"100", forgetting::PhiReferenceSignal(j)}][t] = ref;
      std::vector<double> ref0 = s[{"0", forgetting::kPhiBaseline}][t];
      for (int i = 0; i < 10; ++i) ref0[i] += 0.1 * (static_cast<double>(j) - 1);
      s[{"0", forgetting::PhiReferenceSignal(j)}][t] = ref0;
    }
  }
  auto results = ScoreForgetting(spec, s);
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  const v1::ForgettingResults& f = results->forgetting();
  EXPECT_EQ(f.attack(), "lira_references");
  EXPECT_EQ(f.reference_models(), 3u);
  ASSERT_EQ(f.curve_size(), 2);
  EXPECT_DOUBLE_EQ(f.curve(0).accuracy().mean(), 1.0);
  EXPECT_DOUBLE_EQ(f.curve(1).accuracy().mean(), 1.0);
  EXPECT_DOUBLE_EQ(f.curve(1).auc().mean(), 1.0);
  // The standard attack on the same arms, for comparison: the drift wins.
  EXPECT_EQ(f.standard_attack(), "checkpoint_calibrated");
  ASSERT_EQ(f.standard_curve_size(), 2);
  EXPECT_LT(f.standard_curve(1).accuracy().mean(), 0.7);
  // Missing references: no point is reached.
  ForgettingSignals missing = s;
  missing[{"0", forgetting::PhiReferenceSignal(2)}].erase(1);
  auto partial = ScoreForgetting(spec, missing);
  MEMAUDIT_ASSERT_OK(partial);
  EXPECT_FALSE(partial->complete());
  EXPECT_EQ(partial->forgetting().curve_size(), 0);
  // Reference signals are known to this audit only, and only up to k.
  EXPECT_EQ(RequiredForgettingSignals(spec.forgetting()).size(), 2u + 2u * (4u + 3u));
  v1::Observation o;
  o.set_run(0);
  o.set_point("100");
  o.set_signal(forgetting::PhiReferenceSignal(2));
  for (int i = 0; i < 10; ++i) o.add_values(i);
  MEMAUDIT_EXPECT_OK(ValidateForgettingObservation(spec.forgetting(), o));
  EXPECT_THAT(ValidateForgettingObservation(Spec().forgetting(), o).message(),
              HasSubstr("observation.signal"));
  o.set_signal(forgetting::PhiReferenceSignal(3));
  EXPECT_THAT(ValidateForgettingObservation(spec.forgetting(), o).message(),
              HasSubstr("observation.signal"));
}

// Point p of trial t for a LiRA audit with `refs` OUT references (and as
// many IN references when `online`): example i's OUT references sit at
// base_i + {-0.1, 0, +0.1, ...}; membership moves phi by +1 for even i and by
// -1 for odd i (say, an injected label that other training pulls against), so
// the IN references sit there and the injected arm near them.
void AddLiraPoint(ForgettingSignals* s, const std::string& point, uint32_t t, uint32_t refs,
                  bool online) {
  std::vector<double> base(10), injected(10), baseline(10);
  for (int i = 0; i < 10; ++i) {
    base[i] = 0.3 * i;
    const double shift = i % 2 == 0 ? 1.0 : -1.0;
    const double jitter = 0.01 * ((i + static_cast<int>(t)) % 3 - 1);
    injected[i] = base[i] + shift + jitter;
    baseline[i] = base[i] - jitter;
  }
  (*s)[{point, forgetting::kPhiInjected}][t] = injected;
  (*s)[{point, forgetting::kPhiBaseline}][t] = baseline;
  (*s)[{point, forgetting::kLossInjected}][t] = base;
  (*s)[{point, forgetting::kLossBaseline}][t] = base;
  for (uint32_t j = 0; j < refs; ++j) {
    const double spread = 0.1 * (static_cast<double>(j) - 1);
    std::vector<double> out(10), in(10);
    for (int i = 0; i < 10; ++i) {
      out[i] = base[i] + spread;
      in[i] = base[i] + (i % 2 == 0 ? 1.0 : -1.0) + spread;
    }
    (*s)[{point, forgetting::PhiReferenceSignal(j)}][t] = out;
    if (online) (*s)[{point, forgetting::PhiInReferenceSignal(j)}][t] = in;
  }
}

TEST(ForgettingMetricsTest, LiraOnlineFitsInAndOutAndBeatsOfflineWhenMembershipLowersPhi) {
  v1::AuditSpec spec = Spec();
  spec.mutable_forgetting()->set_attack("lira_online");
  spec.mutable_forgetting()->set_reference_models(3);
  ForgettingSignals s;
  for (uint32_t t = 0; t < 2; ++t) {
    s[{forgetting::kCheckpointPoint, forgetting::kPhiCheckpoint}][t] = std::vector<double>(10, 0);
    s[{forgetting::kCheckpointPoint, forgetting::kLossCheckpoint}][t] = std::vector<double>(10, 0);
    for (const char* p : {"0", "100"}) AddLiraPoint(&s, p, t, 3, /*online=*/true);
  }
  auto results = ScoreForgetting(spec, s);
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  const v1::ForgettingResults& f = results->forgetting();
  EXPECT_EQ(f.attack(), "lira_online");
  EXPECT_EQ(f.reference_models(), 3u);
  EXPECT_EQ(f.in_reference_models(), 3u);
  EXPECT_FALSE(f.lira_per_example_variance());
  EXPECT_EQ(results->models(), 4u) << "references are the adversary's, not audited models";
  ASSERT_EQ(f.curve_size(), 2);
  ASSERT_EQ(f.offline_curve_size(), 2);
  ASSERT_EQ(f.standard_curve_size(), 2);
  EXPECT_EQ(f.offline_attack(), "lira_references");
  EXPECT_EQ(f.standard_attack(), "checkpoint_calibrated");
  for (int i = 0; i < 2; ++i) {
    // Online: each arm's phi lies in the IN or the OUT fit: separated.
    EXPECT_DOUBLE_EQ(f.curve(i).auc().mean(), 1.0);
    EXPECT_DOUBLE_EQ(f.curve(i).accuracy().mean(), 1.0);
    EXPECT_DOUBLE_EQ(f.curve(i).tpr().mean(), 1.0);
    // Offline is one-sided: the odd examples' members score below every
    // non-member, the even ones' above: AUC (5 x 10) / (10 x 10).
    EXPECT_NEAR(f.offline_curve(i).auc().mean(), 0.5, 1e-12);
    EXPECT_GE(f.curve(i).auc().mean(), f.offline_curve(i).auc().mean());
    EXPECT_GT(f.curve(i).accuracy().mean(), f.offline_curve(i).accuracy().mean() + 0.2);
  }
  // The offline curve is the lira_references audit's curve on the same OUT
  // references (which ignores the IN ones).
  v1::AuditSpec offline_spec = spec;
  offline_spec.mutable_forgetting()->set_attack("lira_references");
  auto offline = ScoreForgetting(offline_spec, s);
  MEMAUDIT_ASSERT_OK(offline);
  EXPECT_EQ(offline->forgetting().offline_curve_size(), 0);
  EXPECT_EQ(offline->forgetting().in_reference_models(), 0u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(offline->forgetting().curve(i).SerializeAsString(),
              f.offline_curve(i).SerializeAsString());
  }
  // IN references are required: without one no point is reached.
  ForgettingSignals missing = s;
  missing[{"0", forgetting::PhiInReferenceSignal(1)}].erase(0);
  auto partial = ScoreForgetting(spec, missing);
  MEMAUDIT_ASSERT_OK(partial);
  EXPECT_FALSE(partial->complete());
  EXPECT_EQ(partial->forgetting().curve_size(), 0);
  // 2 checkpoint signals; per point 4 arm signals, 3 OUT and 3 IN references.
  EXPECT_EQ(RequiredForgettingSignals(spec.forgetting()).size(), 2u + 2u * (4u + 3u + 3u));
  v1::Observation o;
  o.set_run(0);
  o.set_point("100");
  o.set_signal(forgetting::PhiInReferenceSignal(2));
  for (int i = 0; i < 10; ++i) o.add_values(i);
  MEMAUDIT_EXPECT_OK(ValidateForgettingObservation(spec.forgetting(), o));
  EXPECT_THAT(ValidateForgettingObservation(offline_spec.forgetting(), o).message(),
              HasSubstr("observation.signal"));
  o.set_signal(forgetting::PhiInReferenceSignal(3));
  EXPECT_THAT(ValidateForgettingObservation(spec.forgetting(), o).message(),
              HasSubstr("observation.signal"));
}

// log N(x; mu, sigma), written out for the hand computations below.
double LogPdf(double x, double mu, double sigma) {
  const double z = (x - mu) / sigma;
  return -0.5 * z * z - std::log(sigma) - 0.5 * std::log(2 * M_PI);
}
double LogCdf(double z) { return std::log(0.5 * std::erfc(-z / std::sqrt(2.0))); }

TEST(ForgettingMetricsTest, LiraScoresPerExampleAndPooledSigmaMatchAHandComputation) {
  // Two examples, two references per side. OUT: example 0 at {-1, 1}
  // (median 0, std 1), example 1 at {-10, 10} (median 0, std 10). IN:
  // example 0 at {2, 4} (median 3, std 1), example 1 at {0, 10} (median 5,
  // std 5). Pooled: sigma_out^2 = (1 + 1 + 100 + 100) / 4 = 50.5, sigma_in^2
  // = (1 + 1 + 25 + 25) / 4 = 13.
  const std::vector<double> out0 = {-1, -10}, out1 = {1, 10}, in0 = {2, 0}, in1 = {4, 10};
  const std::vector<const std::vector<double>*> out = {&out0, &out1}, in = {&in0, &in1};
  const std::vector<double> phi = {2, 5};
  const double pooled_out = std::sqrt(50.5), pooled_in = std::sqrt(13.0);

  auto offline_pe = ForgettingLiraScores(phi, out, {}, /*online=*/false, /*per_example=*/true);
  MEMAUDIT_ASSERT_OK(offline_pe);
  EXPECT_NEAR((*offline_pe)[0], LogCdf(2.0), 1e-12);
  EXPECT_NEAR((*offline_pe)[1], LogCdf(0.5), 1e-12);
  auto offline_pooled = ForgettingLiraScores(phi, out, {}, false, false);
  MEMAUDIT_ASSERT_OK(offline_pooled);
  EXPECT_NEAR((*offline_pooled)[0], LogCdf(2 / pooled_out), 1e-12);
  EXPECT_NEAR((*offline_pooled)[1], LogCdf(5 / pooled_out), 1e-12);
  // Offline ignores IN references.
  EXPECT_EQ(*ForgettingLiraScores(phi, out, in, false, true), *offline_pe);

  auto online_pe = ForgettingLiraScores(phi, out, in, /*online=*/true, /*per_example=*/true);
  MEMAUDIT_ASSERT_OK(online_pe);
  // Example 0: -0.5 - (-2) = 1.5; example 1: -log 5 - (-0.125 - log 10).
  EXPECT_NEAR((*online_pe)[0], 1.5, 1e-12);
  EXPECT_NEAR((*online_pe)[1], std::log(2.0) + 0.125, 1e-12);
  EXPECT_NEAR((*online_pe)[0], LogPdf(2, 3, 1) - LogPdf(2, 0, 1), 1e-12);
  auto online_pooled = ForgettingLiraScores(phi, out, in, true, false);
  MEMAUDIT_ASSERT_OK(online_pooled);
  EXPECT_NEAR((*online_pooled)[0], LogPdf(2, 3, pooled_in) - LogPdf(2, 0, pooled_out), 1e-12);
  EXPECT_NEAR((*online_pooled)[1], LogPdf(5, 5, pooled_in) - LogPdf(5, 0, pooled_out), 1e-12);

  // A reference of the wrong length is named.
  const std::vector<double> short_ref = {1};
  EXPECT_THAT(ForgettingLiraScores(phi, out, {&in0, &short_ref}, true, true).status().message(),
              HasSubstr("phi_in_reference_1"));
}

TEST(ForgettingMetricsTest, PerExampleVarianceRanksByEachExamplesOwnSpread) {
  // The examples above as a curve: injected arm {2, 5}, baseline {0.4, 3}.
  // Per example the scores are z = {2, 0.5} against {0.4, 0.3}: every member
  // above every non-member, AUC 1. Pooled they rank as phi - 0 = {2, 5}
  // against {0.4, 3}: 2 < 3, AUC 3/4, accuracy 3/4 (threshold above 3).
  v1::AuditSpec spec;
  spec.set_name("test");
  v1::ForgettingAudit* f = spec.mutable_forgetting();
  f->set_strategy("inject");
  f->set_attack("lira_references");
  f->set_reference_models(2);
  f->set_fpr(0.1);
  f->set_trials(2);
  f->mutable_injected()->set_size(2);
  f->add_eval_points(0);
  ForgettingSignals s;
  for (uint32_t t = 0; t < 2; ++t) {
    for (const char* c : {forgetting::kPhiCheckpoint, forgetting::kLossCheckpoint}) {
      s[{forgetting::kCheckpointPoint, c}][t] = {0, 0};
    }
    s[{"0", forgetting::kPhiInjected}][t] = {2, 5};
    s[{"0", forgetting::kPhiBaseline}][t] = {0.4, 3};
    s[{"0", forgetting::kLossInjected}][t] = {0, 0};
    s[{"0", forgetting::kLossBaseline}][t] = {0, 0};
    s[{"0", forgetting::PhiReferenceSignal(0)}][t] = {-1, -10};
    s[{"0", forgetting::PhiReferenceSignal(1)}][t] = {1, 10};
  }
  auto pooled = ScoreForgetting(spec, s);
  MEMAUDIT_ASSERT_OK(pooled);
  EXPECT_FALSE(pooled->forgetting().lira_per_example_variance());
  EXPECT_DOUBLE_EQ(pooled->forgetting().curve(0).auc().mean(), 0.75);
  EXPECT_DOUBLE_EQ(pooled->forgetting().curve(0).accuracy().mean(), 0.75);
  f->set_lira_per_example_variance(true);
  auto per_example = ScoreForgetting(spec, s);
  MEMAUDIT_ASSERT_OK(per_example);
  EXPECT_TRUE(per_example->forgetting().lira_per_example_variance());
  EXPECT_DOUBLE_EQ(per_example->forgetting().curve(0).auc().mean(), 1.0);
  EXPECT_DOUBLE_EQ(per_example->forgetting().curve(0).accuracy().mean(), 1.0);
  // The checkpoint curve does not depend on it.
  EXPECT_EQ(per_example->forgetting().standard_curve(0).SerializeAsString(),
            pooled->forgetting().standard_curve(0).SerializeAsString());
}

TEST(ForgettingMetricsTest, SelectionLossesReachTheResults) {
  v1::AuditSpec spec = Spec();
  spec.mutable_forgetting()->mutable_injected()->set_selection("hard");
  ForgettingSignals s = HandBuilt();
  auto without = ScoreForgetting(spec, s);
  MEMAUDIT_ASSERT_OK(without);
  EXPECT_EQ(without->forgetting().curve_size(), 2) << "the curve does not wait for them";
  EXPECT_FALSE(without->complete()) << "but the audit is not complete without them";
  // Each trial selects its own Dp: the results hold the means over trials.
  for (uint32_t t = 0; t < 2; ++t) {
    s[{forgetting::kCheckpointPoint, forgetting::kSelectionLoss}][t] =
        std::vector<double>(10, 2.5 + t);
    s[{forgetting::kCheckpointPoint, forgetting::kCandidateLossMean}][t] = {0.75 + 0.5 * t};
  }
  auto results = ScoreForgetting(spec, s);
  MEMAUDIT_ASSERT_OK(results);
  const v1::ForgettingResults& f = results->forgetting();
  EXPECT_EQ(f.selection(), "hard");
  EXPECT_DOUBLE_EQ(f.selection_loss_mean(), 3.0);
  EXPECT_DOUBLE_EQ(f.candidate_loss_mean(), 1.0);
  EXPECT_EQ(ScoreForgetting(Spec(), HandBuilt())->forgetting().selection(), "random");
  // candidate_loss_mean holds one value; both are unknown to random selection.
  v1::Observation o;
  o.set_run(0);
  o.set_point(forgetting::kCheckpointPoint);
  o.set_signal(forgetting::kCandidateLossMean);
  o.add_values(0.75);
  MEMAUDIT_EXPECT_OK(ValidateForgettingObservation(spec.forgetting(), o));
  o.add_values(0.5);
  EXPECT_THAT(ValidateForgettingObservation(spec.forgetting(), o).message(),
              HasSubstr("observation.values"));
  o.set_signal(forgetting::kSelectionLoss);
  EXPECT_THAT(ValidateForgettingObservation(Spec().forgetting(), o).message(),
              HasSubstr("observation.signal"));
}

v1::AuditSpec CanarySpec() {
  v1::AuditSpec spec;
  spec.set_name("test");
  v1::ForgettingAudit* f = spec.mutable_forgetting();
  f->set_strategy("inject");
  f->set_attack("exposure");
  f->set_trials(2);
  f->add_eval_points(0);
  f->add_eval_points(100);
  v1::ForgettingCanaries* c = f->mutable_canaries();
  c->mutable_canary()->set_digits(4);
  c->add_repeats(1);
  c->add_repeats(16);
  c->set_per_group(2);
  c->set_controls(1);
  return spec;
}

// Canaries: group 1 (0, 1), group 16 (2, 3), control (4).
ForgettingSignals CanarySignals() {
  ForgettingSignals s;
  for (uint32_t t = 0; t < 2; ++t) {
    s[{forgetting::kCheckpointPoint, forgetting::kExposureCheckpoint}][t] = {1, 1, 1, 1, 1};
    s[{"0", forgetting::kExposureInjected}][t] = {2, 4, 10, 12.0 + t, 1};
    s[{"0", forgetting::kExposureBaseline}][t] = {1, 1, 1, 1, 1};
    s[{"100", forgetting::kExposureInjected}][t] = {1, 1, 5, 7, 2};
    s[{"100", forgetting::kExposureBaseline}][t] = {1, 2, 1, 2, 2};
    for (const char* p : {"0", "100"}) {
      s[{p, forgetting::kExactInjected}][t] = {1, 1, 1, 1, 1};
      s[{p, forgetting::kExactBaseline}][t] = {1, 1, 1, 1, 1};
    }
  }
  s[{"100", forgetting::kExactBaseline}][1][4] = 0;  // one bounded rank
  return s;
}

TEST(ForgettingMetricsTest, CanaryExposureCurvesByRepeatCount) {
  const v1::AuditSpec spec = CanarySpec();
  const v1::ForgettingAudit* f = &spec.forgetting();
  const ForgettingSignals s = CanarySignals();
  auto results = ScoreForgetting(spec, s);
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  const v1::ForgettingResults& r = results->forgetting();
  EXPECT_EQ(r.curve_size(), 0) << "no MI curve for canaries";
  EXPECT_NEAR(r.log2_space(), 4 * std::log2(10.0), 1e-12);
  EXPECT_EQ(results->examples(), 5u);
  ASSERT_EQ(r.exposure_curves_size(), 3);
  EXPECT_EQ(r.exposure_curves(0).repeats(), 1u);
  EXPECT_EQ(r.exposure_curves(1).repeats(), 16u);
  EXPECT_EQ(r.exposure_curves(2).repeats(), 0u);  // controls
  EXPECT_EQ(r.exposure_curves(2).canaries(), 1u);
  const v1::ForgettingExposurePoint& p16 = r.exposure_curves(1).points(0);
  EXPECT_EQ(p16.steps_since_injection(), 0u);
  EXPECT_DOUBLE_EQ(p16.exposure().mean(), 11.25);  // trial means 11 and 11.5
  EXPECT_DOUBLE_EQ(p16.baseline_exposure().mean(), 1);
  // Two trials (11, 11.5): t(1) puts 11.25 +- 3.18 past log2 |R| = 13.29;
  // exposure's interval stays in [0, log2 |R|].
  EXPECT_NEAR(p16.exposure().low(), 11.25 - 12.7062 * 0.25, 1e-3);
  EXPECT_DOUBLE_EQ(p16.exposure().high(), r.log2_space());
  for (const v1::ForgettingExposureCurve& c : r.exposure_curves()) {
    for (const v1::ForgettingExposurePoint& p : c.points()) {
      EXPECT_GE(p.exposure().low(), 0.0);
      EXPECT_LE(p.exposure().high(), r.log2_space());
      EXPECT_GE(p.baseline_exposure().low(), 0.0);
    }
  }
  EXPECT_DOUBLE_EQ(r.exposure_curves(0).points(0).exposure().mean(), 3);
  EXPECT_DOUBLE_EQ(r.exposure_curves(1).points(1).exposure().mean(), 6);
  EXPECT_DOUBLE_EQ(r.exposure_curves(1).points(1).baseline_exposure().mean(), 1.5);
  EXPECT_EQ(r.exposure_curves(2).points(1).bounded(), 1u);
  EXPECT_EQ(r.exposure_curves(1).points(1).bounded(), 0u);
  EXPECT_EQ(ForgettingProgress(*results), 2u * 3u + 1u);
  // The curves fill in point by point.
  ForgettingSignals partial = s;
  partial[{"100", forgetting::kExposureInjected}].erase(0);
  auto half = ScoreForgetting(spec, partial);
  MEMAUDIT_ASSERT_OK(half);
  EXPECT_FALSE(half->complete());
  EXPECT_EQ(half->forgetting().exposure_curves(0).points_size(), 1);
  EXPECT_EQ(ForgettingProgress(*half), 3u);
  // Observations: one value per canary, canary signals only.
  EXPECT_EQ(RequiredForgettingSignals(*f).size(), 1u + 2u * 4u);
  v1::Observation o;
  o.set_run(0);
  o.set_point("100");
  o.set_signal(forgetting::kExposureInjected);
  for (int i = 0; i < 5; ++i) o.add_values(i);
  MEMAUDIT_EXPECT_OK(ValidateForgettingObservation(*f, o));
  o.add_values(1);
  EXPECT_THAT(ValidateForgettingObservation(*f, o).message(), HasSubstr("one per canary"));
  o.set_signal(forgetting::kPhiInjected);
  EXPECT_THAT(ValidateForgettingObservation(*f, o).message(), HasSubstr("observation.signal"));
}

// Extractable memorization as a forgetting curve, by hand: 2 sequences per
// group, groups x1 and x8, then the controls; two trials.
TEST(ForgettingMetricsTest, ExtractableCurvesAreTheFractionsExtractedByGroup) {
  v1::AuditSpec spec = CanarySpec();
  v1::ExtractableSpec* x = spec.mutable_forgetting()->mutable_canaries()->mutable_extractable();
  x->set_sequences(2);
  x->add_duplicates(1);
  x->add_duplicates(8);
  const v1::ForgettingAudit& f = spec.forgetting();
  EXPECT_EQ(forgetting::ExtractableSequences(f), 6u);
  ForgettingSignals s = CanarySignals();
  // Sequences: x1 (0, 1), x8 (2, 3), controls (4, 5).
  s[{"0", forgetting::kExtractedInjected}][0] = {1, 0, 1, 1, 0, 0};
  s[{"0", forgetting::kExtractedInjected}][1] = {0, 0, 1, 1, 0, 0};
  s[{"0", forgetting::kExtractedBaseline}][0] = {0, 0, 0, 0, 0, 0};
  s[{"0", forgetting::kExtractedBaseline}][1] = {0, 0, 0, 0, 0, 0};
  s[{"100", forgetting::kExtractedInjected}][0] = {0, 0, 1, 0, 0, 0};
  s[{"100", forgetting::kExtractedInjected}][1] = {0, 0, 0, 0, 0, 0};
  s[{"100", forgetting::kExtractedBaseline}][0] = {0, 0, 0, 0, 0, 1};
  s[{"100", forgetting::kExtractedBaseline}][1] = {0, 0, 0, 0, 0, 0};
  auto results = ScoreForgetting(spec, s);
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_TRUE(results->complete());
  const v1::ForgettingResults& r = results->forgetting();
  ASSERT_EQ(r.extractable_curves_size(), 3);
  EXPECT_EQ(r.extractable_curves(0).duplicates(), 1u);
  EXPECT_EQ(r.extractable_curves(1).duplicates(), 8u);
  EXPECT_EQ(r.extractable_curves(2).duplicates(), 0u);
  EXPECT_EQ(r.extractable_curves(2).sequences(), 2u);
  ASSERT_EQ(r.extractable_curves(1).points_size(), 2);
  // x1 at 0 steps: trial fractions 1/2 and 0; x8: 1 and 1, then 1/2 and 0.
  EXPECT_DOUBLE_EQ(r.extractable_curves(0).points(0).fraction().mean(), 0.25);
  EXPECT_DOUBLE_EQ(r.extractable_curves(1).points(0).fraction().mean(), 1.0);
  EXPECT_DOUBLE_EQ(r.extractable_curves(1).points(1).fraction().mean(), 0.25);
  EXPECT_EQ(r.extractable_curves(1).points(1).steps_since_injection(), 100u);
  EXPECT_DOUBLE_EQ(r.extractable_curves(2).points(1).baseline_fraction().mean(), 0.25);
  for (const v1::ForgettingExtractableCurve& c : r.extractable_curves()) {
    for (const v1::ForgettingExtractablePoint& p : c.points()) {
      EXPECT_GE(p.fraction().low(), 0.0);
      EXPECT_LE(p.fraction().high(), 1.0);
    }
  }
  // The extracted signals are required, 0/1, one per held-out sequence.
  EXPECT_EQ(RequiredForgettingSignals(f).size(), 1u + 2u * 6u);
  v1::Observation o;
  o.set_run(0);
  o.set_point("100");
  o.set_signal(forgetting::kExtractedInjected);
  for (int i = 0; i < 6; ++i) o.add_values(i % 2);
  MEMAUDIT_EXPECT_OK(ValidateForgettingObservation(f, o));
  o.set_values(0, 0.5);
  EXPECT_THAT(ValidateForgettingObservation(f, o).message(), HasSubstr("must be 0 or 1"));
  o.add_values(1);
  EXPECT_THAT(ValidateForgettingObservation(f, o).message(), HasSubstr("one per held-out"));
  // A missing trial stops the curve there.
  ForgettingSignals partial = s;
  partial[{"100", forgetting::kExtractedBaseline}].erase(1);
  auto half = ScoreForgetting(spec, partial);
  MEMAUDIT_ASSERT_OK(half);
  EXPECT_FALSE(half->complete());
  EXPECT_EQ(half->forgetting().extractable_curves(0).points_size(), 1);
}

TEST(ForgettingMetricsTest, CanaryExposureGaugesByRepeatsArmAndSteps) {
  v1::AuditSpec spec = CanarySpec();
  spec.mutable_forgetting()->set_strategy("poison");
  auto results = ScoreForgetting(spec, CanarySignals());
  MEMAUDIT_ASSERT_OK(results);
  results->set_audit_id("a-1");
  prometheus::Registry registry;
  PublishForgetting(&registry, *results, "t");
  const std::string text = metrics::Exposition(registry);
  EXPECT_THAT(text, HasSubstr("# TYPE memaudit_forgetting_canary_exposure_log2 gauge"));
  // The x16 group right after injection: trial means 11 and 11.5.
  EXPECT_THAT(text, HasSubstr("memaudit_forgetting_canary_exposure_log2{arm=\"injected\","
                              "audit=\"a-1\",repeats=\"16\",steps_since_injection=\"0\","
                              "strategy=\"poison\",team=\"t\"} 11.25\n"));
  EXPECT_THAT(text, HasSubstr("memaudit_forgetting_canary_exposure_log2{arm=\"baseline\","
                              "audit=\"a-1\",repeats=\"16\",steps_since_injection=\"100\","
                              "strategy=\"poison\",team=\"t\"} 1.5\n"));
  // Controls are repeats 0.
  EXPECT_THAT(text, HasSubstr("memaudit_forgetting_canary_exposure_log2{arm=\"injected\","
                              "audit=\"a-1\",repeats=\"0\",steps_since_injection=\"100\","
                              "strategy=\"poison\",team=\"t\"} 2\n"));
  // log2 10^4 = 13.2877...
  EXPECT_THAT(text,
              HasSubstr("memaudit_forgetting_canary_space_log2{audit=\"a-1\",team=\"t\"} 13.2877"));
  // 3 groups x 2 points x 2 arms, and no MI-curve gauges for canaries.
  size_t series = 0;
  for (size_t at = 0;
       (at = text.find("\nmemaudit_forgetting_canary_exposure_log2{", at)) != std::string::npos;
       ++at) {
    ++series;
  }
  EXPECT_EQ(series, 12u);
  EXPECT_THAT(text, Not(HasSubstr("memaudit_forgetting_mi_accuracy_ratio{")));
  // Every mean has its 95% interval over trials, labelled alike: for the x16
  // group at step 0, trial means 11 and 11.5 (t with 1 degree of freedom).
  EXPECT_EQ(SeriesOf(text, "memaudit_forgetting_canary_exposure_low_log2"), 12u);
  EXPECT_EQ(SeriesOf(text, "memaudit_forgetting_canary_exposure_high_log2"), 12u);
  const std::string x16 =
      "{arm=\"injected\",audit=\"a-1\",repeats=\"16\",steps_since_injection=\"0\","
      "strategy=\"poison\",team=\"t\"}";
  const v1::TrialMean& e = results->forgetting().exposure_curves(1).points(0).exposure();
  EXPECT_NEAR(Sample(text, "memaudit_forgetting_canary_exposure_low_log2" + x16), e.low(), 1e-12);
  EXPECT_NEAR(Sample(text, "memaudit_forgetting_canary_exposure_high_log2" + x16), e.high(), 1e-12);
  EXPECT_LT(e.low(), 11.25 - 3);
  EXPECT_DOUBLE_EQ(e.high(), results->forgetting().log2_space()) << "cut at log2 |R|";

  // Prometheus' own linter, when installed (Debian `prometheus`).
  const auto check = memaudit::testing::CheckMetricsWithPromtool(text);
  if (!check.has_value()) GTEST_SKIP() << "promtool not installed";
  EXPECT_EQ(check->status, 0) << check->output;
  EXPECT_EQ(check->output, "");
}

TEST(ForgettingMetricsTest, CurveFillsInPointByPoint) {
  auto full = ScoreForgetting(Spec(), HandBuilt());
  MEMAUDIT_ASSERT_OK(full);
  EXPECT_TRUE(full->complete());
  // Trial 1 has not reached step 100 yet: the curve holds step 0 only.
  ForgettingSignals s = HandBuilt();
  s[{"100", forgetting::kPhiBaseline}].erase(1);
  auto partial = ScoreForgetting(Spec(), s);
  MEMAUDIT_ASSERT_OK(partial);
  EXPECT_FALSE(partial->complete());
  ASSERT_EQ(partial->forgetting().curve_size(), 1);
  EXPECT_EQ(partial->forgetting().curve(0).SerializeAsString(),
            full->forgetting().curve(0).SerializeAsString());
  // Nothing in yet: an empty, incomplete curve.
  auto empty = ScoreForgetting(Spec(), ForgettingSignals());
  MEMAUDIT_ASSERT_OK(empty);
  EXPECT_FALSE(empty->complete());
  EXPECT_EQ(empty->forgetting().curve_size(), 0);
}

TEST(ForgettingMetricsTest, ObservationsAreValidatedByField) {
  const v1::ForgettingAudit f = Spec().forgetting();
  v1::Observation o;
  o.set_run(0);
  o.set_point("0");
  o.set_signal(forgetting::kPhiInjected);
  for (int i = 0; i < 10; ++i) o.add_values(i);
  MEMAUDIT_EXPECT_OK(ValidateForgettingObservation(f, o));
  v1::Observation bad = o;
  bad.set_run(2);
  EXPECT_THAT(ValidateForgettingObservation(f, bad).message(), HasSubstr("observation.run"));
  bad = o;
  bad.set_point("7");
  EXPECT_THAT(ValidateForgettingObservation(f, bad).message(), HasSubstr("observation.point"));
  bad = o;
  bad.set_signal("phi");
  EXPECT_THAT(ValidateForgettingObservation(f, bad).message(), HasSubstr("observation.signal"));
  bad = o;
  bad.set_point(forgetting::kCheckpointPoint);
  EXPECT_THAT(ValidateForgettingObservation(f, bad).message(), HasSubstr("observation.signal"));
  bad = o;
  bad.add_values(1);
  EXPECT_THAT(ValidateForgettingObservation(f, bad).message(), HasSubstr("observation.values"));
  bad = o;
  bad.set_values(3, std::nan(""));
  EXPECT_THAT(ValidateForgettingObservation(f, bad).message(), HasSubstr("observation.values[3]"));
  EXPECT_EQ(RequiredForgettingSignals(f).size(), 2u + 2u * 4u);
}

}  // namespace
}  // namespace memaudit::scorer
