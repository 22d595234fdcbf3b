#include "scoring/balanced_accuracy_interval.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/base/parallel_for.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "scoring/fixed_bound_uniform.h"
#include "scoring/validation.h"

namespace memaudit::scoring {
namespace {

constexpr uint32_t kMemberBit = 1u << 31;
constexpr uint32_t kGroupEndBit = 1u << 30;
constexpr uint32_t kClusterMask = kGroupEndBit - 1;

absl::Status CheckInputs(absl::Span<const double> scores, absl::Span<const uint8_t> is_member,
                         absl::Span<const uint32_t> cluster, uint32_t clusters, uint32_t resamples,
                         double confidence) {
  MEMAUDIT_RETURN_IF_ERROR(CheckLabeledScores(scores, is_member));
  if (cluster.size() != scores.size()) {
    return absl::InvalidArgumentError(absl::StrCat("cluster must have one entry per pair (got ",
                                                   cluster.size(), " for ", scores.size(), ")"));
  }
  if (clusters > kClusterMask) {
    return absl::InvalidArgumentError(absl::StrCat("clusters = ", clusters, " is too many"));
  }
  for (size_t i = 0; i < cluster.size(); ++i) {
    if (cluster[i] >= clusters) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster[", i, "] = ", cluster[i], " is not < clusters = ", clusters));
    }
  }
  if (resamples == 0) return absl::InvalidArgumentError("resamples must be >= 1");
  if (!(confidence > 0 && confidence < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("confidence must be in (0, 1) (got ", confidence, ")"));
  }
  return absl::OkStatus();
}

// The pairs in decreasing score order, each as its dense cluster index
// with a member bit and a bit on the last pair of each tie group (the ROC's
// points, where a threshold can fall), and each cluster's class counts.
struct SortedPairs {
  std::vector<uint32_t> code;
  std::vector<int64_t> members, non_members;  // per dense cluster
};

// The pairs from their ranking. A tie group's counts and its last pair's
// group-end bit do not depend on the order within it, and the resample
// passes only add integers within a group, so any descending order gives
// the same bits.
SortedPairs PairsOf(const RankedScores& ranked, absl::Span<const uint8_t> is_member,
                    absl::Span<const uint32_t> cluster, uint32_t clusters) {
  const std::vector<uint32_t>& order = ranked.order();
  const std::vector<double>& descending = ranked.descending();
  // Dense indices for the non-empty clusters: only they are resampled.
  std::vector<uint32_t> dense(clusters, kClusterMask);
  SortedPairs out;
  for (uint32_t c : cluster) {
    if (dense[c] != kClusterMask) continue;
    dense[c] = static_cast<uint32_t>(out.members.size());
    out.members.push_back(0);
    out.non_members.push_back(0);
  }
  const size_t n = cluster.size();
  out.code.resize(n);
  for (size_t k = 0; k < n; ++k) {
    const uint32_t i = order[k];
    const uint32_t d = dense[cluster[i]];
    (is_member[i] ? out.members : out.non_members)[d] += 1;
    const bool end = k + 1 == n || descending[k + 1] != descending[k];
    out.code[k] = d | (is_member[i] ? kMemberBit : 0) | (end ? kGroupEndBit : 0);
  }
  return out;
}

// The deviations of one resample's curve J*(τ) = TPR* − FPR* from the
// data's J(τ), at ROC points τ (the origin included, where both are 0).
struct Deviations {
  double selected = 0;  // at the resample's own maximizer τ̂*
  double at = 0;        // at the data's maximizer τ̂
  double min = 0;       // inf over τ; computed only when asked for
};

// One resample, cluster d counted weight[d * stride] times, its class totals
// positives and negatives (both > 0). `best` indexes the data's maximizing ROC point among the
// tie-group ends, -1 for the origin. This pass is the interval's whole
// cost (resamples × pairs), so it stays in integers: the maximizer of
// TPR* − FPR* is that of tp·N − fp·P.
Deviations ResampleDeviations(const SortedPairs& pairs, const std::vector<double>& curve,
                              int64_t best, bool with_min, const int32_t* weight, size_t stride,
                              int64_t positives, int64_t negatives) {
  const double p = static_cast<double>(positives), q = static_cast<double>(negatives);
  auto j_at = [&](int64_t tp, int64_t fp) {
    return static_cast<double>(tp) / p - static_cast<double>(fp) / q;
  };
  Deviations dev;
  int64_t tp = 0, fp = 0, g = 0;
  int64_t top = 0, top_g = -1;  // the origin's 0 first
  int64_t at_tp = 0, at_fp = 0;
  for (const uint32_t c : pairs.code) {
    // Branch-free: in score order the classes alternate at random, and a
    // mispredicted branch per pair would cost more than the rest.
    const int64_t w = weight[static_cast<size_t>(c & kClusterMask) * stride];
    const int64_t member = -static_cast<int64_t>(c >> 31);  // all ones for a member
    tp += w & member;
    fp += w & ~member;
    if (c & kGroupEndBit) {
      const int64_t score = tp * negatives - fp * positives;
      if (score > top) {  // the first (highest) threshold reaching the max
        top = score;
        top_g = g;
      }
      if (g == best) {
        at_tp = tp;
        at_fp = fp;
      }
      if (with_min) dev.min = std::min(dev.min, j_at(tp, fp) - curve[g]);
      ++g;
    }
  }
  if (top_g >= 0) dev.selected = static_cast<double>(top) / (p * q) - curve[top_g];
  if (best >= 0) dev.at = j_at(at_tp, at_fp) - curve[best];
  return dev;
}

// Resamples per batched pass: lane r of each vector is one resample.
constexpr uint32_t kLanes = 8;
using LaneLongs = int64_t __attribute__((vector_size(kLanes * sizeof(int64_t))));
using LaneDoubles = double __attribute__((vector_size(kLanes * sizeof(double))));

// The batched pass holds counts and scores tp·N − fp·P in doubles, exact
// integers while every lane's resampled pairs P + N stay below 2^26 (then
// P·N < 2^52). Larger resamples take ResampleDeviations, lane by lane.
constexpr int64_t kBatchedPairs = int64_t{1} << 26;

// kLanes resamples in one pass over the pairs: weight[d * kLanes + r] is
// resample r's multiplicity of cluster d, positives/negatives its class
// totals (both > 0 where a lane's result is used). Lane r computes the same
// integers as ResampleDeviations on resample r, held in doubles, and the
// same doubles from them, so its deviations are those to the bit; the pass
// streams the pairs once for eight resamples, where the per-pair work is
// vector-wide: a cluster's eight multiplicities are one load, already in
// doubles, and a pair adds them to its class's count (fp is seen − tp).
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default"))) void BatchedDeviations(
    const SortedPairs& pairs, const std::vector<double>& curve, int64_t best, bool with_min,
    const double* weight, const int64_t* positives, const int64_t* negatives, Deviations* out) {
  LaneDoubles p, q;
  LaneLongs top_g;
  for (uint32_t r = 0; r < kLanes; ++r) {
    p[r] = static_cast<double>(positives[r]);
    q[r] = static_cast<double>(negatives[r]);
    top_g[r] = -1;  // the origin's 0 first
  }
  LaneDoubles tp = {}, seen = {}, at_tp = {}, at_fp = {};
  LaneDoubles top = {}, min = {};
  int64_t g = 0;
  for (const uint32_t c : pairs.code) {
    LaneDoubles w;
    std::memcpy(&w, weight + static_cast<size_t>(c & kClusterMask) * kLanes, sizeof(w));
    const int64_t member = -static_cast<int64_t>(c >> 31);  // all ones for a member
    tp += reinterpret_cast<LaneDoubles>(reinterpret_cast<LaneLongs>(w) & member);
    seen += w;
    if (c & kGroupEndBit) {
      const LaneDoubles fp = seen - tp;
      const LaneDoubles score = tp * q - fp * p;
      const LaneLongs higher = score > top;  // the first (highest) threshold reaching the max
      top = higher ? score : top;
      top_g = higher ? LaneLongs{} + g : top_g;
      if (g == best) {
        at_tp = tp;
        at_fp = fp;
      }
      if (with_min) {
        const LaneDoubles j = (tp / p - fp / q) - curve[g];
        min = j < min ? j : min;
      }
      ++g;
    }
  }
  for (uint32_t r = 0; r < kLanes; ++r) {
    Deviations dev;
    if (top_g[r] >= 0) dev.selected = top[r] / (p[r] * q[r]) - curve[top_g[r]];
    if (best >= 0) dev.at = (at_tp[r] / p[r] - at_fp[r] / q[r]) - curve[best];
    dev.min = min[r];
    out[r] = dev;
  }
}

