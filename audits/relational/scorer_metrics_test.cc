#include "audits/relational/scorer_metrics.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "audits/relational/signals.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scoring/difference_intervals.h"
#include "services/scorer/kind_handler.h"

namespace memaudit::scorer {
namespace {

using ::testing::HasSubstr;

// Two widths, 3 epochs, 4 training and 4 held-out 3-digit numbers.
v1::AuditSpec PhoneBookSpec() {
  v1::AuditSpec spec;
  spec.set_name("test");
  v1::RelationalAudit* r = spec.mutable_relational();
  v1::PhoneBookSpec* p = r->mutable_phone_book();
  p->set_records(4);
  p->set_validation_records(4);
  p->set_digits(3);
  p->mutable_training()->set_epochs(3);
  p->add_units_sweep(8);
  p->add_units_sweep(64);
  r->add_metrics("exact_match");
  r->add_metrics("digit_f1");
  return spec;
}

std::vector<double> Lines(const std::vector<std::string>& lines) {
  std::vector<double> out;
  relational::AppendLines(lines, &out);
  return out;
}

const std::vector<std::string> kTrain = {"123", "456", "789", "012"};
const std::vector<std::string> kVal = {"111", "222", "333", "444"};

// Variant 0 never recalls a training number; variant 1 recalls more every
// epoch. Held-out predictions share one digit with their number.
RelationalSignals PhoneBookSignals(int epochs_of_variant_1) {
  RelationalSignals s;
  for (uint32_t v = 0; v < 2; ++v) {
    s[{relational::kTruthPoint, relational::kNumbersTrain}][v] = Lines(kTrain);
    s[{relational::kTruthPoint, relational::kNumbersVal}][v] = Lines(kVal);
    const int epochs = v == 0 ? 3 : epochs_of_variant_1;
    for (int e = 1; e <= epochs; ++e) {
      std::vector<std::string> train = {"999", "999", "999", "999"};
      if (v == 1) {
        for (int i = 0; i < e + 1 && i < 4; ++i) train[i] = kTrain[i];
      }
      const std::string point = absl::StrCat(e);
      s[{point, relational::kPredictedTrain}][v] = Lines(train);
      s[{point, relational::kPredictedVal}][v] = Lines({"199", "299", "399", "499"});
      s[{point, relational::kCleanTrain}][v] = {0.5 + 0.1 * e};
      s[{point, relational::kCleanVal}][v] = {0.5};
    }
  }
  return s;
}

TEST(RelationalMetricsTest, PhoneBookCurvesUseTheSuccessMetrics) {
  auto results = ScoreRelational(PhoneBookSpec(), PhoneBookSignals(3));
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_TRUE(results->complete());
  EXPECT_EQ(results->kind(), v1::RELATIONAL);
  EXPECT_EQ(results->models(), 2u);
  const v1::RelationalResults& r = results->relational();
  EXPECT_EQ(r.model(), "phone_book");
  ASSERT_EQ(r.curves_size(), 2);
  EXPECT_EQ(r.curves(1).variant(), "units=64");
  ASSERT_EQ(r.curves(1).points_size(), 6);  // 3 epochs x 2 metrics
  const v1::RelationalPoint& em1 = r.curves(1).points(0);
  EXPECT_EQ(em1.step(), 1u);
  EXPECT_EQ(em1.metric(), "exact_match");
  EXPECT_DOUBLE_EQ(em1.success_train(), 0.5);  // 2 of 4 recalled at epoch 1
  EXPECT_DOUBLE_EQ(em1.success_val(), 0.0);
  EXPECT_DOUBLE_EQ(em1.rm_norm(), 0.5);
  EXPECT_DOUBLE_EQ(em1.clean_train(), 0.6);
  // Exact match is 0/1 per record: Clopper–Pearson for 2/4 and 0/4,
  // Newcombe's interval for the difference.
  EXPECT_EQ(em1.success_train_low(), scoring::ClopperPearson(2, 4)->lo);
  EXPECT_EQ(em1.success_train_high(), scoring::ClopperPearson(2, 4)->hi);
  EXPECT_EQ(em1.success_val_low(), 0.0);
  EXPECT_EQ(em1.success_val_high(), scoring::ClopperPearson(0, 4)->hi);
  EXPECT_EQ(em1.rm_norm_low(), scoring::NewcombeDifference(2, 4, 0, 4)->lo);
  EXPECT_EQ(em1.rm_norm_high(), scoring::NewcombeDifference(2, 4, 0, 4)->hi);
  const v1::RelationalPoint& em3 = r.curves(1).points(4);
  EXPECT_EQ(em3.step(), 3u);
  EXPECT_DOUBLE_EQ(em3.rm_norm(), 1.0);
  // Digit F1: "199" vs "111" shares one "1" of three digits on each side.
  const v1::RelationalPoint& f1 = r.curves(1).points(5);
  EXPECT_EQ(f1.metric(), "digit_f1");
  EXPECT_NEAR(f1.success_val(), 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(f1.rm_norm(), 1.0 - 1.0 / 3.0, 1e-12);
  // Digit F1 at epoch 3: training all 1 (a count, 4/4), held-out all 1/3
  // (no spread): the difference keeps the training split's Wilson width.
  EXPECT_EQ(f1.success_train_low(), scoring::ClopperPearson(4, 4)->lo);
  EXPECT_NEAR(f1.success_val_low(), 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(f1.success_val_high(), 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(f1.rm_norm_low(), 2.0 / 3.0 - (1.0 - scoring::WilsonScore(4, 4)->lo), 1e-12);
  EXPECT_NEAR(f1.rm_norm_high(), 2.0 / 3.0, 1e-12);
  // Variant 0 recalls nothing: RM_norm <= 0 for exact match.
  EXPECT_DOUBLE_EQ(r.curves(0).points(4).rm_norm(), 0.0);
}

TEST(RelationalMetricsTest, PartialCurvesAreAPrefix) {
  auto results = ScoreRelational(PhoneBookSpec(), PhoneBookSignals(1));
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_FALSE(results->complete());
  EXPECT_EQ(results->relational().curves(0).points_size(), 6);
  EXPECT_EQ(results->relational().curves(1).points_size(), 2);
  // A missing point in the middle stops the curve there.
  RelationalSignals gap = PhoneBookSignals(3);
  gap.erase({"2", relational::kCleanVal});
  auto cut = ScoreRelational(PhoneBookSpec(), gap);
  MEMAUDIT_ASSERT_OK(cut);
  EXPECT_EQ(cut->relational().curves(0).points_size(), 2);
  EXPECT_FALSE(cut->complete());
}

v1::AuditSpec LinearSpec() {
  v1::AuditSpec spec;
  spec.set_name("test");
  v1::LinearRelationalSpec* l = spec.mutable_relational()->mutable_linear();
  l->set_samples(4);
  l->set_label_dims(2);
  l->add_key_dims(10);
  l->add_steps(1);
  l->add_steps(100);
  l->set_tolerance(0.25);
  l->set_step_fraction(1);
  return spec;
}

// Three replicates of the two-width phone book: replicate 0's curves are the
// audit without replicates, and each point gains its numbers across the
// replicates (the mean of each replicate's rates and the interval a re-run
// would fall in) once every replicate reached it.
TEST(RelationalMetricsTest, ReplicatesAddEachPointsNumbersAcrossThem) {
  v1::AuditSpec spec = PhoneBookSpec();
  spec.mutable_relational()->set_replicates(3);
  RelationalSignals signals = PhoneBookSignals(3);
  // Replicate r's runs 2r and 2r + 1: variant 1 recalls r fewer training
  // numbers at every epoch.
  const RelationalSignals base = signals;
  for (uint32_t r = 1; r < 3; ++r) {
    for (const auto& [key, runs] : base) {
      for (const auto& [variant, values] : runs) {
        std::vector<double> copy = values;
        if (key.second == relational::kPredictedTrain && variant == 1) {
          std::vector<std::string> lines = {"999", "999", "999", "999"};
          const int epoch = std::stoi(key.first);
          for (int i = 0; i < epoch + 1 - static_cast<int>(r) && i < 4; ++i) lines[i] = kTrain[i];
          copy = Lines(lines);
        }
        signals[key][2 * r + variant] = copy;
      }
    }
  }
  auto results = ScoreRelational(spec, signals);
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_TRUE(results->complete());
  EXPECT_EQ(results->models(), 6u);
  const v1::RelationalResults& r = results->relational();
  EXPECT_EQ(r.replicates(), 3u);
  ASSERT_EQ(r.curves_size(), 2);
  auto single = ScoreRelational(PhoneBookSpec(), PhoneBookSignals(3));
  MEMAUDIT_ASSERT_OK(single);
  const v1::RelationalPoint& point = r.curves(1).points(0);  // epoch 1, exact_match
  EXPECT_EQ(point.rm_norm(), single->relational().curves(1).points(0).rm_norm())
      << "the curves are replicate 0's";
  ASSERT_TRUE(point.has_across_replicates());
  const v1::RelationalAcrossReplicates& across = point.across_replicates();
  EXPECT_EQ(across.replicates(), 3u);
  // Training recall 2/4, 1/4, 0/4 at epoch 1; held-out 0 throughout.
  EXPECT_DOUBLE_EQ(across.success_train().mean(), 0.25);
  EXPECT_DOUBLE_EQ(across.rm_norm().mean(), 0.25);
  EXPECT_DOUBLE_EQ(across.success_val().mean(), 0.0);
  EXPECT_DOUBLE_EQ(across.rm_norm().stddev(), 0.25);
  // t(2) = 4.3027: mean ± t · 0.25 · √(2/3), cut to [-1, 1].
  const double half = 4.302652729911275 * 0.25 * std::sqrt(2.0 / 3.0);
  EXPECT_NEAR(across.rm_norm().rerun_low(), 0.25 - half, 1e-9);
  EXPECT_EQ(across.rm_norm().rerun_high(), 1.0) << "0.25 + 0.878 is cut to 1";
  // Two replicates give t with one degree of freedom: the results warn.
  v1::AuditSpec two = spec;
  two.mutable_relational()->set_replicates(2);
  const std::vector<v1::ResultWarning> warned =
      HandlerFor(v1::AuditSpec::kRelational)->Warnings(two);
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_EQ(warned[0].code(), "few_replicates");
  EXPECT_TRUE(HandlerFor(v1::AuditSpec::kRelational)->Warnings(spec).empty());
  // A replicate that has not reached a point leaves it without.
  for (const char* name : {relational::kPredictedTrain, relational::kPredictedVal,
                           relational::kCleanTrain, relational::kCleanVal}) {
    signals[{"3", name}].erase(5);
  }
  auto partial = ScoreRelational(spec, signals);
  MEMAUDIT_ASSERT_OK(partial);
  EXPECT_FALSE(partial->complete());
  const auto& curve = partial->relational().curves(1);
  EXPECT_TRUE(curve.points(0).has_across_replicates());
  EXPECT_FALSE(curve.points(curve.points_size() - 1).has_across_replicates());
}

TEST(RelationalMetricsTest, LinearSuccessIsWithinTolerance) {
  RelationalSignals s;
  s[{relational::kTruthPoint, relational::kTargetTrain}][0] = {1, 2, 3, 4};
  s[{relational::kTruthPoint, relational::kTargetVal}][0] = {1, 2, 3, 4};
  s[{"1", relational::kRecoveredTrain}][0] = {1.1, 2.3, 0, 0};
  s[{"1", relational::kRecoveredVal}][0] = {0, 0, 0, 4.2};
  s[{"1", relational::kCleanTrain}][0] = {0.7};
  s[{"1", relational::kCleanVal}][0] = {0.9};
  auto results = ScoreRelational(LinearSpec(), s);
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_FALSE(results->complete());
  const v1::RelationalResults& r = results->relational();
  EXPECT_EQ(r.model(), "linear");
  EXPECT_THAT(r.metrics(), ::testing::ElementsAre("within_tolerance"));
  ASSERT_EQ(r.curves(0).points_size(), 1);
  const v1::RelationalPoint& p = r.curves(0).points(0);
  EXPECT_EQ(r.curves(0).variant(), "d_x=10");
  EXPECT_DOUBLE_EQ(p.success_train(), 0.25);
  EXPECT_DOUBLE_EQ(p.success_val(), 0.25);
  EXPECT_DOUBLE_EQ(p.rm_norm(), 0.0);
  EXPECT_DOUBLE_EQ(p.clean_val(), 0.9);
  // 1 of 4 samples within the tolerance on each side.
  EXPECT_EQ(p.success_train_high(), scoring::ClopperPearson(1, 4)->hi);
  EXPECT_EQ(p.rm_norm_low(), scoring::NewcombeDifference(1, 4, 1, 4)->lo);
  EXPECT_DOUBLE_EQ(p.rm_norm_high(), -p.rm_norm_low());
}

v1::Observation Obs(const std::string& point, const std::string& signal, std::vector<double> values,
                    uint32_t run = 0) {
  v1::Observation o;
  o.set_audit_id("a");
  o.set_run(run);
  o.set_point(point);
  o.set_signal(signal);
  o.mutable_values()->Add(values.begin(), values.end());
  return o;
}

TEST(RelationalMetricsTest, ObservationsAreCheckedByField) {
  const v1::RelationalAudit r = PhoneBookSpec().relational();
  MEMAUDIT_EXPECT_OK(ValidateRelationalObservation(
      r, Obs(relational::kTruthPoint, relational::kNumbersTrain, Lines(kTrain))));
  MEMAUDIT_EXPECT_OK(ValidateRelationalObservation(r, Obs("3", relational::kCleanVal, {0.4}, 1)));
  auto message = [&](const v1::Observation& o) {
    return std::string(ValidateRelationalObservation(r, o).message());
  };
  EXPECT_THAT(message(Obs("1", relational::kCleanVal, {0.4}, 2)), HasSubstr("observation.run"));
  EXPECT_THAT(message(Obs("4", relational::kCleanVal, {0.4})), HasSubstr("observation.point"));
  EXPECT_THAT(message(Obs("01", relational::kCleanVal, {0.4})), HasSubstr("observation.point"));
  EXPECT_THAT(message(Obs("1", relational::kNumbersVal, Lines(kVal))),
              HasSubstr("observation.signal"));
  EXPECT_THAT(message(Obs("1", relational::kCleanVal, {1.5})), HasSubstr("not an accuracy"));
  EXPECT_THAT(message(Obs("1", relational::kPredictedVal, Lines({"1", "2"}))),
              HasSubstr("expected 4 lines"));
  EXPECT_THAT(message(Obs(relational::kTruthPoint, relational::kNumbersVal,
                          Lines({"11", "222", "333", "444"}))),
              HasSubstr("not a 3-digit number"));
  EXPECT_THAT(message(Obs("1", relational::kPredictedVal, {300})), HasSubstr("not a byte"));
  const v1::RelationalAudit l = LinearSpec().relational();
  MEMAUDIT_EXPECT_OK(
      ValidateRelationalObservation(l, Obs("100", relational::kRecoveredVal, {1, 2, 3, 4})));
  EXPECT_THAT(std::string(ValidateRelationalObservation(
                              l, Obs("10", relational::kRecoveredVal, {1, 2, 3, 4}))
                              .message()),
              HasSubstr("observation.point"));
  EXPECT_THAT(
      std::string(ValidateRelationalObservation(l, Obs("1", relational::kRecoveredVal, {1, 2, 3}))
                      .message()),
      HasSubstr("expected 4 values"));
}

TEST(RelationalMetricsTest, GaugeHoldsTheLatestPointPerVariantAndMetric) {
  auto results = ScoreRelational(PhoneBookSpec(), PhoneBookSignals(2));
  MEMAUDIT_ASSERT_OK(results);
  results->set_audit_id("a-1");
  prometheus::Registry registry;
  PublishRelational(&registry, *results, "t");
  const std::string text = metrics::Exposition(registry);
  EXPECT_THAT(text, HasSubstr("# TYPE memaudit_relational_rm_norm_ratio gauge"));
  // Variant 1 reached epoch 2: 3 of 4 recalled.
  EXPECT_THAT(text, HasSubstr("memaudit_relational_rm_norm_ratio{audit=\"a-1\",metric=\"exact_"
                              "match\",team=\"t\",variant=\"units=64\"} 0.75"));
  EXPECT_THAT(text, HasSubstr("metric=\"digit_f1\",team=\"t\",variant=\"units=8\"}"));
  EXPECT_THAT(text, HasSubstr("memaudit_relational_success_ratio{audit=\"a-1\",metric=\"exact_"
                              "match\",split=\"train\",team=\"t\",variant=\"units=64\"} 0.75"));
  // The intervals' ends, labelled like the values.
  EXPECT_THAT(text, HasSubstr("memaudit_relational_rm_norm_low_ratio{audit=\"a-1\",metric=\"exact_"
                              "match\",team=\"t\",variant=\"units=64\"}"));
  EXPECT_THAT(text, HasSubstr("memaudit_relational_rm_norm_high_ratio{audit=\"a-1\""));
  EXPECT_THAT(text, HasSubstr("memaudit_relational_success_low_ratio{audit=\"a-1\",metric=\"exact_"
                              "match\",split=\"val\",team=\"t\",variant=\"units=64\"} 0"));
  EXPECT_THAT(text, HasSubstr("memaudit_relational_success_high_ratio{audit=\"a-1\""));
}

}  // namespace
}  // namespace memaudit::scorer
