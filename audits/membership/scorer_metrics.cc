#include "audits/membership/scorer_metrics.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "audits/membership/attacks.h"
#include "audits/membership/tasks.h"
#include "common/base/parallel_for.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "common/messages/content_key.h"
#include "common/training/numerics.h"
#include "scoring/auc_interval.h"
#include "scoring/balanced_accuracy_interval.h"
#include "scoring/intervals.h"
#include "scoring/ranked_scores.h"
#include "scoring/rerun_interval.h"
#include "scoring/roc.h"
#include "services/scorer/result_warnings.h"
#include "spec/dataset_facts.h"

namespace memaudit::scorer {
namespace {

absl::StatusOr<scoring::Matrix> ToMatrix(const std::map<uint32_t, std::vector<double>>& by_run,
                                         uint32_t runs, uint32_t examples, const char* signal) {
  scoring::Matrix m(runs, examples);
  for (uint32_t r = 0; r < runs; ++r) {
    auto it = by_run.find(r);
    if (it == by_run.end() || it->second.size() != examples) {
      return absl::FailedPreconditionError(
          absl::StrCat("signal ", signal, " of run ", r, " is missing or has the wrong length"));
    }
    std::copy(it->second.begin(), it->second.end(), m.data.begin() + size_t{r} * examples);
  }
  return m;
}

// The largest-TPR point at each of ~100 log-spaced FPR bounds: a compact
// curve that keeps the low-FPR region that matters on log-log axes.
absl::Status AddRocCurve(const scoring::RocCurve& roc, v1::AttackResult* out) {
  constexpr int kPoints = 100;
  constexpr double kMinLog10 = -5;
  std::vector<double> bounds;
  for (int i = -1; i <= kPoints; ++i) {
    bounds.push_back(i < 0 ? 0.0 : std::pow(10.0, kMinLog10 * (1.0 - double(i) / kPoints)));
  }
  MEMAUDIT_ASSIGN_OR_RETURN(auto points, scoring::TprAtFprs(roc, bounds));
  double last_fpr = -1, last_tpr = -1;
  for (const scoring::OperatingPoint& point : points) {
    if (point.fpr == last_fpr && point.tpr == last_tpr) continue;
    v1::RocPoint* p = out->add_roc();
    p->set_fpr(point.fpr);
    p->set_tpr(point.tpr);
    last_fpr = point.fpr;
    last_tpr = point.tpr;
  }
  return absl::OkStatus();
}

absl::Status AddOperatingPoint(const scoring::RocCurve& roc, double fpr,
                               const scoring::Interval& rerun, v1::AttackResult* out) {
  MEMAUDIT_ASSIGN_OR_RETURN(auto point, scoring::TprAtFpr(roc, fpr));
  MEMAUDIT_ASSIGN_OR_RETURN(auto tpr_ci,
                            scoring::ClopperPearson(point.true_positives, point.positives));
  MEMAUDIT_ASSIGN_OR_RETURN(auto fpr_ci,
                            scoring::ClopperPearson(point.false_positives, point.negatives));
  v1::OperatingPoint* p = out->add_operating_points();
  p->set_fpr_target(fpr);
  p->set_tpr(point.tpr);
  p->set_fpr(point.fpr);
  p->set_threshold(point.threshold);
  p->set_tpr_low(tpr_ci.lo);
  p->set_tpr_high(tpr_ci.hi);
  p->set_fpr_low(fpr_ci.lo);
  p->set_fpr_high(fpr_ci.hi);
  p->set_tpr_rerun_low(rerun.lo);
  p->set_tpr_rerun_high(rerun.hi);
  return absl::OkStatus();
}

// Threads for each attack's bootstrap, which run beside the other attacks'
// work: a share of the cores, and at least two, so that when the last
// attacks are left their passes still fill the cores the finished ones
// freed (an interval's bits do not depend on its threads).
uint32_t BootstrapThreads(size_t attacks) {
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t n = std::max<size_t>(attacks, 1);
  return static_cast<uint32_t>(std::min(cores, std::max<size_t>(2, (cores + n - 1) / n)));
}

// Pair i = (target t, example j), i = t * examples + j. The AUC's interval
// treats an example's pairs as one cluster; the re-run intervals resample
// target models and examples together.
struct PairLayout {
  std::vector<uint32_t> model_of;
  std::vector<uint32_t> example_of;
};

PairLayout LayoutOf(size_t pairs, uint32_t examples) {
  PairLayout layout;
  layout.model_of.resize(pairs);
  layout.example_of.resize(pairs);
  for (size_t i = 0; i < pairs; ++i) {
    layout.model_of[i] = static_cast<uint32_t>(i / examples);
    layout.example_of[i] = static_cast<uint32_t>(i % examples);
  }
  return layout;
}

constexpr size_t kMostVulnerable = 20;

// Ranks pool examples by how reliably `scores` (row t = target t) flag them
// when they are members: detections at `threshold`, then mean member score.
void AddMostVulnerable(const v1::AuditSpec& spec, const std::vector<double>& scores,
                       const scoring::KeepMatrix& keep, double threshold,
                       v1::AuditResults* results) {
  struct Entry {
    uint32_t pool_index;
    uint32_t members = 0;
    uint32_t detected = 0;
    double score_sum = 0;
  };
  std::vector<Entry> entries(keep.cols);
  for (size_t j = 0; j < keep.cols; ++j) {
    entries[j].pool_index = static_cast<uint32_t>(j);
    for (size_t t = 0; t < keep.rows; ++t) {
      if (!keep.at(t, j)) continue;
      const double s = scores[t * keep.cols + j];
      entries[j].members += 1;
      entries[j].detected += s >= threshold;
      entries[j].score_sum += s;
    }
  }
  auto mean = [](const Entry& e) { return e.members ? e.score_sum / e.members : 0.0; };
  const size_t top = std::min(kMostVulnerable, entries.size());
  std::partial_sort(entries.begin(), entries.begin() + top, entries.end(),
                    [&](const Entry& a, const Entry& b) {
                      if (a.detected != b.detected) return a.detected > b.detected;
                      if (mean(a) != mean(b)) return mean(a) > mean(b);
                      return a.pool_index < b.pool_index;
                    });
  const v1::DatasetSpec& dataset = spec.membership().dataset();
  const std::vector<uint32_t> pool =
      AuditPool(spec.seed(), DatasetRows(dataset), dataset.pool_size());
  for (size_t i = 0; i < top; ++i) {
    v1::VulnerableExample* v = results->add_most_vulnerable();
    v->set_pool_index(entries[i].pool_index);
    if (!pool.empty()) v->set_dataset_index(pool[entries[i].pool_index]);
    v->set_member_models(entries[i].members);
    v->set_detected(entries[i].detected);
    v->set_mean_member_score(mean(entries[i]));
  }
}

}  // namespace

namespace {

// Whether the re-run intervals of `attack` redraw its reference models
// (scoring::HalfSampledRerunIntervals): every model is a target, and a half
// of them is still enough references for the attack. Otherwise targets
// alone are resampled (RerunIntervalsOf).
bool RescoresHalves(const std::string& attack, const MembershipMatrices& m) {
  const membership::Attack* a = membership::FindAttack(attack);
  const size_t models = m.keep.rows;
  return a != nullptr && a->uses_reference_models && m.first_target == 0 && m.targets == models &&
         models >= 4 && models / 2 >= a->min_reference_models;
}

// `rows` of `m`, in that order.
template <typename T>
scoring::BasicMatrix<T> RowsOf(const scoring::BasicMatrix<T>& m, absl::Span<const uint32_t> rows) {
  scoring::BasicMatrix<T> out(rows.size(), m.cols);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::copy(m.row(rows[i]), m.row(rows[i]) + m.cols, out.row(i));
  }
  return out;
}

// The scores of the audit the models in `half` alone would make: each a
// target against the others of `half`.
absl::StatusOr<scoring::SubsetScores> HalfAuditScores(const std::string& attack,
                                                      const MembershipMatrices& all,
                                                      absl::Span<const uint32_t> half) {
  MembershipMatrices sub;
  sub.phi = RowsOf(all.phi, half);
  sub.loss = RowsOf(all.loss, half);
  sub.population_loss = RowsOf(all.population_loss, half);
  sub.zlib = RowsOf(all.zlib, half);
  sub.min_k = RowsOf(all.min_k, half);
  sub.min_k_plus = RowsOf(all.min_k_plus, half);
  sub.keep = RowsOf(all.keep, half);
  sub.first_target = 0;
  sub.targets = half.size();
  scoring::SubsetScores out;
  MEMAUDIT_ASSIGN_OR_RETURN(out.scores, MembershipTargetScores(attack, sub));
  out.is_member = std::move(sub.keep.data);
  return out;
}

}  // namespace