// numpy.percentile's default: linear between the order statistics.
double Percentile(const std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(at));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (at - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

// The data's J(τ) = TPR − FPR at each tie-group end, in order, and its
// balanced accuracy computed as BalancedAccuracy(RocCurve) does, so the two
// agree to the bit.
struct DataCurve {
  std::vector<double> j;
  double balanced_accuracy = 0.5;
};

DataCurve Curve(const SortedPairs& pairs) {
  int64_t positives = 0, negatives = 0;
  for (size_t d = 0; d < pairs.members.size(); ++d) {
    positives += pairs.members[d];
    negatives += pairs.non_members[d];
  }
  const double p = static_cast<double>(positives), q = static_cast<double>(negatives);
  DataCurve out;
  int64_t tp = 0, fp = 0;
  for (const uint32_t c : pairs.code) {
    ++((c & kMemberBit) ? tp : fp);
    if (c & kGroupEndBit) {
      const double tpr = static_cast<double>(tp) / p, fpr = static_cast<double>(fp) / q;
      out.j.push_back(tpr - fpr);
      out.balanced_accuracy = std::max(out.balanced_accuracy, 0.5 * (tpr + 1.0 - fpr));
    }
  }
  return out;
}

// The first (highest) threshold that reaches the curve's max, -1 when no
// threshold beats the origin.
int64_t Maximizer(const std::vector<double>& curve) {
  int64_t best = -1;
  double j_hat = 0;
  for (size_t g = 0; g < curve.size(); ++g) {
    if (curve[g] > j_hat) {
      j_hat = curve[g];
      best = static_cast<int64_t>(g);
    }
  }
  return best;
}

// What every resample pass reads.
struct PassInputs {
  const SortedPairs& pairs;
  const std::vector<double>& curve;  // the data's J at each tie-group end
  int64_t best;                      // Maximizer(curve)
  int64_t batched_pairs;
};

// Hands out the passes in order with their draws: the pass of resamples
// [first, first + kLanes) always gets the stretch of the one seeded stream
// that one resample at a time would draw for them, whichever thread claims
// it, so the intervals do not depend on the threads.
class PassQueue {
 public:
  PassQueue(uint64_t seed, uint32_t used, uint32_t resamples)
      : rng_(seed), draw_(used), used_(used), resamples_(resamples) {}

  // Claims the next pass: resample first + r in lane r < *lanes, its
  // multiplicity of cluster d added to weight[d * kLanes + r] (zeros on
  // entry). False when every pass is claimed.
  bool Claim(uint32_t* first, uint32_t* lanes, int32_t* weight) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (next_ >= resamples_) return false;
    *first = next_;
    *lanes = std::min(kLanes, resamples_ - next_);
    next_ += *lanes;
    for (uint32_t r = 0; r < *lanes; ++r) {
      for (uint32_t k = 0; k < used_; ++k) ++weight[draw_(rng_) * kLanes + r];
    }
    return true;
  }

 private:
  absl::Mutex mu_;
  SplitMix64 rng_ ABSL_GUARDED_BY(mu_);
  const FixedBoundUniform draw_;
  const uint32_t used_, resamples_;
  uint32_t next_ ABSL_GUARDED_BY(mu_) = 0;
};

