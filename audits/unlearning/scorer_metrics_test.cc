#include "audits/unlearning/scorer_metrics.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "audits/unlearning/signals.h"
#include "common/base/seeding.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scoring/attack_classifier.h"
#include "services/scorer/scorer.h"

namespace memaudit::scorer {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

constexpr int kClasses = 3;

v1::AuditSpec Spec() {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(3);
  v1::UnlearningAudit* u = spec.mutable_unlearning();
  u->set_method("scratch");
  u->set_deletion("single");
  u->set_group_size(1);
  u->set_seed_policy("shared");
  for (v1::UnlearningSide* s : {u->mutable_shadow(), u->mutable_target()}) {
    s->set_originals(2);
    s->set_samples(100);
    s->set_unlearned(40);
  }
  u->add_features("sorted_diff");
  u->add_features("euclidean_distance");
  u->add_attack_classifiers("logistic_regression");
  u->add_attack_classifiers("gradient_boosting");
  u->add_defenses("none");
  u->add_defenses("label_only");
  return spec;
}

// Softmax of logits drawn from `rng`; the deleted sample (member) loses
// `drop` of logit on its top class in the unlearned model, a sample in
// neither model only jitters. p_o itself is distributed alike for both, so
// the classical baseline is at chance.
void Row(SplitMix64& rng, bool member, std::vector<double>* po, std::vector<double>* pu) {
  double z[kClasses], zu[kClasses], s = 0, su = 0;
  int top = 0;
  for (int c = 0; c < kClasses; ++c) {
    z[c] = 4 * (rng.UniformDouble() - 0.5);
    if (z[c] > z[top]) top = c;
  }
  for (int c = 0; c < kClasses; ++c) {
    zu[c] = z[c] + 0.02 * (rng.UniformDouble() - 0.5) - (member && c == top ? 1.0 : 0.0);
    s += std::exp(z[c]);
    su += std::exp(zu[c]);
  }
  for (int c = 0; c < kClasses; ++c) {
    po->push_back(std::exp(z[c]) / s);
    pu->push_back(std::exp(zu[c]) / su);
  }
}

std::vector<double> OneHot(const std::vector<double>& p) {
  std::vector<double> out(p.size(), 0.0);
  for (size_t r = 0; r < p.size() / kClasses; ++r) {
    size_t best = 0;
    for (size_t c = 1; c < kClasses; ++c) {
      if (p[r * kClasses + c] > p[r * kClasses + best]) best = c;
    }
    out[r * kClasses + best] = 1.0;
  }
  return out;
}

// `mislabelled_shadow`: shadow original 1 swaps its members and
// non-members, so it teaches an attack the opposite of original 0.
std::vector<v1::Observation> HandBuilt(const std::string& audit_id,
                                       bool mislabelled_shadow = false) {
  SplitMix64 rng(11);
  std::vector<v1::Observation> out;
  auto add = [&](const std::string& point, const std::string& signal, uint32_t run,
                 const std::vector<double>& values) {
    v1::Observation& o = out.emplace_back();
    o.set_audit_id(audit_id);
    o.set_run(run);
    o.set_point(point);
    o.set_signal(signal);
    o.mutable_values()->Add(values.begin(), values.end());
  };
  for (const char* side : {"shadow", "target"}) {
    for (uint32_t i = 0; i < 2; ++i) {
      // train, test accuracy, models trained, epsilon
      add(side, "original", i, {0.9 + 0.05 * i, 0.8, 41, 1.5 + i});
      for (uint32_t j = 0; j < 40; ++j) {
        std::vector<double> po, pu;
        const bool swap = mislabelled_shadow && side == std::string("shadow") && i == 1;
        Row(rng, !swap, &po, &pu);
        Row(rng, swap, &po, &pu);
        std::vector<double> full = po;
        full.insert(full.end(), pu.begin(), pu.end());
        std::vector<double> label = OneHot(po);
        const std::vector<double> label_u = OneHot(pu);
        label.insert(label.end(), label_u.begin(), label_u.end());
        const std::string point = unlearning::ChildPoint(side, j);
        add(point, "posteriors/none", i, full);
        add(point, "posteriors/label_only", i, label);
      }
    }
  }
  return out;
}

UnlearningSignals ToSignals(const std::vector<v1::Observation>& observations) {
  UnlearningSignals s;
  for (const v1::Observation& o : observations) {
    s[{o.point(), o.signal()}][o.run()].assign(o.values().begin(), o.values().end());
  }
  return s;
}

const v1::UnlearningAttackResult* Find(const v1::AuditResults& r, const std::string& defense,
                                       const std::string& feature, const std::string& classifier) {
  for (const v1::UnlearningAttackResult& a : r.unlearning().attacks()) {
    if (a.defense() == defense && a.feature() == feature && a.classifier() == classifier) return &a;
  }
  return nullptr;
}

TEST(UnlearningMetricsTest, AttackBeatsTheBaselineWhichLabelsOnlyDefeat) {
  const v1::AuditSpec spec = Spec();
  const UnlearningSignals signals = ToSignals(HandBuilt("u"));
  ASSERT_TRUE(UnlearningSignalsComplete(spec.unlearning(), signals));
  auto results = ScoreUnlearning(spec, signals);
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_EQ(results->kind(), v1::UNLEARNING);
  EXPECT_TRUE(results->complete());
  const v1::UnlearningResults& u = results->unlearning();
  EXPECT_EQ(u.method(), "scratch");
  EXPECT_EQ(u.deletion(), "single");
  EXPECT_EQ(u.seed_policy(), "shared");
  EXPECT_EQ(u.shadow_rows(), 2u * 40u * 2u);
  EXPECT_EQ(u.target_rows(), 160u);
  EXPECT_DOUBLE_EQ(u.target_train_accuracy(), 0.925);
  EXPECT_DOUBLE_EQ(u.target_test_accuracy(), 0.8);
  EXPECT_NEAR(u.overfitting(), 0.125, 1e-12);
  EXPECT_EQ(u.models_trained(), 4u * 41u);
  EXPECT_DOUBLE_EQ(u.dp_epsilon(), 2.5);
  // 2 defenses x (baseline + 2 features) x 2 classifiers, in that order.
  ASSERT_EQ(u.attacks_size(), 12);
  EXPECT_EQ(u.attacks(0).feature(), "baseline");
  EXPECT_EQ(u.attacks(0).classifier(), "logistic_regression");
  EXPECT_EQ(u.attacks(1).classifier(), "gradient_boosting");
  EXPECT_EQ(u.attacks(2).feature(), "sorted_diff");
  EXPECT_EQ(u.attacks(6).defense(), "label_only");

  for (const char* classifier : {"logistic_regression", "gradient_boosting"}) {
    const auto* base = Find(*results, "none", "baseline", classifier);
    const auto* diff = Find(*results, "none", "sorted_diff", classifier);
    const auto* dist = Find(*results, "none", "euclidean_distance", classifier);
    ASSERT_TRUE(base && diff && dist);
    EXPECT_NEAR(base->auc(), 0.5, 0.15) << classifier;
    // The baseline is noise: its interval holds chance; the leak's does not.
    EXPECT_LT(base->auc_low(), 0.5) << classifier;
    EXPECT_GT(base->auc_high(), 0.5) << classifier;
    EXPECT_GT(diff->auc_low(), 0.5) << classifier;
    EXPECT_LE(diff->auc_low(), diff->auc());
    EXPECT_EQ(base->deg_count(), 0);
    EXPECT_GT(diff->auc(), 0.9) << classifier;
    EXPECT_GT(dist->auc(), 0.9) << classifier;
    EXPECT_GT(diff->deg_count(), 0.5) << classifier;
    EXPECT_GT(diff->deg_rate(), 0.1) << classifier;
    // Their intervals over the target rows: around the value, and clear of
    // "no difference" for a leak this strong.
    EXPECT_LE(diff->deg_count_low(), diff->deg_count()) << classifier;
    EXPECT_GE(diff->deg_count_high(), diff->deg_count()) << classifier;
    EXPECT_GT(diff->deg_count_low(), 0.5) << classifier;
    EXPECT_LE(diff->deg_rate_low(), diff->deg_rate()) << classifier;
    EXPECT_GE(diff->deg_rate_high(), diff->deg_rate()) << classifier;
    EXPECT_GT(diff->deg_rate_low(), 0.0) << classifier;
    EXPECT_EQ(base->deg_count_low(), 0) << "the baseline has none";
    // Only the deletions that flip the label remain visible.
    const auto* label = Find(*results, "label_only", "sorted_diff", classifier);
    ASSERT_TRUE(label);
    EXPECT_LT(label->auc(), diff->auc() - 0.1) << classifier;
  }
  // Deterministic.
  auto again = ScoreUnlearning(spec, signals);
  MEMAUDIT_ASSERT_OK(again);
  EXPECT_EQ(again->SerializeAsString(), results->SerializeAsString());
}

// Re-run intervals come from resampling the target originals: they hold
// each estimate, and an audit of one target original has none to resample.
TEST(UnlearningMetricsTest, ReRunIntervalsResampleTheTargetOriginals) {
  const UnlearningSignals signals = ToSignals(HandBuilt("u"));
  auto results = ScoreUnlearning(Spec(), signals);
  MEMAUDIT_ASSERT_OK(results);
  for (const char* classifier : {"logistic_regression", "gradient_boosting"}) {
    SCOPED_TRACE(classifier);
    const auto* base = Find(*results, "none", "baseline", classifier);
    const auto* diff = Find(*results, "none", "sorted_diff", classifier);
    ASSERT_TRUE(base && diff);
    for (const auto* a : {base, diff}) {
      EXPECT_LE(a->auc_rerun_low(), a->auc());
      EXPECT_GE(a->auc_rerun_high(), a->auc());
    }
    EXPECT_LT(base->auc_rerun_low(), base->auc_rerun_high()) << "chance varies between models";
    EXPECT_LE(diff->deg_count_rerun_low(), diff->deg_count());
    EXPECT_GE(diff->deg_count_rerun_high(), diff->deg_count());
    EXPECT_LE(diff->deg_rate_rerun_low(), diff->deg_rate());
    EXPECT_GE(diff->deg_rate_rerun_high(), diff->deg_rate());
    EXPECT_LE(diff->deg_count_rerun_high(), 1.0);
    EXPECT_EQ(base->deg_count_rerun_high(), 0) << "the baseline has none";
  }
  v1::AuditSpec one = Spec();
  one.mutable_unlearning()->mutable_target()->set_originals(1);
  auto single = ScoreUnlearning(one, signals);
  MEMAUDIT_ASSERT_OK(single);
  for (const v1::UnlearningAttackResult& a : single->unlearning().attacks()) {
    EXPECT_EQ(a.auc_rerun_low(), 0);
    EXPECT_EQ(a.auc_rerun_high(), 0);
  }
}

// A re-run also redraws the shadow originals the attack learns from: the
// re-run interval refits the attack on resampled shadow sides. When one
// shadow original teaches the opposite of the other, a resample of either
// alone flips the attack, and the interval spans most of [0, 1]; when
// both agree it stays narrow.
TEST(UnlearningMetricsTest, ReRunIntervalsRefitTheAttackOnResampledShadowSides) {
  auto agreeing = ScoreUnlearning(Spec(), ToSignals(HandBuilt("u")));
  auto opposed = ScoreUnlearning(Spec(), ToSignals(HandBuilt("u", /*mislabelled_shadow=*/true)));
  MEMAUDIT_ASSERT_OK(agreeing);
  MEMAUDIT_ASSERT_OK(opposed);
  for (const char* classifier : {"logistic_regression", "gradient_boosting"}) {
    SCOPED_TRACE(classifier);
    const auto* narrow = Find(*agreeing, "none", "sorted_diff", classifier);
    const auto* wide = Find(*opposed, "none", "sorted_diff", classifier);
    ASSERT_TRUE(narrow && wide);
    EXPECT_LT(narrow->auc_rerun_high() - narrow->auc_rerun_low(), 0.2);
    EXPECT_GT(wide->auc_rerun_high() - wide->auc_rerun_low(), 0.6);
    EXPECT_LE(wide->auc_rerun_low(), wide->auc());
    EXPECT_GE(wide->auc_rerun_high(), wide->auc());
  }
}

TEST(UnlearningMetricsTest, MissingSignalsAreNotScored) {
  const v1::AuditSpec spec = Spec();
  UnlearningSignals signals = ToSignals(HandBuilt("u"));
  signals[{"target/39", "posteriors/label_only"}].erase(1);
  EXPECT_FALSE(UnlearningSignalsComplete(spec.unlearning(), signals));
  EXPECT_THAT(ScoreUnlearning(spec, signals), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(RequiredUnlearningSignals(spec.unlearning()).size(), 2u * (1u + 40u * 2u));
}

TEST(UnlearningMetricsTest, BadObservationsNameTheField) {
  const v1::AuditSpec spec = Spec();
  const v1::UnlearningAudit& u = spec.unlearning();
  v1::Observation good;
  good.set_point("target/3");
  good.set_signal("posteriors/none");
  good.set_run(1);
  for (int k = 0; k < 2 * 2 * kClasses; ++k) good.add_values(1.0 / kClasses);
  MEMAUDIT_EXPECT_OK(ValidateUnlearningObservation(u, good));
  auto refused = [&](const v1::Observation& o) {
    return std::string(ValidateUnlearningObservation(u, o).message());
  };
  v1::Observation o = good;
  o.set_point("target/40");
  EXPECT_THAT(refused(o), HasSubstr("observation.point"));
  o = good;
  o.set_point("middle/1");
  EXPECT_THAT(refused(o), HasSubstr("observation.point"));
  o = good;
  o.set_run(2);
  EXPECT_THAT(refused(o), HasSubstr("observation.run"));
  o = good;
  o.set_signal("posteriors/temperature");
  EXPECT_THAT(refused(o), HasSubstr("observation.signal"));
  o = good;
  o.add_values(0.5);
  EXPECT_THAT(refused(o), HasSubstr("observation.values"));
  o = good;
  o.set_values(3, 1.5);
  EXPECT_THAT(refused(o), HasSubstr("observation.values[3]"));
  o = good;
  o.set_values(0, std::nan(""));
  EXPECT_THAT(refused(o), HasSubstr("not a finite number"));
  v1::Observation summary;
  summary.set_point("shadow");
  summary.set_signal("original");
  summary.add_values(1);
  EXPECT_THAT(refused(summary), HasSubstr("observation.values: expected 4"));
  summary.set_signal("posteriors/none");
  EXPECT_THAT(refused(summary), HasSubstr("observation.signal"));
}

TEST(UnlearningMetricsTest, ClassifierNamesMatchTheScoringLibrary) {
  EXPECT_EQ(unlearning::ClassifierNames(), scoring::AttackClassifierNames());
}

TEST(UnlearningMetricsTest, ScorerScoresOnceEveryTaskIsInAndPublishesGauges) {
  const std::string path =
      ::testing::TempDir() + "/unlearning_scorer_" + std::to_string(getpid()) + ".db";
  std::remove(path.c_str());
  auto store = ScorerStore::Open(path);
  MEMAUDIT_ASSERT_OK(store);
  prometheus::Registry registry;
  auto scorer = Scorer::Create(store->get(), &registry);
  MEMAUDIT_ASSERT_OK(scorer);
  const v1::AuditSpec spec = Spec();
  MEMAUDIT_ASSERT_OK((*scorer)->OpenAudit("u", spec));
  const std::vector<v1::Observation> all = HandBuilt("u");
  for (size_t k = 0; k + 1 < all.size(); ++k) MEMAUDIT_ASSERT_OK((*scorer)->Ingest(all[k]));
  MEMAUDIT_ASSERT_OK((*scorer)->ScoreIfComplete("u"));
  auto partial = (*scorer)->GetResults("u");
  MEMAUDIT_ASSERT_OK(partial);
  EXPECT_FALSE(partial->complete());
  EXPECT_EQ(partial->kind(), v1::UNLEARNING);
  MEMAUDIT_ASSERT_OK((*scorer)->Ingest(all.back()));
  MEMAUDIT_ASSERT_OK((*scorer)->ScoreIfComplete("u"));
  auto results = (*scorer)->GetResults("u");
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  EXPECT_EQ(results->audit_id(), "u");
  const auto* diff = Find(*results, "none", "sorted_diff", "gradient_boosting");
  ASSERT_TRUE(diff);
  const std::string text = metrics::Exposition(registry);
  EXPECT_THAT(text,
              HasSubstr(absl::StrCat(
                  "memaudit_unlearning_auc_ratio{audit=\"u\",classifier=\"gradient_boosting\","
                  "defense=\"none\",feature=\"sorted_diff\",team=\"\"} ")));
  EXPECT_THAT(text, HasSubstr("memaudit_unlearning_auc_ratio{audit=\"u\",classifier="
                              "\"logistic_regression\",defense=\"label_only\",feature="
                              "\"baseline\",team=\"\"}"));
  EXPECT_THAT(text, HasSubstr("memaudit_unlearning_degcount_ratio{audit=\"u\""));
  EXPECT_THAT(text, HasSubstr("memaudit_unlearning_degrate_ratio{audit=\"u\""));
  // The intervals' ends, labelled like the value.
  const std::string cell =
      "{audit=\"u\",classifier=\"gradient_boosting\",defense=\"none\",feature=\"sorted_diff\","
      "team=\"\"} ";
  EXPECT_THAT(text, HasSubstr(absl::StrCat("memaudit_unlearning_degcount_low_ratio", cell)));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("memaudit_unlearning_degcount_high_ratio", cell)));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("memaudit_unlearning_degrate_low_ratio", cell)));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("memaudit_unlearning_degrate_high_ratio", cell)));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("degcount_ratio{audit=\"u\",classifier="
                                             "\"gradient_boosting\",defense=\"none\",feature="
                                             "\"baseline\",team=\"\"}")));
  scorer->reset();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace memaudit::scorer