absl::StatusOr<MembershipMatrices> BuildMembershipMatrices(
    const v1::AuditSpec& spec, const std::map<uint32_t, std::vector<double>>& phi_by_run,
    const std::map<uint32_t, std::vector<double>>& loss_by_run,
    const std::map<uint32_t, std::vector<double>>& population_loss_by_run,
    const std::vector<double>& target_members) {
  const v1::MembershipAudit& m = spec.membership();
  const uint32_t runs = membership::MembershipModels(m);
  const uint32_t examples = membership::PoolSize(m);
  MembershipMatrices out;
  MEMAUDIT_ASSIGN_OR_RETURN(out.phi, ToMatrix(phi_by_run, runs, examples, kPhiSignal));
  MEMAUDIT_ASSIGN_OR_RETURN(out.loss, ToMatrix(loss_by_run, runs, examples, kLossSignal));
  out.population_loss = scoring::Matrix(runs, 0);
  if (m.population_size() > 0) {
    MEMAUDIT_ASSIGN_OR_RETURN(
        out.population_loss,
        ToMatrix(population_loss_by_run, runs, m.population_size(), kPopulationLossSignal));
  }
  std::vector<uint8_t> keep = BuildKeepMatrix(spec.seed(), m.reference_models(), examples).bits;
  if (m.has_target()) {
    // The given target's row: which pool examples it trained on.
    if (target_members.size() != examples) {
      return absl::FailedPreconditionError(absl::StrCat("signal ", membership::kMemberSignal,
                                                        " is missing or has the wrong length"));
    }
    for (double v : target_members) keep.push_back(v != 0);
  }
  out.keep = scoring::KeepMatrix(runs, examples, std::move(keep));
  // A chosen or given target: only its row is scored (its references are
  // still all the other models).
  const bool one = membership::ScoresOneTarget(m);
  out.first_target = m.has_target()         ? membership::TargetRun(m)
                     : m.has_target_model() ? m.target_model()
                                            : 0;
  out.targets = one ? 1 : runs;
  return out;
}

