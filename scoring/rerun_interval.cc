#include "scoring/rerun_interval.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/base/parallel_for.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"

namespace memaudit::scoring {
namespace {

// One walk down the ranked pairs, a tie group at a time, for `lanes` (<= L)
// weightings at once: `weights(k, w)` sets w[l], lane l's weight of the k-th
// pair in score order. Each lane adds in the same order whatever L, so its
// statistics do not depend on which lanes share its pass; one pass reads the
// ranking once for all of them. held[l]: both classes weigh something in
// lane l (out[l] is meaningless otherwise).
template <size_t L, class Weights>
void WalkLanes(const RankedScores& ranked, absl::Span<const uint8_t> is_member,
               const Weights& weights, size_t lanes, absl::Span<const double> fpr_targets,
               PooledStatistics* out, bool* held) {
  const std::vector<uint32_t>& order = ranked.order();
  const std::vector<double>& desc = ranked.descending();
  const size_t n = order.size();
  double positives[L] = {}, negatives[L] = {}, w[L];
  for (size_t k = 0; k < n; ++k) {
    weights(k, w);
    double* into = is_member[order[k]] ? positives : negatives;
    for (size_t l = 0; l < L; ++l) into[l] += w[l];
  }
  double tp[L] = {}, fp[L] = {}, twice_area[L] = {}, best[L];
  for (size_t l = 0; l < lanes; ++l) {
    held[l] = positives[l] > 0 && negatives[l] > 0;
    best[l] = 0.5;
    out[l].tpr_at_fpr.assign(fpr_targets.size(), 0.0);
  }
  for (size_t k = 0; k < n;) {
    double dtp[L] = {}, dfp[L] = {};
    size_t end = k;
    do {
      weights(end, w);
      double* into = is_member[order[end]] ? dtp : dfp;
      for (size_t l = 0; l < L; ++l) into[l] += w[l];
      ++end;
    } while (end < n && desc[end] == desc[k]);
    k = end;
    for (size_t l = 0; l < lanes; ++l) {
      if (!held[l]) continue;
      twice_area[l] += dfp[l] * (2.0 * tp[l] + dtp[l]);
      tp[l] += dtp[l];
      fp[l] += dfp[l];
      const double tpr = tp[l] / positives[l], fpr = fp[l] / negatives[l];
      best[l] = std::max(best[l], 0.5 * (tpr + 1.0 - fpr));
      for (size_t i = 0; i < fpr_targets.size(); ++i) {
        if (fpr <= fpr_targets[i]) out[l].tpr_at_fpr[i] = tpr;  // the TPR only grows
      }
    }
  }
  for (size_t l = 0; l < lanes; ++l) {
    if (!held[l]) continue;
    out[l].auc = twice_area[l] / (2.0 * positives[l] * negatives[l]);
    out[l].balanced_accuracy = best[l];
  }
}

// One weighting, `weight(k)` the k-th pair's. false when a class weighs 0.
template <class Weight>
bool Walk(const RankedScores& ranked, absl::Span<const uint8_t> is_member, const Weight& weight,
          absl::Span<const double> fpr_targets, PooledStatistics* out) {
  bool held = false;
  WalkLanes<1>(
      ranked, is_member, [&](size_t k, double* w) { w[0] = weight(k); }, 1, fpr_targets, out,
      &held);
  return held;
}

// Resamples of the pigeonhole bootstrap walked together.
constexpr size_t kLanes = 8;

absl::Status CheckTargets(absl::Span<const double> fpr_targets) {
  for (double f : fpr_targets) {
    if (!(f >= 0.0 && f <= 1.0)) {
      return absl::InvalidArgumentError(absl::StrCat("fpr target ", f, " not in [0, 1]"));
    }
  }
  return absl::OkStatus();
}

// How many times each of n items is drawn in n draws with replacement.
void Multiplicities(SplitMix64& rng, uint32_t n, std::vector<double>* counts) {
  counts->assign(n, 0.0);
  for (uint32_t i = 0; i < n; ++i) (*counts)[rng.Uniform(n)] += 1.0;
}

Interval Around(double estimate, double se, double floor) {
  return RerunAround(estimate, se, {floor, 1.0});
}

}  // namespace

absl::StatusOr<RerunIntervals> HalfSampledRerunIntervals(const RankedScores& ranked,
                                                         absl::Span<const uint8_t> is_member,
                                                         uint32_t models, uint32_t examples,
                                                         const RescoreFn& rescore,
                                                         absl::Span<const double> fpr_targets,
                                                         uint64_t seed, uint32_t resamples) {
  if (is_member.size() != ranked.size()) {
    return absl::InvalidArgumentError("scores and membership differ in length");
  }
  if (models < 4 || examples < 2 || resamples < 2) {
    return absl::InvalidArgumentError("needs 4 or more models, 2 or more examples and resamples");
  }
  MEMAUDIT_RETURN_IF_ERROR(CheckTargets(fpr_targets));
  RerunIntervals out;
  if (!Walk(
          ranked, is_member, [](size_t) { return 1.0; }, fpr_targets, &out.estimate)) {
    return absl::InvalidArgumentError("needs both members and non-members");
  }
  const uint32_t half = models / 2;
  std::vector<double> auc, balanced;
  std::vector<std::vector<double>> tpr(fpr_targets.size());
  SplitMix64 rng(seed);
  std::vector<uint32_t> all(models), subset;
  std::vector<double> example_count;
  PooledStatistics resampled;
  for (uint32_t r = 0; r < resamples; ++r) {
    // The first `half` of a partial Fisher-Yates shuffle, in model order.
    std::iota(all.begin(), all.end(), 0u);
    for (uint32_t i = 0; i < half; ++i) {
      std::swap(all[i], all[i + rng.Uniform(models - i)]);
    }
    subset.assign(all.begin(), all.begin() + half);
    std::sort(subset.begin(), subset.end());
    Multiplicities(rng, examples, &example_count);
    MEMAUDIT_ASSIGN_OR_RETURN(const SubsetScores scored, rescore(subset));
    if (scored.scores.size() != size_t{half} * examples ||
        scored.is_member.size() != scored.scores.size()) {
      return absl::InternalError("a rescored half has the wrong number of pairs");
    }
    MEMAUDIT_ASSIGN_OR_RETURN(const RankedScores half_ranked, RankedScores::Rank(scored.scores));
    const std::vector<uint32_t>& order = half_ranked.order();
    const auto weight = [&](size_t k) { return example_count[order[k] % examples]; };
    if (!Walk(half_ranked, scored.is_member, weight, fpr_targets, &resampled)) continue;
    auc.push_back(resampled.auc);
    balanced.push_back(resampled.balanced_accuracy);
    for (size_t i = 0; i < fpr_targets.size(); ++i) tpr[i].push_back(resampled.tpr_at_fpr[i]);
  }
  if (auc.size() < 2) {
    return absl::InvalidArgumentError("fewer than 2 resamples held both classes");
  }
  // Delete-d jackknife: Var = (n / d) · the spread over the halves.
  const double scale = std::sqrt(static_cast<double>(half) / static_cast<double>(models - half));
  out.auc = Around(out.estimate.auc, scale * SampleStandardDeviation(auc), 0.0);
  out.balanced_accuracy =
      Around(out.estimate.balanced_accuracy, scale * SampleStandardDeviation(balanced), 0.5);
  for (size_t i = 0; i < fpr_targets.size(); ++i) {
    out.tpr_at_fpr.push_back(
        Around(out.estimate.tpr_at_fpr[i], scale * SampleStandardDeviation(tpr[i]), 0.0));
  }
  return out;
}

RerunIntervals UnionOf(const RerunIntervals& a, const RerunIntervals& b) {
  const auto join = [](Interval x, Interval y) {
    return Interval{std::min(x.lo, y.lo), std::max(x.hi, y.hi)};
  };
  RerunIntervals out = a;
  out.auc = join(a.auc, b.auc);
  out.balanced_accuracy = join(a.balanced_accuracy, b.balanced_accuracy);
  for (size_t i = 0; i < out.tpr_at_fpr.size() && i < b.tpr_at_fpr.size(); ++i) {
    out.tpr_at_fpr[i] = join(a.tpr_at_fpr[i], b.tpr_at_fpr[i]);
  }
  return out;
}

Interval RerunAround(double estimate, double se, Interval range) {
  const double half = kZ95 * std::sqrt(2.0) * se;
  return {std::clamp(estimate - half, range.lo, range.hi),
          std::clamp(estimate + half, range.lo, range.hi)};
}

absl::StatusOr<std::vector<double>> ClusterBootstrapErrors(absl::Span<const uint32_t> cluster_of,
                                                           uint32_t clusters,
                                                           const WeightedStatisticsFn& statistics,
                                                           uint64_t seed, uint32_t resamples,
                                                           uint32_t threads) {
  if (clusters < 2 || resamples < 2) {
    return absl::InvalidArgumentError("needs 2 or more clusters and resamples");
  }
  for (uint32_t c : cluster_of) {
    if (c >= clusters) return absl::InvalidArgumentError("a cluster index is out of range");
  }
  // Every resample's draw first, in order, so the threads change no bit.
  SplitMix64 rng(seed);
  std::vector<std::vector<double>> cluster_counts(resamples);
  for (std::vector<double>& counts : cluster_counts) Multiplicities(rng, clusters, &counts);
  std::vector<absl::StatusOr<std::vector<double>>> resampled(resamples);
  ParallelFor(resamples, std::max(threads, 1u), [&](size_t r) {
    std::vector<double> weights(cluster_of.size());
    for (size_t i = 0; i < cluster_of.size(); ++i) weights[i] = cluster_counts[r][cluster_of[i]];
    resampled[r] = statistics(weights);
  });
  std::vector<std::vector<double>> values;  // values[statistic][kept resample]
  for (const absl::StatusOr<std::vector<double>>& one : resampled) {
    if (!one.ok()) continue;
    if (values.empty()) values.resize(one->size());
    if (one->size() != values.size()) {
      return absl::InternalError("the statistics changed in number between resamples");
    }
    for (size_t i = 0; i < values.size(); ++i) values[i].push_back((*one)[i]);
  }
  if (values.empty() || values[0].size() < 2) {
    return absl::InvalidArgumentError("fewer than 2 resamples could be scored");
  }
  std::vector<double> errors;
  errors.reserve(values.size());
  for (const std::vector<double>& v : values) errors.push_back(SampleStandardDeviation(v));
  return errors;
}

absl::StatusOr<PooledStatistics> WeightedStatistics(const RankedScores& ranked,
                                                    absl::Span<const uint8_t> is_member,
                                                    absl::Span<const double> weights,
                                                    absl::Span<const double> fpr_targets) {
  if (is_member.size() != ranked.size() || weights.size() != ranked.size()) {
    return absl::InvalidArgumentError("scores, membership and weights differ in length");
  }
  MEMAUDIT_RETURN_IF_ERROR(CheckTargets(fpr_targets));
  for (double w : weights) {
    if (!(w >= 0.0) || !std::isfinite(w)) {
      return absl::InvalidArgumentError("a weight is negative or not finite");
    }
  }
  PooledStatistics out;
  const std::vector<uint32_t>& order = ranked.order();
  if (!Walk(
          ranked, is_member, [&](size_t k) { return weights[order[k]]; }, fpr_targets, &out)) {
    return absl::InvalidArgumentError("both classes need a positive weight");
  }
  return out;
}

absl::StatusOr<RerunIntervals> RerunIntervalsOf(
    const RankedScores& ranked, absl::Span<const uint8_t> is_member,
    absl::Span<const uint32_t> model_of, uint32_t models, absl::Span<const uint32_t> example_of,
    uint32_t examples, absl::Span<const double> fpr_targets, uint64_t seed, uint32_t resamples) {
  const size_t n = ranked.size();
  if (is_member.size() != n || model_of.size() != n || example_of.size() != n) {
    return absl::InvalidArgumentError("scores, membership, models and examples differ in length");
  }
  if (models < 2 || examples < 2 || resamples < 2) {
    return absl::InvalidArgumentError("needs 2 or more models, examples and resamples");
  }
  MEMAUDIT_RETURN_IF_ERROR(CheckTargets(fpr_targets));
  const std::vector<uint32_t>& order = ranked.order();
  // The model and example of each pair in score order, read once per resample.
  std::vector<uint32_t> model_at(n), example_at(n);
  for (size_t k = 0; k < n; ++k) {
    if (model_of[order[k]] >= models || example_of[order[k]] >= examples) {
      return absl::InvalidArgumentError("a model or example index is out of range");
    }
    model_at[k] = model_of[order[k]];
    example_at[k] = example_of[order[k]];
  }
  RerunIntervals out;
  if (!Walk(
          ranked, is_member, [](size_t) { return 1.0; }, fpr_targets, &out.estimate)) {
    return absl::InvalidArgumentError("needs both members and non-members");
  }
  std::vector<double> auc, balanced;
  std::vector<std::vector<double>> tpr(fpr_targets.size());
  SplitMix64 rng(seed);
  std::vector<double> model_count, example_count;
  // Lane l of pair (m, e) weighs model_lanes[m * kLanes + l] *
  // example_lanes[e * kLanes + l]: resamples r .. r + lanes - 1 in one pass.
  std::vector<double> model_lanes(size_t{models} * kLanes),
      example_lanes(size_t{examples} * kLanes);
  PooledStatistics resampled[kLanes];
  for (uint32_t r = 0; r < resamples; r += kLanes) {
    const size_t lanes = std::min<size_t>(kLanes, resamples - r);
    for (size_t l = 0; l < lanes; ++l) {
      Multiplicities(rng, models, &model_count);
      Multiplicities(rng, examples, &example_count);
      for (uint32_t m = 0; m < models; ++m) model_lanes[m * kLanes + l] = model_count[m];
      for (uint32_t e = 0; e < examples; ++e) example_lanes[e * kLanes + l] = example_count[e];
    }
    // Lane l of the k-th pair: its model's and its example's multiplicity.
    const auto weights = [&](size_t k, double* w) {
      const double* a = &model_lanes[model_at[k] * kLanes];
      const double* b = &example_lanes[example_at[k] * kLanes];
      for (size_t l = 0; l < kLanes; ++l) w[l] = a[l] * b[l];
    };
    bool held[kLanes];
    WalkLanes<kLanes>(ranked, is_member, weights, lanes, fpr_targets, resampled, held);
    for (size_t l = 0; l < lanes; ++l) {
      if (!held[l]) continue;
      auc.push_back(resampled[l].auc);
      balanced.push_back(resampled[l].balanced_accuracy);
      for (size_t i = 0; i < fpr_targets.size(); ++i) {
        tpr[i].push_back(resampled[l].tpr_at_fpr[i]);
      }
    }
  }
  if (auc.size() < 2) {
    return absl::InvalidArgumentError("fewer than 2 resamples held both classes");
  }
  out.auc = Around(out.estimate.auc, SampleStandardDeviation(auc), 0.0);
  out.balanced_accuracy =
      Around(out.estimate.balanced_accuracy, SampleStandardDeviation(balanced), 0.5);
  for (size_t i = 0; i < fpr_targets.size(); ++i) {
    out.tpr_at_fpr.push_back(
        Around(out.estimate.tpr_at_fpr[i], SampleStandardDeviation(tpr[i]), 0.0));
  }
  return out;
}

}  // namespace memaudit::scoring
