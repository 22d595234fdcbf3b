#include "audits/unlearning/scorer_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "audits/unlearning/signals.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "common/messages/export_arrays.h"
#include "scoring/attack_evaluation.h"
#include "scoring/auc_interval.h"
#include "scoring/degradation.h"
#include "scoring/ranked_scores.h"
#include "scoring/rerun_interval.h"
#include "scoring/unlearning_features.h"

namespace memaudit::scorer {
namespace {

// Refits of every attack per defense for the shadow side's part of the
// re-run intervals (ShadowRefitErrors): each refits all the defense's
// classifiers, so far fewer than the target side's kRerunResamples. On
// unlearning-scratch 16 cover >= 90% for 100 of 108 metrics, 32 for 103 at
// twice the scoring time (docs/scoring.md).
constexpr uint32_t kShadowRefitResamples = 16;

bool IsDefense(const v1::UnlearningAudit& u, absl::string_view defense) {
  return std::find(u.defenses().begin(), u.defenses().end(), defense) != u.defenses().end();
}

absl::StatusOr<scoring::UnlearningFeature> FeatureKind(const std::string& name) {
  if (name == "direct_concat") return scoring::UnlearningFeature::kDirectConcat;
  if (name == "sorted_concat") return scoring::UnlearningFeature::kSortedConcat;
  if (name == "direct_diff") return scoring::UnlearningFeature::kDirectDiff;
  if (name == "sorted_diff") return scoring::UnlearningFeature::kSortedDiff;
  if (name == "euclidean_distance") return scoring::UnlearningFeature::kEucDist;
  if (name == unlearning::kBaselineFeature) return scoring::UnlearningFeature::kOriginalOnly;
  return absl::InvalidArgumentError(absl::StrCat("unlearning.features: unknown \"", name, "\""));
}

// One side's attack rows under one defense.
struct SideRows {
  scoring::Matrix original, unlearned;  // rows x classes
  std::vector<uint8_t> labels;
  std::vector<uint32_t> original_of;  // the original model each row comes from
};

absl::StatusOr<SideRows> BuildSide(const v1::UnlearningAudit& u, bool target,
                                   const std::string& defense, const UnlearningSignals& signals) {
  const v1::UnlearningSide& side = unlearning::SideSpec(u, target);
  const std::string name = target ? unlearning::kTarget : unlearning::kShadow;
  const size_t q = unlearning::PositivesPerChild(u);
  SideRows out;
  size_t classes = 0;
  for (uint32_t i = 0; i < side.originals(); ++i) {
    for (uint32_t j = 0; j < side.unlearned(); ++j) {
      const std::string point = unlearning::ChildPoint(name, j);
      auto it = signals.find({point, unlearning::PosteriorsSignal(defense)});
      if (it == signals.end() || it->second.count(i) == 0) {
        return absl::FailedPreconditionError(
            absl::StrCat("missing posteriors/", defense, " at point ", point, " of original ", i));
      }
      const std::vector<double>& v = it->second.at(i);
      const size_t c = v.size() / (4 * q);
      if (c < 2 || v.size() != 4 * q * c || (classes != 0 && c != classes)) {
        return absl::InvalidArgumentError(
            absl::StrCat("point ", point, " run ", i, ": inconsistent posterior size ", v.size()));
      }
      if (classes == 0) {
        classes = c;
        out.original.cols = out.unlearned.cols = c;
      }
      const size_t half = 2 * q * c;
      out.original.data.insert(out.original.data.end(), v.begin(), v.begin() + half);
      out.unlearned.data.insert(out.unlearned.data.end(), v.begin() + half, v.end());
      for (size_t r = 0; r < 2 * q; ++r) {
        out.labels.push_back(r < q ? 1 : 0);
        out.original_of.push_back(i);
      }
    }
  }
  out.original.rows = out.unlearned.rows = out.labels.size();
  return out;
}

// The re-run intervals of one target-side attack result. A re-run redraws
// both sides: a cluster bootstrap over the target originals gives the part
// of the target rows (scoring/rerun_interval.h), `shadow_se` the part of
// the attack classifier fitted on the shadow side (ShadowRefitErrors, in
// the statistics' order: AUC, then DegCount and DegRate; empty with one
// shadow original); independent, they add in quadrature. `deg` null for
// the baseline.
absl::Status SetRerunIntervals(const v1::UnlearningAudit& u, uint64_t seed, const SideRows& target,
                               const scoring::AttackEvaluation& eval,
                               const scoring::Degradation* deg, absl::Span<const double> shadow_se,
                               v1::UnlearningAttackResult* a) {
  const uint32_t originals = u.target().originals();
  if (originals < 2) return absl::OkStatus();
  MEMAUDIT_ASSIGN_OR_RETURN(const scoring::RankedScores ranked,
                            scoring::RankedScores::Rank(eval.target_probabilities));
  const scoring::WeightedStatisticsFn statistics =
      [&](absl::Span<const double> w) -> absl::StatusOr<std::vector<double>> {
    MEMAUDIT_ASSIGN_OR_RETURN(const scoring::PooledStatistics pooled,
                              scoring::WeightedStatistics(ranked, target.labels, w, {}));
    std::vector<double> out = {pooled.auc};
    if (deg != nullptr) {
      double wins = 0, gains = 0, total = 0;
      for (size_t i = 0; i < w.size(); ++i) {
        wins += w[i] * deg->wins[i];
        gains += w[i] * deg->gains[i];
        total += w[i];
      }
      out.push_back(wins / total);
      out.push_back(gains / total);
    }
    return out;
  };
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<double> se, scoring::ClusterBootstrapErrors(
                                                        target.original_of, originals, statistics,
                                                        DeriveSeed(seed, "unlearning_rerun", 0)));
  for (size_t i = 0; i < se.size() && i < shadow_se.size(); ++i) {
    se[i] = std::hypot(se[i], shadow_se[i]);
  }
  const scoring::Interval auc = scoring::RerunAround(eval.auc, se[0], scoring::kUnitInterval);
  a->set_auc_rerun_low(auc.lo);
  a->set_auc_rerun_high(auc.hi);
  if (deg == nullptr) return absl::OkStatus();
  const scoring::Interval count =
      scoring::RerunAround(deg->deg_count, se[1], scoring::kUnitInterval);
  const scoring::Interval rate = scoring::RerunAround(deg->deg_rate, se[2], {-1.0, 1.0});
  a->set_deg_count_rerun_low(count.lo);
  a->set_deg_count_rerun_high(count.hi);
  a->set_deg_rate_rerun_low(rate.lo);
  a->set_deg_rate_rerun_high(rate.hi);
  return absl::OkStatus();
}

// One attack (feature, classifier) of one defense, trained on the shadow
// side and evaluated on the target side.
struct DefenseCell {
  std::string feature;
  std::string classifier;
  scoring::AttackEvaluation evaluation;
};

// One feature's rows of both sides.
struct FeatureRows {
  std::string feature;
  scoring::Matrix shadow, target;
};

// Every attack of one defense, the baseline feature first (cells: each
// feature's classifiers in order), with both sides' rows.
struct DefenseEvaluation {
  SideRows shadow, target;
  std::vector<FeatureRows> features;
  std::vector<DefenseCell> cells;
};

absl::StatusOr<DefenseEvaluation> EvaluateDefense(const v1::UnlearningAudit& u,
                                                  const std::string& defense,
                                                  const UnlearningSignals& signals) {
  DefenseEvaluation out;
  MEMAUDIT_ASSIGN_OR_RETURN(out.shadow, BuildSide(u, false, defense, signals));
  MEMAUDIT_ASSIGN_OR_RETURN(out.target, BuildSide(u, true, defense, signals));
  if (out.shadow.original.cols != out.target.original.cols) {
    return absl::InvalidArgumentError("shadow and target posteriors have different classes");
  }
  std::vector<std::string> features = {unlearning::kBaselineFeature};
  features.insert(features.end(), u.features().begin(), u.features().end());
  for (const std::string& feature : features) {
    MEMAUDIT_ASSIGN_OR_RETURN(scoring::UnlearningFeature kind, FeatureKind(feature));
    FeatureRows rows{feature, {}, {}};
    MEMAUDIT_ASSIGN_OR_RETURN(rows.shadow, scoring::UnlearningFeatureMatrix(
                                               out.shadow.original, out.shadow.unlearned, kind));
    MEMAUDIT_ASSIGN_OR_RETURN(rows.target, scoring::UnlearningFeatureMatrix(
                                               out.target.original, out.target.unlearned, kind));
    for (const std::string& classifier : u.attack_classifiers()) {
      auto eval = scoring::EvaluateAttack(classifier, rows.shadow, out.shadow.labels, rows.target,
                                          out.target.labels);
      if (!eval.ok()) {
        return absl::Status(
            eval.status().code(),
            absl::StrCat(defense, "/", feature, "/", classifier, ": ", eval.status().message()));
      }
      out.cells.push_back({feature, classifier, *std::move(eval)});
    }
    out.features.push_back(std::move(rows));
  }
  return out;
}

// The rows of `m` each repeated weights[i] times (a bootstrap resample).
scoring::Matrix RepeatRows(const scoring::Matrix& m, absl::Span<const double> weights) {
  scoring::Matrix out;
  out.cols = m.cols;
  for (size_t i = 0; i < m.rows; ++i) {
    for (double k = 0; k < weights[i]; k += 1) {
      out.data.insert(out.data.end(), m.row(i), m.row(i) + m.cols);
      ++out.rows;
    }
  }
  return out;
}

// The shadow side's part of a re-run's spread: a cluster bootstrap over the
// shadow originals refits every attack classifier (the baseline's too) on
// the resampled shadow rows and rescores the same target rows. Returns, per
// cell of `evaluation` in order, the standard errors of its AUC and (all
// but the baseline) DegCount and DegRate against the refitted baseline of
// its classifier; empty with fewer than 2 shadow originals.
absl::StatusOr<std::vector<std::vector<double>>> ShadowRefitErrors(
    const v1::UnlearningAudit& u, uint64_t seed, const std::string& defense,
    const DefenseEvaluation& evaluation) {
  const uint32_t originals = u.shadow().originals();
  if (originals < 2) return std::vector<std::vector<double>>();
  const SideRows& shadow = evaluation.shadow;
  const SideRows& target = evaluation.target;
  const scoring::WeightedStatisticsFn statistics =
      [&](absl::Span<const double> w) -> absl::StatusOr<std::vector<double>> {
    std::vector<uint8_t> labels;
    for (size_t i = 0; i < shadow.labels.size(); ++i) {
      labels.insert(labels.end(), static_cast<size_t>(w[i]), shadow.labels[i]);
    }
    std::vector<double> out;
    std::map<std::string, std::vector<double>> baseline;  // per classifier
    for (const FeatureRows& rows : evaluation.features) {
      const scoring::Matrix resampled = RepeatRows(rows.shadow, w);
      for (const std::string& classifier : u.attack_classifiers()) {
        MEMAUDIT_ASSIGN_OR_RETURN(
            scoring::AttackEvaluation eval,
            scoring::EvaluateAttack(classifier, resampled, labels, rows.target, target.labels));
        out.push_back(eval.auc);
        if (rows.feature == unlearning::kBaselineFeature) {
          baseline[classifier] = std::move(eval.target_probabilities);
          continue;
        }
        MEMAUDIT_ASSIGN_OR_RETURN(
            const scoring::Degradation deg,
            scoring::ComputeDegradation(target.labels, eval.target_probabilities,
                                        baseline.at(classifier)));
        out.push_back(deg.deg_count);
        out.push_back(deg.deg_rate);
      }
    }
    return out;
  };
  MEMAUDIT_ASSIGN_OR_RETURN(
      const std::vector<double> se,
      scoring::ClusterBootstrapErrors(
          shadow.original_of, originals, statistics,
          DeriveSeed(seed, absl::StrCat("unlearning_shadow/", defense), 0), kShadowRefitResamples,
          std::max(1u, std::thread::hardware_concurrency())));
  std::vector<std::vector<double>> per_cell;
  size_t next = 0;
  for (const DefenseCell& cell : evaluation.cells) {
    const size_t n = cell.feature == unlearning::kBaselineFeature ? 1 : 3;
    per_cell.emplace_back(se.begin() + next, se.begin() + next + n);
    next += n;
  }
  return per_cell;
}

double Value(const std::map<uint32_t, std::vector<double>>& runs, uint32_t run, int index) {
  auto it = runs.find(run);
  if (it == runs.end() || static_cast<int>(it->second.size()) <= index) return 0;
  return it->second[index];
}

}  // namespace

