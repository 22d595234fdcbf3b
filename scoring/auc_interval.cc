#include "scoring/auc_interval.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "boost/math/distributions/normal.hpp"
#include "common/base/status_macros.h"
#include "scoring/validation.h"

namespace memaudit::scoring {
namespace {

absl::Status CheckInputs(absl::Span<const double> scores, absl::Span<const uint8_t> is_member,
                         absl::Span<const uint32_t> cluster, uint32_t clusters, double confidence) {
  MEMAUDIT_RETURN_IF_ERROR(CheckNonEmpty("scores", scores.size()));
  MEMAUDIT_RETURN_IF_ERROR(CheckFinite("scores", scores));
  if (is_member.size() != scores.size() || cluster.size() != scores.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("scores, is_member and cluster must have one entry per pair (got ",
                     scores.size(), ", ", is_member.size(), ", ", cluster.size(), ")"));
  }
  if (!(confidence > 0 && confidence < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("confidence must be in (0, 1) (got ", confidence, ")"));
  }
  std::vector<uint8_t> used(clusters, 0);
  bool member = false, non_member = false;
  for (size_t i = 0; i < cluster.size(); ++i) {
    if (cluster[i] >= clusters) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster[", i, "] = ", cluster[i], " is not < clusters = ", clusters));
    }
    used[cluster[i]] = 1;
    (is_member[i] ? member : non_member) = true;
  }
  if (!member || !non_member) {
    return absl::InvalidArgumentError("both members and non-members are needed for an AUC");
  }
  if (std::count(used.begin(), used.end(), 1) < 2) {
    return absl::InvalidArgumentError("a variance needs pairs in at least 2 clusters");
  }
  return absl::OkStatus();
}

// Obuchowski's interval, walking the pairs in increasing score order (the
// ranking read backwards). Every pair of a tie group adds the same placement
// value for its class, and the groups come in increasing order, so each
// cluster's sums take the same additions in the same order for any order
// within a group.
ClusteredAuc IntervalOf(const RankedScores& ranked, absl::Span<const uint8_t> is_member,
                        absl::Span<const uint32_t> cluster, uint32_t clusters, double confidence) {
  const size_t n = is_member.size(), last = n - 1;
  const std::vector<uint32_t>& order = ranked.order();
  const std::vector<double>& descending = ranked.descending();
  auto index_at = [&](size_t k) { return order[last - k]; };
  auto score_at = [&](size_t k) { return descending[last - k]; };
  double positives = 0, negatives = 0;
  for (uint8_t m : is_member) (m ? positives : negatives) += 1;
  // Placement values: a member's share of non-members it beats (ties ½), a
  // non-member's share of members that beat it. Summed per cluster.
  std::vector<double> v10(clusters, 0.0), v01(clusters, 0.0), m(clusters, 0.0), k(clusters, 0.0);
  double negatives_below = 0, positives_below = 0, wins = 0;
  for (size_t begin = 0; begin < n;) {
    size_t end = begin;
    double run_pos = 0, run_neg = 0;
    while (end < n && score_at(end) == score_at(begin)) {
      (is_member[index_at(end)] ? run_pos : run_neg) += 1;
      ++end;
    }
    const double pos_above = positives - positives_below - run_pos;
    for (size_t q = begin; q < end; ++q) {
      const uint32_t i = index_at(q);
      if (is_member[i]) {
        v10[cluster[i]] += (negatives_below + 0.5 * run_neg) / negatives;
        m[cluster[i]] += 1;
      } else {
        v01[cluster[i]] += (pos_above + 0.5 * run_pos) / positives;
        k[cluster[i]] += 1;
      }
    }
    wins += run_pos * (negatives_below + 0.5 * run_neg);
    negatives_below += run_neg;
    positives_below += run_pos;
    begin = end;
  }
  ClusteredAuc out;
  out.auc = wins / (positives * negatives);
  double s10 = 0, s01 = 0, s11 = 0, used = 0;
  for (uint32_t c = 0; c < clusters; ++c) {
    if (m[c] == 0 && k[c] == 0) continue;  // an empty cluster is no cluster
    used += 1;
    const double a = v10[c] - m[c] * out.auc;
    const double b = v01[c] - k[c] * out.auc;
    s10 += a * a;
    s01 += b * b;
    s11 += a * b;
  }
  const double f = used / (used - 1);
  s10 *= f / positives;
  s01 *= f / negatives;
  s11 *= f;
  out.variance =
      std::max(0.0, s10 / positives + s01 / negatives + 2 * s11 / (positives * negatives));
  const double z =
      boost::math::quantile(boost::math::normal_distribution<double>(), 0.5 + confidence / 2);
  const double half = z * std::sqrt(out.variance);
  out.interval = {std::max(0.0, out.auc - half), std::min(1.0, out.auc + half)};
  return out;
}

}  // namespace

absl::StatusOr<ClusteredAuc> ClusteredAucInterval(absl::Span<const double> scores,
                                                  absl::Span<const uint8_t> is_member,
                                                  absl::Span<const uint32_t> cluster,
                                                  uint32_t clusters, double confidence) {
  MEMAUDIT_RETURN_IF_ERROR(CheckInputs(scores, is_member, cluster, clusters, confidence));
  MEMAUDIT_ASSIGN_OR_RETURN(const RankedScores ranked, RankedScores::Rank(scores));
  return IntervalOf(ranked, is_member, cluster, clusters, confidence);
}

absl::StatusOr<ClusteredAuc> ClusteredAucInterval(const RankedScores& ranked,
                                                  absl::Span<const uint8_t> is_member,
                                                  absl::Span<const uint32_t> cluster,
                                                  uint32_t clusters, double confidence) {
  MEMAUDIT_RETURN_IF_ERROR(CheckInputs(ranked.scores(), is_member, cluster, clusters, confidence));
  return IntervalOf(ranked, is_member, cluster, clusters, confidence);
}

}  // namespace memaudit::scoring