// One pass's resamples, lanes of `weight`: their deviations in dev[r], and
// usable[r] = 0 for a resample that left a class empty. `lane_weight` is
// scratch for the batched pass's copy of the weights in doubles.
void RunPass(const PassInputs& in, const int32_t* weight, uint32_t lanes,
             std::vector<double>* lane_weight, Deviations* dev, uint8_t* usable) {
  const SortedPairs& pairs = in.pairs;
  const uint32_t used = static_cast<uint32_t>(pairs.members.size());
  // Cluster by cluster, all lanes at once (a vector each); lanes past
  // `lanes` weigh 0.
  int64_t positives[kLanes] = {}, negatives[kLanes] = {};
  for (uint32_t d = 0; d < used; ++d) {
    for (uint32_t r = 0; r < kLanes; ++r) {
      positives[r] += weight[d * kLanes + r] * pairs.members[d];
      negatives[r] += weight[d * kLanes + r] * pairs.non_members[d];
    }
  }
  bool batched = true;
  for (uint32_t r = 0; r < lanes; ++r) {
    batched = batched && positives[r] + negatives[r] < in.batched_pairs;
  }
  const bool with_min = in.best < 0;
  Deviations lane_dev[kLanes];
  if (batched) {
    lane_weight->resize(static_cast<size_t>(used) * kLanes);
    std::copy(weight, weight + lane_weight->size(), lane_weight->begin());
    BatchedDeviations(pairs, in.curve, in.best, with_min, lane_weight->data(), positives, negatives,
                      lane_dev);
  }
  for (uint32_t r = 0; r < lanes; ++r) {
    usable[r] = positives[r] != 0 && negatives[r] != 0;
    if (!usable[r]) continue;
    dev[r] = batched ? lane_dev[r]
                     : ResampleDeviations(pairs, in.curve, in.best, with_min, weight + r, kLanes,
                                          positives[r], negatives[r]);
  }
}