std::vector<RequiredSignal> RequiredUnlearningSignals(const v1::UnlearningAudit& u) {
  std::vector<RequiredSignal> out;
  for (const bool target : {false, true}) {
    const v1::UnlearningSide& side = unlearning::SideSpec(u, target);
    const std::string name = target ? unlearning::kTarget : unlearning::kShadow;
    out.push_back({name, unlearning::kSummarySignal, side.originals()});
    for (uint32_t j = 0; j < side.unlearned(); ++j) {
      for (const std::string& d : u.defenses()) {
        out.push_back(
            {unlearning::ChildPoint(name, j), unlearning::PosteriorsSignal(d), side.originals()});
      }
    }
  }
  return out;
}

absl::Status ValidateUnlearningObservation(const v1::UnlearningAudit& u, const v1::Observation& o) {
  absl::string_view point = o.point();
  bool target = false;
  if (absl::ConsumePrefix(&point, unlearning::kTarget)) {
    target = true;
  } else if (!absl::ConsumePrefix(&point, unlearning::kShadow)) {
    return absl::InvalidArgumentError(
        absl::StrCat("observation.point: \"", o.point(), "\" is not a point of this audit"));
  }
  const v1::UnlearningSide& side = unlearning::SideSpec(u, target);
  if (o.run() >= side.originals()) {
    return absl::InvalidArgumentError(absl::StrCat("observation.run: ", o.run(),
                                                   " is outside the side's ", side.originals(),
                                                   " original models"));
  }
  for (int i = 0; i < o.values_size(); ++i) {
    if (!std::isfinite(o.values(i))) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.values[", i, "]: not a finite number"));
    }
  }
  if (point.empty()) {
    if (o.signal() != unlearning::kSummarySignal) {
      return absl::InvalidArgumentError(absl::StrCat("observation.signal: \"", o.signal(),
                                                     "\" (expected \"original\" at point \"",
                                                     o.point(), "\")"));
    }
    if (o.values_size() != unlearning::kSummaryValues) {
      return absl::InvalidArgumentError(absl::StrCat("observation.values: expected ",
                                                     unlearning::kSummaryValues, " values, got ",
                                                     o.values_size()));
    }
    return absl::OkStatus();
  }
  uint32_t j = 0;
  if (!absl::ConsumePrefix(&point, "/") || !absl::SimpleAtoi(point, &j) || j >= side.unlearned()) {
    return absl::InvalidArgumentError(
        absl::StrCat("observation.point: \"", o.point(), "\" is not a point of this audit"));
  }
  absl::string_view defense = o.signal();
  if (!absl::ConsumePrefix(&defense, unlearning::kPosteriorsPrefix) || !IsDefense(u, defense)) {
    return absl::InvalidArgumentError(
        absl::StrCat("observation.signal: \"", o.signal(), "\" is not a signal of this audit"));
  }
  const int rows = 2 * static_cast<int>(unlearning::PositivesPerChild(u));
  if (o.values_size() == 0 || o.values_size() % (2 * rows) != 0 ||
      o.values_size() / (2 * rows) < 2) {
    return absl::InvalidArgumentError(absl::StrCat("observation.values: expected 2 x ", rows,
                                                   " rows x classes (>= 2) posteriors, got ",
                                                   o.values_size(), " values"));
  }
  for (int i = 0; i < o.values_size(); ++i) {
    if (o.values(i) < 0 || o.values(i) > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.values[", i, "]: ", o.values(i), " is not a probability"));
    }
  }
  return absl::OkStatus();
}

