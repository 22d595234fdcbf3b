#include "spec/gates.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/kind_handler.h"
#include "spec/test_specs.h"

namespace memaudit::spec {
namespace {

using ::testing::HasSubstr;

v1::Gate Max(const std::string& metric, double limit) {
  v1::Gate g;
  g.set_metric(metric);
  g.set_max(limit);
  return g;
}

v1::Gate Min(const std::string& metric, double limit) {
  v1::Gate g;
  g.set_metric(metric);
  g.set_min(limit);
  return g;
}

TEST(GatesTest, AMaxGateFailsAboveItsLimitPassesBelowAndIsInconclusiveAcross) {
  const MetricReading r{0.70, 0.65, 0.75};
  EXPECT_EQ(Judge(Max("m", 0.6), r, "models").outcome(), v1::GATE_FAIL);
  EXPECT_EQ(Judge(Max("m", 0.8), r, "models").outcome(), v1::GATE_PASS);
  EXPECT_EQ(Judge(Max("m", 0.75), r, "models").outcome(), v1::GATE_PASS);  // high <= limit
  const v1::GateVerdict across = Judge(Max("m", 0.72), r, "reference models");
  EXPECT_EQ(across.outcome(), v1::GATE_INCONCLUSIVE);
  // Half-width 0.05 over distance 0.02: (0.05 / 0.02)^2 = 6.25 times the data.
  EXPECT_THAT(across.reason(), HasSubstr("needs ~6.2 x the reference models"));
  EXPECT_EQ(across.bound(), "max");
  EXPECT_EQ(across.limit(), 0.72);
  EXPECT_EQ(across.low(), 0.65);
}

TEST(GatesTest, AMinGateMirrorsIt) {
  const MetricReading r{0.70, 0.65, 0.75};
  EXPECT_EQ(Judge(Min("m", 0.8), r, "x").outcome(), v1::GATE_FAIL);
  EXPECT_EQ(Judge(Min("m", 0.6), r, "x").outcome(), v1::GATE_PASS);
  EXPECT_EQ(Judge(Min("m", 0.7), r, "x").outcome(), v1::GATE_INCONCLUSIVE);
  EXPECT_THAT(Judge(Min("m", 0.7), r, "x").reason(), HasSubstr("sits on the limit"));
  EXPECT_EQ(Judge(Min("m", 0.7), std::nullopt, "x").outcome(), v1::GATE_INCONCLUSIVE);
}

TEST(GatesTest, AReadingUsesTheReRunIntervalWhenThereIsOne) {
  const MetricReading rerun = ReadingOf(0.5, 0.4, 0.6, 0.45, 0.55);
  EXPECT_EQ(rerun.low, 0.4);
  EXPECT_EQ(rerun.high, 0.6);
  const MetricReading sampling = ReadingOf(0.5, 0, 0, 0.45, 0.55);
  EXPECT_EQ(sampling.low, 0.45);
}

v1::AuditSpec GatedMembership() {
  v1::AuditSpec spec;
  spec.set_name("g");
  spec.set_seed(1);
  v1::MembershipAudit* m = spec.mutable_membership();
  m->set_reference_models(16);
  m->mutable_dataset()->set_pool_size(200);
  m->mutable_training()->set_learning_rate(0.1);
  m->mutable_training()->set_epochs(1);
  *spec.add_gates() = Max("lira_online.tpr_at_fpr_0.001", 0.01);
  *spec.add_gates() = Min("rmia.auc", 0.5);
  ApplyDefaults(&spec);
  return spec;
}

TEST(GatesTest, GatesNameTheKindsMetricsAndOneLimit) {
  v1::AuditSpec spec = GatedMembership();
  EXPECT_TRUE(ValidateSpec(spec).ok()) << ValidateSpec(spec);
  *spec.add_gates() = Max("lira_online.tpr_at_fpr_0.5", 0.1);  // not an FPR point
  v1::Gate both = Max("rmia.auc", 0.9);
  both.set_min(0.1);
  *spec.add_gates() = both;
  v1::Gate odd = Max("rmia.auc", 0.9);
  odd.set_confidence(0.9999);
  *spec.add_gates() = odd;
  v1::Gate stricter = Max("rmia.auc", 0.9);
  stricter.set_confidence(0.99);
  *spec.add_gates() = stricter;
  const std::string problems(ValidateSpec(spec).message());
  EXPECT_THAT(problems, HasSubstr("gates[2].metric: \"lira_online.tpr_at_fpr_0.5\" is not a "
                                  "metric of this membership audit; it reports: "
                                  "lira_online.auc, lira_online.balanced_accuracy, "
                                  "lira_online.tpr_at_fpr_0.01, lira_online.tpr_at_fpr_0.001"));
  EXPECT_THAT(problems, HasSubstr("gates[3]: set exactly one of max and min"));
  EXPECT_THAT(problems, HasSubstr("gates[4].confidence: must be in [0.5, 0.999] (got 0.9999)"));
  EXPECT_THAT(problems, ::testing::Not(HasSubstr("gates[5]")));
}

TEST(GatesTest, AnotherConfidenceRescalesTheIntervalsSides) {
  // 0.70 [0.65, 0.76] at 95%: at 99% each side grows by z_0.995 / z_0.975 =
  // 2.575829 / 1.959964 = 1.314222, to [0.634289, 0.778853]; at 80% it
  // shrinks by 1.281552 / 1.959964 = 0.653865.
  const MetricReading r{0.70, 0.65, 0.76};
  v1::Gate gate = Max("m", 0.77);
  EXPECT_EQ(Judge(gate, r, "x").outcome(), v1::GATE_PASS);
  gate.set_confidence(0.99);
  const v1::GateVerdict strict = Judge(gate, r, "x");
  EXPECT_EQ(strict.outcome(), v1::GATE_INCONCLUSIVE);
  EXPECT_NEAR(strict.low(), 0.70 - 0.05 * 1.3142218, 1e-7);
  EXPECT_NEAR(strict.high(), 0.70 + 0.06 * 1.3142218, 1e-7);
  gate = Max("m", 0.66);
  EXPECT_EQ(Judge(gate, r, "x").outcome(), v1::GATE_INCONCLUSIVE);
  gate.set_confidence(0.8);
  EXPECT_EQ(Judge(gate, r, "x").outcome(), v1::GATE_FAIL);  // low 0.70 - 0.0327 > 0.66
}

TEST(GatesTest, VerdictsAreReadFromTheResults) {
  const v1::AuditSpec spec = GatedMembership();
  v1::AuditResults results;
  v1::AttackResult* lira = results.add_attacks();
  lira->set_attack(v1::LIRA_ONLINE);
  v1::OperatingPoint* p = lira->add_operating_points();
  p->set_fpr_target(0.001);
  p->set_tpr(0.05);
  p->set_tpr_low(0.045);
  p->set_tpr_high(0.055);
  p->set_tpr_rerun_low(0.03);
  p->set_tpr_rerun_high(0.07);
  const std::vector<v1::GateVerdict> verdicts = JudgeGates(spec, results);
  ASSERT_EQ(verdicts.size(), 2u);
  EXPECT_EQ(verdicts[0].outcome(), v1::GATE_FAIL);
  EXPECT_EQ(verdicts[0].low(), 0.03);  // the re-run interval
  // No rmia result: inconclusive, said so.
  EXPECT_EQ(verdicts[1].outcome(), v1::GATE_INCONCLUSIVE);
  EXPECT_THAT(verdicts[1].reason(), HasSubstr("do not have this metric"));
}

TEST(GatesTest, ADpAuditGateReadsTheLowerBoundItself) {
  v1::AuditSpec spec;
  spec.set_name("d");
  spec.set_seed(1);
  spec.mutable_dp_audit();
  *spec.add_gates() = Max("epsilon_lower", 4);
  *spec.add_gates() = Max("gdp_epsilon_lower", 1);
  ApplyDefaults(&spec);
  EXPECT_TRUE(ValidateSpec(spec).ok()) << ValidateSpec(spec);
  v1::AuditResults results;
  results.mutable_dp_audit()->set_epsilon_lower(1.5);
  results.mutable_dp_audit()->set_gdp_epsilon_lower(2.5);
  const std::vector<v1::GateVerdict> v = JudgeGates(spec, results);
  EXPECT_EQ(v[0].outcome(), v1::GATE_PASS);
  EXPECT_EQ(v[1].outcome(), v1::GATE_FAIL);
  // The bound holds at the audit's confidence: a gate cannot ask for another.
  spec.mutable_gates(0)->set_confidence(0.99);
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("gates[0].confidence: \"epsilon_lower\" is a bound"));
}

// Every kind with results a gate can read declares its metrics; a gate on
// one of them validates (relational and forgetting defaults here).
TEST(GatesTest, EachKindsMetricsFollowFromItsSpec) {
  v1::AuditSpec relational;
  relational.set_name("r");
  relational.set_seed(1);
  relational.mutable_relational()->mutable_linear();
  ApplyDefaults(&relational);
  const std::vector<GateMetric> metrics =
      HandlerFor(relational.kind_case())->GateMetrics(relational);
  ASSERT_FALSE(metrics.empty());
  EXPECT_THAT(metrics[0].name, ::testing::EndsWith(".within_tolerance.rm_norm"));
  *relational.add_gates() = Max(metrics[0].name, 0.5);
  EXPECT_TRUE(ValidateSpec(relational).ok()) << ValidateSpec(relational);
  // Read from the latest point of the variant's curve.
  v1::AuditResults results;
  v1::RelationalCurve* curve = results.mutable_relational()->add_curves();
  const std::string variant = metrics[0].name.substr(0, metrics[0].name.find('.'));
  curve->set_variant(variant);
  for (const double rm : {0.9, 0.2}) {
    v1::RelationalPoint* p = curve->add_points();
    p->set_metric("within_tolerance");
    p->set_rm_norm(rm);
    p->set_rm_norm_low(rm - 0.1);
    p->set_rm_norm_high(rm + 0.1);
  }
  const std::vector<v1::GateVerdict> verdicts = JudgeGates(relational, results);
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_EQ(verdicts[0].value(), 0.2);
  EXPECT_EQ(verdicts[0].outcome(), v1::GATE_PASS);

  v1::AuditSpec forgetting;
  forgetting.set_seed(1);
  forgetting.mutable_forgetting();
  ApplyDefaults(&forgetting);
  const std::vector<GateMetric> curve_metrics =
      HandlerFor(forgetting.kind_case())->GateMetrics(forgetting);
  ASSERT_FALSE(curve_metrics.empty());
  EXPECT_EQ(curve_metrics[0].name,
            absl::StrCat("accuracy_at_", forgetting.forgetting().eval_points(0)));
}

// An exposure audit with extractable memorization gates each group's
// fraction extracted, judged from its Clopper-Pearson interval.
TEST(GatesTest, ExtractableFractionsAreGatedByTheirInterval) {
  v1::AuditSpec spec = SmallExposureSpec(/*with_defaults=*/false);
  spec.mutable_exposure()->mutable_extractable()->add_duplicates(16);
  ApplyDefaults(&spec);
  *spec.add_gates() = Max("extractable_16x", 0.5);
  const std::vector<GateMetric> metrics = HandlerFor(spec.kind_case())->GateMetrics(spec);
  ASSERT_EQ(metrics.back().name, "extractable_16x");
  v1::AuditResults results;
  v1::ExtractableGroup* g = results.mutable_exposure()->add_extractable();
  g->set_duplicates(16);
  g->set_fraction(0.9);
  g->set_fraction_low(0.6);
  g->set_fraction_high(0.99);
  std::vector<v1::GateVerdict> verdicts = JudgeGates(spec, results);
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_EQ(verdicts[0].outcome(), v1::GATE_FAIL) << "the whole interval is above 0.5";
  g->set_fraction_low(0.3);
  EXPECT_EQ(JudgeGates(spec, results)[0].outcome(), v1::GATE_INCONCLUSIVE);
}

}  // namespace
}  // namespace memaudit::spec