// Every resample's deviations, the passes spread over `threads` (0: one per
// hardware thread); each writes only its own resamples' slots.
void RunPasses(const PassInputs& in, uint64_t seed, uint32_t resamples, uint32_t threads,
               std::vector<Deviations>* dev, std::vector<uint8_t>* usable) {
  const uint32_t used = static_cast<uint32_t>(in.pairs.members.size());
  dev->assign(resamples, Deviations{});
  usable->assign(resamples, 0);
  PassQueue queue(seed, used, resamples);
  size_t workers = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  workers = std::min<size_t>(workers, (resamples + kLanes - 1) / kLanes);
  ParallelFor(workers, workers, [&](size_t) {
    std::vector<int32_t> weight(static_cast<size_t>(used) * kLanes);
    std::vector<double> lane_weight;
    uint32_t first = 0, lanes = 0;
    while (true) {
      std::fill(weight.begin(), weight.end(), 0);
      if (!queue.Claim(&first, &lanes, weight.data())) break;
      RunPass(in, weight.data(), lanes, &lane_weight, dev->data() + first, usable->data() + first);
    }
  });
}

BootstrapInterval Bootstrap(const SortedPairs& pairs, uint64_t seed, uint32_t resamples,
                            double confidence, int64_t batched_pairs, uint32_t threads) {
  const DataCurve data = Curve(pairs);
  const PassInputs in{pairs, data.j, Maximizer(data.j), batched_pairs};
  std::vector<Deviations> dev;
  std::vector<uint8_t> usable;
  RunPasses(in, seed, resamples, threads, &dev, &usable);
  std::vector<double> above, below;  // the low and the high end's deviations
  above.reserve(resamples);
  below.reserve(resamples);
  for (uint32_t r = 0; r < resamples; ++r) {
    if (!usable[r]) continue;  // a class left empty
    above.push_back(dev[r].selected);
    // Without a maximizer to hold on to, the whole curve's lower deviation.
    below.push_back(in.best >= 0 ? dev[r].at : dev[r].min);
  }
  BootstrapInterval out;
  out.estimate = data.balanced_accuracy;
  out.resamples_used = static_cast<uint32_t>(above.size());
  if (above.empty()) {
    out.interval = {0.5, 1.0};  // no resample had both classes: nothing to go on
    return out;
  }
  std::sort(above.begin(), above.end());
  std::sort(below.begin(), below.end());
  const double alpha = 1.0 - confidence;
  // Balanced accuracy = (1 + J) / 2, so deviations in J halve.
  const double ba = data.balanced_accuracy;
  out.interval = {std::max(0.5, ba - 0.5 * Percentile(above, 1.0 - alpha / 2)),
                  std::min(1.0, std::max(ba, ba - 0.5 * Percentile(below, alpha / 2)))};
  return out;
}