bool UnlearningSignalsComplete(const v1::UnlearningAudit& u, const UnlearningSignals& signals) {
  for (const RequiredSignal& r : RequiredUnlearningSignals(u)) {
    auto it = signals.find({r.point, r.signal});
    if (it == signals.end()) return false;
    for (uint32_t run = 0; run < r.runs; ++run) {
      if (it->second.count(run) == 0) return false;
    }
  }
  return true;
}

absl::StatusOr<v1::AuditResults> ScoreUnlearning(const v1::AuditSpec& spec,
                                                 const UnlearningSignals& signals) {
  const v1::UnlearningAudit& u = spec.unlearning();
  if (!UnlearningSignalsComplete(u, signals)) {
    return absl::FailedPreconditionError("unlearning: not every task has reported");
  }
  v1::AuditResults results;
  results.set_kind(v1::UNLEARNING);
  results.set_complete(true);
  v1::UnlearningResults* out = results.mutable_unlearning();
  out->set_method(u.method());
  out->set_deletion(u.deletion());
  out->set_group_size(unlearning::DeletedPerChild(u));
  out->set_seed_policy(u.seed_policy());

  // Target originals' accuracy and epsilon; models from both sides.
  uint64_t models = 0;
  for (const bool target : {false, true}) {
    const std::string name = target ? unlearning::kTarget : unlearning::kShadow;
    const auto& runs = signals.at({name, unlearning::kSummarySignal});
    const uint32_t originals = unlearning::SideSpec(u, target).originals();
    double train = 0, test = 0, epsilon = 0;
    for (uint32_t i = 0; i < originals; ++i) {
      models += static_cast<uint64_t>(Value(runs, i, unlearning::kModelsTrained));
      train += Value(runs, i, unlearning::kTrainAccuracy) / originals;
      test += Value(runs, i, unlearning::kTestAccuracy) / originals;
      epsilon = std::max(epsilon, Value(runs, i, unlearning::kDpEpsilon));
    }
    if (target) {
      out->set_target_train_accuracy(train);
      out->set_target_test_accuracy(test);
      out->set_overfitting(train - test);
      out->set_dp_epsilon(epsilon);
    }
  }
  out->set_models_trained(models);

  for (const std::string& defense : u.defenses()) {
    MEMAUDIT_ASSIGN_OR_RETURN(DefenseEvaluation evaluation, EvaluateDefense(u, defense, signals));
    const SideRows& target = evaluation.target;
    MEMAUDIT_ASSIGN_OR_RETURN(const std::vector<std::vector<double>> shadow_se,
                              ShadowRefitErrors(u, spec.seed(), defense, evaluation));
    out->set_shadow_rows(static_cast<uint32_t>(evaluation.shadow.labels.size()));
    out->set_target_rows(static_cast<uint32_t>(target.labels.size()));
    std::vector<uint32_t> row_clusters(target.labels.size());
    std::iota(row_clusters.begin(), row_clusters.end(), 0u);
    // The baseline's target confidences per classifier, for DegCount/DegRate.
    std::map<std::string, std::vector<double>> baseline;
    for (size_t c = 0; c < evaluation.cells.size(); ++c) {
      const DefenseCell& cell = evaluation.cells[c];
      const absl::Span<const double> cell_shadow_se =
          shadow_se.empty() ? absl::Span<const double>() : absl::MakeConstSpan(shadow_se[c]);
      const std::string& feature = cell.feature;
      const std::string& classifier = cell.classifier;
      const scoring::AttackEvaluation* eval = &cell.evaluation;
      v1::UnlearningAttackResult* a = out->add_attacks();
      a->set_defense(defense);
      a->set_feature(feature);
      a->set_classifier(classifier);
      a->set_auc(eval->auc);
      // Each target row is one pair: its own cluster.
      MEMAUDIT_ASSIGN_OR_RETURN(
          const scoring::ClusteredAuc interval,
          scoring::ClusteredAucInterval(eval->target_probabilities, target.labels, row_clusters,
                                        static_cast<uint32_t>(row_clusters.size())));
      a->set_auc_low(interval.interval.lo);
      a->set_auc_high(interval.interval.hi);
      if (feature == unlearning::kBaselineFeature) {
        baseline[classifier] = eval->target_probabilities;
        MEMAUDIT_RETURN_IF_ERROR(
            SetRerunIntervals(u, spec.seed(), target, *eval, nullptr, cell_shadow_se, a));
        continue;
      }
      MEMAUDIT_ASSIGN_OR_RETURN(
          auto deg, scoring::ComputeDegradation(target.labels, eval->target_probabilities,
                                                baseline.at(classifier)));
      a->set_deg_count(deg.deg_count);
      a->set_deg_rate(deg.deg_rate);
      a->set_deg_count_low(deg.deg_count_interval.lo);
      a->set_deg_count_high(deg.deg_count_interval.hi);
      a->set_deg_rate_low(deg.deg_rate_interval.lo);
      a->set_deg_rate_high(deg.deg_rate_interval.hi);
      MEMAUDIT_RETURN_IF_ERROR(
          SetRerunIntervals(u, spec.seed(), target, *eval, &deg, cell_shadow_se, a));
    }
  }
  results.set_models(static_cast<uint32_t>(std::min<uint64_t>(models, UINT32_MAX)));
  results.set_examples(out->target_rows());
  results.set_members(out->target_rows() / 2);
  results.set_non_members(out->target_rows() / 2);
  return results;
}