scoring::KeepMatrix TargetTruth(const MembershipMatrices& m) {
  const size_t cols = m.keep.cols;
  return scoring::KeepMatrix(
      m.targets, cols,
      std::vector<uint8_t>(m.keep.data.begin() + m.first_target * cols,
                           m.keep.data.begin() + (m.first_target + m.targets) * cols));
}

absl::StatusOr<std::vector<double>> MembershipTargetScores(const std::string& attack,
                                                           const MembershipMatrices& m) {
  // Row t of the score matrix scores every example against target t, so
  // the keep-matrix, flattened the same way, holds the truth.
  const membership::Attack* a = membership::FindAttack(attack);
  if (a == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown attack ", attack));
  membership::AttackInputs in{m.phi, m.keep, m.loss, m.population_loss, m.first_target, m.targets};
  if (m.zlib.cols > 0) {
    in.zlib = &m.zlib;
    in.min_k = &m.min_k;
    in.min_k_plus = &m.min_k_plus;
  }
  MEMAUDIT_ASSIGN_OR_RETURN(auto all, a->score(in));
  const size_t cols = m.keep.cols;
  return std::vector<double>(all.begin() + m.first_target * cols,
                             all.begin() + (m.first_target + m.targets) * cols);
}

absl::StatusOr<std::optional<MembershipMatrices>> LoadMembershipMatrices(
    ScorerStore& store, const std::string& audit_id, const v1::AuditSpec& spec) {
  const v1::MembershipAudit& m = spec.membership();
  // Ingest admits only these signals of these runs, so a count short of all
  // of them means incomplete: no need to decode every stored vector per batch.
  const std::vector<std::string> required = RequiredMembershipSignals(m);
  const uint32_t models = membership::MembershipModels(m);
  MEMAUDIT_ASSIGN_OR_RETURN(auto count, store.CountObservations(audit_id));
  if (count < static_cast<int64_t>(required.size()) * models + (m.has_target() ? 1 : 0)) {
    return std::nullopt;
  }
  std::map<std::string, std::map<uint32_t, std::vector<double>>> signals;
  for (const std::string& name : required) {
    MEMAUDIT_ASSIGN_OR_RETURN(auto runs, store.LoadSignal(audit_id, kFinalPoint, name));
    if (runs.size() < models) return std::nullopt;
    signals[name] = std::move(runs);
  }
  std::vector<double> target_members;
  if (m.has_target()) {
    MEMAUDIT_ASSIGN_OR_RETURN(auto runs,
                              store.LoadSignal(audit_id, kFinalPoint, membership::kMemberSignal));
    auto it = runs.find(membership::TargetRun(m));
    if (it == runs.end()) return std::nullopt;
    target_members = std::move(it->second);
  }
  MEMAUDIT_ASSIGN_OR_RETURN(
      MembershipMatrices out,
      BuildMembershipMatrices(spec, signals[kPhiSignal], signals[kLossSignal],
                              signals[kPopulationLossSignal], target_members));
  if (m.has_documents()) {
    const uint32_t examples = membership::PoolSize(m);
    MEMAUDIT_ASSIGN_OR_RETURN(out.zlib, ToMatrix(signals[membership::kZlibSignal], models, examples,
                                                 membership::kZlibSignal));
    MEMAUDIT_ASSIGN_OR_RETURN(out.min_k, ToMatrix(signals[membership::kMinKSignal], models,
                                                  examples, membership::kMinKSignal));
    MEMAUDIT_ASSIGN_OR_RETURN(out.min_k_plus, ToMatrix(signals[membership::kMinKPlusSignal], models,
                                                       examples, membership::kMinKPlusSignal));
  }
  return out;
}

std::vector<std::string> RequiredMembershipSignals(const v1::MembershipAudit& m) {
  std::vector<std::string> signals = {kPhiSignal, kLossSignal};
  if (m.population_size() > 0) signals.push_back(kPopulationLossSignal);
  if (m.has_documents()) {
    signals.insert(signals.end(),
                   {membership::kZlibSignal, membership::kMinKSignal, membership::kMinKPlusSignal});
  }
  return signals;
}

std::vector<std::string> MembershipSignalsOf(const v1::MembershipAudit& m, uint32_t run) {
  std::vector<std::string> signals = RequiredMembershipSignals(m);
  if (m.has_target() && run == membership::TargetRun(m)) {
    signals.push_back(membership::kMemberSignal);
  }
  return signals;
}

namespace {

// The re-run intervals of one attack's scores (scoring/rerun_interval.h): the
// pigeonhole interval, joined with the half-sampled one where the attack's
// references can be redrawn. One target model (ScoresOneTarget) gives no
// model-to-model spread to measure: its intervals are left at 0.
absl::StatusOr<scoring::RerunIntervals> AttackRerunIntervals(
    const std::string& attack, const MembershipMatrices& matrices,
    const scoring::RankedScores& ranked, const scoring::KeepMatrix& truth, const PairLayout& pairs,
    const std::vector<double>& fpr_points, uint64_t seed) {
  const uint32_t targets = static_cast<uint32_t>(matrices.targets);
  const uint32_t examples = static_cast<uint32_t>(truth.cols);
  scoring::RerunIntervals out;
  if (targets < 2 || examples < 2) {
    out.tpr_at_fpr.resize(fpr_points.size());
    return out;
  }
  MEMAUDIT_ASSIGN_OR_RETURN(
      out, scoring::RerunIntervalsOf(ranked, truth.data, pairs.model_of, targets, pairs.example_of,
                                     examples, fpr_points, seed));
  if (!RescoresHalves(attack, matrices)) return out;
  MEMAUDIT_ASSIGN_OR_RETURN(
      const scoring::RerunIntervals halves,
      scoring::HalfSampledRerunIntervals(
          ranked, truth.data, targets, examples,
          [&](absl::Span<const uint32_t> half) { return HalfAuditScores(attack, matrices, half); },
          fpr_points, seed));
  return scoring::UnionOf(out, halves);
}

}  // namespace

absl::StatusOr<v1::AuditResults> ScoreMembership(const v1::AuditSpec& spec,
                                                 const MembershipMatrices& matrices) {
  const v1::MembershipAudit& m = spec.membership();
  const uint32_t runs = m.reference_models();
  const uint32_t examples = membership::PoolSize(m);
  const scoring::KeepMatrix truth = TargetTruth(matrices);

  v1::AuditResults results;
  results.set_kind(v1::MEMBERSHIP);
  results.set_complete(true);
  results.set_models(runs);
  results.set_examples(examples);
  uint64_t members = 0;
  for (uint8_t b : truth.data) members += b;
  results.set_members(members);
  results.set_non_members(truth.data.size() - members);

  const PairLayout pairs = LayoutOf(truth.data.size(), examples);
  const std::vector<uint32_t>& example_of = pairs.example_of;
  // One seed for every attack: each attack's balanced accuracy is resampled
  // over the same draws of examples, so their intervals compare like for like.
  const uint64_t bootstrap_seed = DeriveSeed(spec.seed(), "balanced_accuracy_bootstrap", 0);
  const uint64_t rerun_seed = DeriveSeed(spec.seed(), "rerun_bootstrap", 0);
  const std::vector<double> fpr_points(m.fpr_points().begin(), m.fpr_points().end());
  // Each attack's scores, curve and intervals are independent of the
  // others' (the intervals cost the most: one pass over every pair per
  // resample), so they run side by side; assembly below stays in order.
  const uint32_t bootstrap_threads = BootstrapThreads(m.attacks_size());
  struct AttackScores {
    absl::Status status;
    std::vector<double> scores;
    scoring::RocCurve roc;
    scoring::ClusteredAuc clustered;
    scoring::BootstrapInterval balanced;
    scoring::RerunIntervals rerun;
  };
  std::vector<AttackScores> scored(m.attacks_size());
  ParallelFor(scored.size(), 0, [&](size_t i) {
    AttackScores& a = scored[i];
    a.status = [&]() -> absl::Status {
      MEMAUDIT_ASSIGN_OR_RETURN(a.scores, MembershipTargetScores(m.attacks(i), matrices));
      // One ranking of the pairs serves the curve and both intervals.
      MEMAUDIT_ASSIGN_OR_RETURN(const scoring::RankedScores ranked,
                                scoring::RankedScores::Rank(a.scores));
      MEMAUDIT_ASSIGN_OR_RETURN(a.roc, scoring::ComputeRoc(ranked, truth.data));
      MEMAUDIT_ASSIGN_OR_RETURN(
          a.clustered, scoring::ClusteredAucInterval(ranked, truth.data, example_of, examples));
      MEMAUDIT_ASSIGN_OR_RETURN(a.balanced, scoring::BalancedAccuracyInterval(
                                                ranked, truth.data, example_of, examples,
                                                bootstrap_seed, scoring::kBalancedAccuracyResamples,
                                                /*confidence=*/0.95, bootstrap_threads));
      MEMAUDIT_ASSIGN_OR_RETURN(a.rerun, AttackRerunIntervals(m.attacks(i), matrices, ranked, truth,
                                                              pairs, fpr_points, rerun_seed));
      return absl::OkStatus();
    }();
  });
  for (int i = 0; i < m.attacks_size(); ++i) {
    const std::string& attack = m.attacks(i);
    const AttackScores& a = scored[i];
    MEMAUDIT_RETURN_IF_ERROR(a.status);
    v1::AttackResult* out = results.add_attacks();
    out->set_attack(membership::AttackByName(attack));
    out->set_auc(scoring::Auc(a.roc));
    out->set_auc_low(a.clustered.interval.lo);
    out->set_auc_high(a.clustered.interval.hi);
    out->set_balanced_accuracy(scoring::BalancedAccuracy(a.roc));
    out->set_balanced_accuracy_low(a.balanced.interval.lo);
    out->set_balanced_accuracy_high(a.balanced.interval.hi);
    out->set_auc_rerun_low(a.rerun.auc.lo);
    out->set_auc_rerun_high(a.rerun.auc.hi);
    out->set_balanced_accuracy_rerun_low(a.rerun.balanced_accuracy.lo);
    out->set_balanced_accuracy_rerun_high(a.rerun.balanced_accuracy.hi);
    for (int f = 0; f < m.fpr_points_size(); ++f) {
      MEMAUDIT_RETURN_IF_ERROR(
          AddOperatingPoint(a.roc, m.fpr_points(f), a.rerun.tpr_at_fpr[f], out));
    }
    MEMAUDIT_RETURN_IF_ERROR(AddRocCurve(a.roc, out));
    // A spec that reached the scorer without FPR points gets no ranking
    // rather than undefined behaviour.
    if (results.most_vulnerable().empty() && !m.fpr_points().empty()) {
      const double fpr = *std::min_element(m.fpr_points().begin(), m.fpr_points().end());
      MEMAUDIT_ASSIGN_OR_RETURN(auto point, scoring::TprAtFpr(a.roc, fpr));
      results.set_vulnerability_attack(membership::AttackByName(attack));
      results.set_vulnerability_fpr(fpr);
      AddMostVulnerable(spec, a.scores, truth, point.threshold, &results);
    }
  }
  return results;
}

namespace {

class Membership final : public KindHandler {
 public:
  absl::Status ValidateObservation(const v1::AuditSpec& spec,
                                   const v1::Observation& o) const override {
    const v1::MembershipAudit& m = spec.membership();
    if (o.run() >= membership::MembershipModels(m)) {
      return absl::InvalidArgumentError(absl::StrCat("observation.run: ", o.run(),
                                                     " is outside the audit's ",
                                                     membership::MembershipModels(m), " models"));
    }
    if (o.point() != kFinalPoint) {
      return absl::InvalidArgumentError(absl::StrCat("observation.point: \"", o.point(),
                                                     "\" is not an evaluation point of this audit "
                                                     "(expected \"final\")"));
    }
    const std::vector<std::string> signals = MembershipSignalsOf(m, o.run());
    if (std::find(signals.begin(), signals.end(), o.signal()) == signals.end()) {
      return absl::InvalidArgumentError(absl::StrCat("observation.signal: \"", o.signal(),
                                                     "\" (expected one of ",
                                                     absl::StrJoin(signals, ", "), ")"));
    }
    const bool population = o.signal() == kPopulationLossSignal;
    const uint32_t expected = population ? m.population_size() : membership::PoolSize(m);
    if (static_cast<uint32_t>(o.values_size()) != expected) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.values: expected ", expected, " values (one per ",
                       population ? "population" : "pool", " example), got ", o.values_size()));
    }
    // A loss is a cross-entropy (>= 0); phi a logit-scaled confidence. The
    // bounds lie far past any trained model's values and keep a forger's
    // from overflowing the scoring (exp(-loss), squares of phi).
    if (o.signal() == membership::kMemberSignal) {
      for (int i = 0; i < o.values_size(); ++i) {
        if (o.values(i) != 0 && o.values(i) != 1) {
          return absl::InvalidArgumentError(absl::StrCat(
              "observation.values[", i, "]: membership must be 0 or 1 (got ", o.values(i), ")"));
        }
      }
      return absl::OkStatus();
    }
    // The text signals are log-probability scores, of either sign like phi.
    const bool loss = o.signal() == kLossSignal || population;
    const double low = loss ? 0 : -kMaxSignalMagnitude;
    for (int i = 0; i < o.values_size(); ++i) {
      const double v = o.values(i);
      if (!(v >= low && v <= kMaxSignalMagnitude)) {  // NaN fails too
        return absl::InvalidArgumentError(
            absl::StrCat("observation.values[", i, "]: ", loss ? "a loss" : o.signal(),
                         " must be in [", low, ", ", kMaxSignalMagnitude, "] (got ", v, ")"));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::optional<v1::AuditResults>> Score(ScorerStore& store,
                                                        const std::string& audit_id,
                                                        const v1::AuditSpec& spec) const override {
    MEMAUDIT_ASSIGN_OR_RETURN(auto matrices, LoadMembershipMatrices(store, audit_id, spec));
    if (!matrices.has_value()) return std::nullopt;
    return ScoreMembership(spec, *matrices);
  }

  absl::StatusOr<std::vector<v1::ExportArray>> Export(ScorerStore& store,
                                                      const std::string& audit_id,
                                                      const v1::AuditSpec& spec) const override {
    return MembershipExport(store, audit_id, spec);
  }

  v1::AuditResults Placeholder(const v1::AuditSpec& spec) const override {
    v1::AuditResults partial;
    partial.set_kind(v1::MEMBERSHIP);
    partial.set_models(spec.membership().reference_models());
    partial.set_examples(membership::PoolSize(spec.membership()));
    return partial;
  }

  std::vector<v1::ResultWarning> Warnings(const v1::AuditSpec& spec) const override {
    return MembershipWarnings(spec.membership());
  }

  void Publish(prometheus::Registry& registry, const v1::AuditResults& results,
               const std::string& team) const override {
    auto& auc = metrics::AddGauge(registry, "memaudit_membership_auc_ratio",
                                  "Membership-inference ROC AUC, pooled over target models.");
    auto& auc_low =
        metrics::AddGauge(registry, "memaudit_membership_auc_low_ratio",
                          "Lower end of the membership AUC's 95% interval (clustered by example).");
    auto& auc_high =
        metrics::AddGauge(registry, "memaudit_membership_auc_high_ratio",
                          "Upper end of the membership AUC's 95% interval (clustered by example).");
    auto& tpr = metrics::AddGauge(
        registry, "memaudit_membership_tpr_ratio",
        "Membership-inference TPR at the largest threshold whose FPR <= the fpr label.");
    for (const v1::AttackResult& a : results.attacks()) {
      prometheus::Labels labels = {{"audit", results.audit_id()},
                                   {"team", team},
                                   {"attack", membership::AttackName(a.attack())}};
      auc.Add(labels).Set(a.auc());
      auc_low.Add(labels).Set(a.auc_low());
      auc_high.Add(labels).Set(a.auc_high());
      for (const v1::OperatingPoint& p : a.operating_points()) {
        prometheus::Labels with_fpr = labels;
        with_fpr["fpr"] = absl::StrFormat("%g", p.fpr_target());
        tpr.Add(with_fpr).Set(p.tpr());
      }
    }
  }

  // Run r is model r, trained by task r / models_per_task
  // (audits/membership/tasks.h).
  absl::StatusOr<TaskRef> TaskOf(const v1::AuditSpec& spec,
                                 const v1::Observation& o) const override {
    const v1::MembershipAudit& m = spec.membership();
    if (o.run() >= membership::MembershipModels(m)) {
      return absl::InvalidArgumentError(absl::StrCat("observation.run: ", o.run(),
                                                     " is outside the audit's ",
                                                     membership::MembershipModels(m), " models"));
    }
    if (m.has_target() && o.run() == membership::TargetRun(m)) {
      return TaskRef{membership::kTargetRole, 0};
    }
    return TaskRef{membership::kModelRole, o.run() / membership::ModelsPerTask(spec)};
  }

  absl::StatusOr<std::vector<ObservationKey>> TaskObservations(ScorerStore& /*store*/,
                                                               const std::string& /*audit_id*/,
                                                               const v1::AuditSpec& spec,
                                                               const TaskRef& task) const override {
    const v1::MembershipAudit& m = spec.membership();
    if (m.has_target() && task.role == membership::kTargetRole && task.index == 0) {
      std::vector<ObservationKey> out;
      for (const std::string& signal : MembershipSignalsOf(m, membership::TargetRun(m))) {
        out.push_back({membership::TargetRun(m), kFinalPoint, signal});
      }
      return out;
    }
    if (task.role != membership::kModelRole || task.index >= membership::TaskCount(spec)) {
      return absl::InvalidArgumentError(
          absl::StrCat("task ", task.ToString(), " is not a task of this membership audit"));
    }
    const membership::ModelRange models = membership::TaskModels(spec, task.index);
    std::vector<ObservationKey> out;
    for (uint32_t run = models.first; run < models.end(); ++run) {
      for (const std::string& signal : RequiredMembershipSignals(spec.membership())) {
        out.push_back({run, kFinalPoint, signal});
      }
    }
    return out;
  }

  // Each model's content key (common/messages/content_key.h) decides whether an
  // earlier audit trained the same model.
  absl::StatusOr<std::vector<v1::ReusedRun>> ReuseStoredRuns(ScorerStore& store,
                                                             const std::string& audit_id,
                                                             const v1::AuditSpec& spec,
                                                             bool cross_team) const override {
    std::vector<v1::ReusedRun> reused;
    // Native numerics: the class a model was trained in is not known here,
    // so such models neither reuse nor are reused (docs/engine.md).
    if (spec.resources().numerics() == kNativeNumerics) return reused;
    for (uint32_t run = 0; run < spec.membership().reference_models(); ++run) {
      const std::string key = MembershipModelKey(spec, run);
      MEMAUDIT_RETURN_IF_ERROR(store.PutModelKey(audit_id, run, key));
      MEMAUDIT_ASSIGN_OR_RETURN(
          auto from, store.FindStoredRun(key, audit_id, kFinalPoint,
                                         RequiredMembershipSignals(spec.membership()), cross_team));
      if (!from.has_value()) continue;
      MEMAUDIT_RETURN_IF_ERROR(store.CopyRun(*from, audit_id, run));
      v1::ReusedRun& r = reused.emplace_back();
      r.set_run(run);
      r.set_from_audit_id(from->audit_id);
      r.set_from_run(from->run);
      r.set_from_task(from->task);
      r.set_from_lease(from->lease);
      r.set_from_worker(from->writer);
    }
    return reused;
  }
};

}  // namespace

}  // namespace memaudit::scorer

namespace memaudit {

template <>
const scorer::KindHandler& HandlerOfKind<scorer::KindHandler, v1::AuditSpec::kMembership>() {
  static const scorer::Membership handler;
  return handler;
}

}  // namespace memaudit