absl::Status CheckUsedClusters(const SortedPairs& pairs) {
  if (pairs.members.size() < 2) {
    return absl::InvalidArgumentError("a bootstrap needs pairs in at least 2 clusters");
  }
  return absl::OkStatus();
}

absl::StatusOr<BootstrapInterval> BootstrapRanked(const RankedScores& ranked,
                                                  absl::Span<const uint8_t> is_member,
                                                  absl::Span<const uint32_t> cluster,
                                                  uint32_t clusters, uint64_t seed,
                                                  uint32_t resamples, double confidence,
                                                  int64_t batched_pairs, uint32_t threads) {
  MEMAUDIT_RETURN_IF_ERROR(
      CheckInputs(ranked.scores(), is_member, cluster, clusters, resamples, confidence));
  const SortedPairs pairs = PairsOf(ranked, is_member, cluster, clusters);
  MEMAUDIT_RETURN_IF_ERROR(CheckUsedClusters(pairs));
  return Bootstrap(pairs, seed, resamples, confidence, batched_pairs, threads);
}

absl::StatusOr<BootstrapInterval> RankAndBootstrap(absl::Span<const double> scores,
                                                   absl::Span<const uint8_t> is_member,
                                                   absl::Span<const uint32_t> cluster,
                                                   uint32_t clusters, uint64_t seed,
                                                   uint32_t resamples, double confidence,
                                                   int64_t batched_pairs) {
  // Checked before ranking, so that bad input gets the same errors either way.
  MEMAUDIT_RETURN_IF_ERROR(
      CheckInputs(scores, is_member, cluster, clusters, resamples, confidence));
  MEMAUDIT_ASSIGN_OR_RETURN(const RankedScores ranked, RankedScores::Rank(scores));
  return BootstrapRanked(ranked, is_member, cluster, clusters, seed, resamples, confidence,
                         batched_pairs, /*threads=*/1);
}

}  // namespace

absl::StatusOr<BootstrapInterval> BalancedAccuracyInterval(absl::Span<const double> scores,
                                                           absl::Span<const uint8_t> is_member,
                                                           absl::Span<const uint32_t> cluster,
                                                           uint32_t clusters, uint64_t seed,
                                                           uint32_t resamples, double confidence) {
  return RankAndBootstrap(scores, is_member, cluster, clusters, seed, resamples, confidence,
                          kBatchedPairs);
}

absl::StatusOr<BootstrapInterval> BalancedAccuracyInterval(const RankedScores& ranked,
                                                           absl::Span<const uint8_t> is_member,
                                                           absl::Span<const uint32_t> cluster,
                                                           uint32_t clusters, uint64_t seed,
                                                           uint32_t resamples, double confidence,
                                                           uint32_t threads) {
  return BootstrapRanked(ranked, is_member, cluster, clusters, seed, resamples, confidence,
                         kBatchedPairs, threads);
}

namespace internal {
absl::StatusOr<BootstrapInterval> BalancedAccuracyIntervalWithBatchLimit(
    absl::Span<const double> scores, absl::Span<const uint8_t> is_member,
    absl::Span<const uint32_t> cluster, uint32_t clusters, uint64_t seed, int64_t batched_pairs) {
  return RankAndBootstrap(scores, is_member, cluster, clusters, seed, kBalancedAccuracyResamples,
                          0.95, batched_pairs);
}
}  // namespace internal

}  // namespace memaudit::scoring