absl::StatusOr<std::vector<v1::ExportArray>> UnlearningExport(const v1::AuditSpec& spec,
                                                              const UnlearningSignals& signals) {
  const v1::UnlearningAudit& u = spec.unlearning();
  if (!UnlearningSignalsComplete(u, signals)) {
    return absl::FailedPreconditionError("unlearning: not every task has reported");
  }
  std::vector<v1::ExportArray> out;
  for (const std::string& defense : u.defenses()) {
    MEMAUDIT_ASSIGN_OR_RETURN(DefenseEvaluation evaluation, EvaluateDefense(u, defense, signals));
    const SideRows& target = evaluation.target;
    const uint64_t rows = target.labels.size(), classes = target.original.cols;
    // Defense names are lower case with digits and '_' (top_k as "top_2").
    const std::string suffix = absl::StrCat("_", defense);
    if (out.empty()) {
      out.push_back(
          MakeExportArray("member", {"row"}, {rows}, v1::UINT8,
                          "1 when the target row's example was deleted (the attack's "
                          "positives), 0 for a non-member",
                          std::vector<double>(target.labels.begin(), target.labels.end())));
    }
    out.push_back(MakeExportArray(
        absl::StrCat("posterior_original", suffix), {"row", "class"}, {rows, classes}, v1::FLOAT64,
        absl::StrCat("the original model's released posterior under ", defense),
        target.original.data));
    out.push_back(MakeExportArray(
        absl::StrCat("posterior_unlearned", suffix), {"row", "class"}, {rows, classes}, v1::FLOAT64,
        absl::StrCat("the unlearned model's released posterior under ", defense),
        target.unlearned.data));
    for (const DefenseCell& cell : evaluation.cells) {
      out.push_back(MakeExportArray(
          absl::StrCat("probability", suffix, "_", cell.feature, "_", cell.classifier), {"row"},
          {rows}, v1::FLOAT64,
          absl::StrCat("the ", cell.classifier,
                       " attack's probability that the row is a member, "
                       "from feature ",
                       cell.feature, " under ", defense),
          cell.evaluation.target_probabilities));
    }
  }
  return out;
}

absl::StatusOr<UnlearningSignals> LoadUnlearningSignals(ScorerStore& store,
                                                        const std::string& audit_id,
                                                        const v1::AuditSpec& spec) {
  UnlearningSignals signals;
  for (const RequiredSignal& r : RequiredUnlearningSignals(spec.unlearning())) {
    MEMAUDIT_ASSIGN_OR_RETURN(auto runs, store.LoadSignal(audit_id, r.point, r.signal));
    signals[{r.point, r.signal}] = std::move(runs);
  }
  return signals;
}

absl::StatusOr<std::optional<v1::AuditResults>> ScoreUnlearningFromStore(
    ScorerStore& store, const std::string& audit_id, const v1::AuditSpec& spec) {
  MEMAUDIT_ASSIGN_OR_RETURN(UnlearningSignals signals,
                            LoadUnlearningSignals(store, audit_id, spec));
  // Tasks report whole: one missing signal means the audit is not done.
  if (!UnlearningSignalsComplete(spec.unlearning(), signals)) return std::nullopt;
  MEMAUDIT_ASSIGN_OR_RETURN(auto results, ScoreUnlearning(spec, signals));
  return std::optional<v1::AuditResults>(std::move(results));
}

void PublishUnlearning(prometheus::Registry* metrics, const v1::AuditResults& results,
                       const std::string& team) {
  if (metrics == nullptr || !results.has_unlearning()) return;
  auto& auc = metrics::AddGauge(
      *metrics, "memaudit_unlearning_auc_ratio",
      "Unlearning attack AUC on the target side by defense, feature and attack classifier; "
      "feature baseline = classical membership inference on the original model.");
  auto& deg_count = metrics::AddGauge(
      *metrics, "memaudit_unlearning_degcount_ratio",
      "DegCount: share of target rows where the unlearning attack is more confident in the "
      "truth than the baseline with the same defense and classifier.");
  auto& deg_rate = metrics::AddGauge(
      *metrics, "memaudit_unlearning_degrate_ratio",
      "DegRate: mean confidence gain in the truth of the unlearning attack over the baseline "
      "with the same defense and classifier.");
  // The 95% intervals' ends, labelled like the numbers they bound.
  auto& deg_count_low = metrics::AddGauge(
      *metrics, "memaudit_unlearning_degcount_low_ratio",
      "Lower end of DegCount's 95% interval over the target rows (Clopper-Pearson).");
  auto& deg_count_high = metrics::AddGauge(
      *metrics, "memaudit_unlearning_degcount_high_ratio",
      "Upper end of DegCount's 95% interval over the target rows (Clopper-Pearson).");
  auto& deg_rate_low = metrics::AddGauge(
      *metrics, "memaudit_unlearning_degrate_low_ratio",
      "Lower end of DegRate's 95% interval over the target rows (paired Student t).");
  auto& deg_rate_high = metrics::AddGauge(
      *metrics, "memaudit_unlearning_degrate_high_ratio",
      "Upper end of DegRate's 95% interval over the target rows (paired Student t).");
  for (const v1::UnlearningAttackResult& a : results.unlearning().attacks()) {
    const prometheus::Labels labels = {{"audit", results.audit_id()},
                                       {"team", team},
                                       {"defense", a.defense()},
                                       {"feature", a.feature()},
                                       {"classifier", a.classifier()}};
    auc.Add(labels).Set(a.auc());
    if (a.feature() == unlearning::kBaselineFeature) continue;
    deg_count.Add(labels).Set(a.deg_count());
    deg_rate.Add(labels).Set(a.deg_rate());
    deg_count_low.Add(labels).Set(a.deg_count_low());
    deg_count_high.Add(labels).Set(a.deg_count_high());
    deg_rate_low.Add(labels).Set(a.deg_rate_low());
    deg_rate_high.Add(labels).Set(a.deg_rate_high());
  }
}

namespace {

class Unlearning final : public KindHandler {
 public:
  absl::Status ValidateObservation(const v1::AuditSpec& spec,
                                   const v1::Observation& o) const override {
    return ValidateUnlearningObservation(spec.unlearning(), o);
  }

  absl::StatusOr<std::optional<v1::AuditResults>> Score(ScorerStore& store,
                                                        const std::string& audit_id,
                                                        const v1::AuditSpec& spec) const override {
    // Scored once, when every task's observations are in.
    return ScoreUnlearningFromStore(store, audit_id, spec);
  }

  absl::StatusOr<std::vector<v1::ExportArray>> Export(ScorerStore& store,
                                                      const std::string& audit_id,
                                                      const v1::AuditSpec& spec) const override {
    MEMAUDIT_ASSIGN_OR_RETURN(UnlearningSignals signals,
                              LoadUnlearningSignals(store, audit_id, spec));
    return UnlearningExport(spec, signals);
  }

  // One task per original model and side: run = the original, the point's
  // prefix the side (audits/unlearning/signals.h).
  absl::StatusOr<TaskRef> TaskOf(const v1::AuditSpec& spec,
                                 const v1::Observation& o) const override {
    const bool target = absl::StartsWith(o.point(), unlearning::kTarget);
    if (!target && !absl::StartsWith(o.point(), unlearning::kShadow)) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.point: \"", o.point(), "\" is not a point of this audit"));
    }
    const v1::UnlearningSide& side = unlearning::SideSpec(spec.unlearning(), target);
    if (o.run() >= side.originals()) {
      return absl::InvalidArgumentError(absl::StrCat("observation.run: ", o.run(),
                                                     " is outside the side's ", side.originals(),
                                                     " original models"));
    }
    return TaskRef{target ? unlearning::kTargetRole : unlearning::kShadowRole, o.run()};
  }

  absl::StatusOr<std::vector<ObservationKey>> TaskObservations(ScorerStore& /*store*/,
                                                               const std::string& /*audit_id*/,
                                                               const v1::AuditSpec& spec,
                                                               const TaskRef& task) const override {
    const bool target = task.role == unlearning::kTargetRole;
    if ((!target && task.role != unlearning::kShadowRole) ||
        task.index >= unlearning::SideSpec(spec.unlearning(), target).originals()) {
      return absl::InvalidArgumentError(
          absl::StrCat("task ", task.ToString(), " is not a task of this unlearning audit"));
    }
    const char* side = target ? unlearning::kTarget : unlearning::kShadow;
    std::vector<ObservationKey> out;
    for (const RequiredSignal& r : RequiredUnlearningSignals(spec.unlearning())) {
      if (absl::StartsWith(r.point, side)) out.push_back({task.index, r.point, r.signal});
    }
    return out;
  }

  v1::AuditResults Placeholder(const v1::AuditSpec& spec) const override {
    v1::AuditResults partial;
    partial.set_kind(v1::UNLEARNING);
    const v1::UnlearningAudit& u = spec.unlearning();
    partial.set_models(u.shadow().originals() + u.target().originals());
    return partial;
  }

  void Publish(prometheus::Registry& registry, const v1::AuditResults& results,
               const std::string& team) const override {
    PublishUnlearning(&registry, results, team);
  }
};

}  // namespace

}  // namespace memaudit::scorer

namespace memaudit {

template <>
const scorer::KindHandler& HandlerOfKind<scorer::KindHandler, v1::AuditSpec::kUnlearning>() {
  static const scorer::Unlearning handler;
  return handler;
}

}  // namespace memaudit
