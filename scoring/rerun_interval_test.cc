#include "scoring/rerun_interval.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scoring/roc.h"

namespace memaudit::scoring {
namespace {

// Scores with ties (rounded to a grid) and both classes.
void RandomScores(uint32_t seed, size_t n, std::vector<double>* scores,
                  std::vector<uint8_t>* member) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 1.0);
  scores->clear();
  member->clear();
  for (size_t i = 0; i < n; ++i) {
    const uint8_t m = static_cast<uint8_t>(i % 3 == 0);
    member->push_back(m);
    scores->push_back(std::round((noise(rng) + 0.7 * m) * 8.0) / 8.0);
  }
}

TEST(WeightedStatisticsTest, UnitWeightsGiveTheRocStatisticsToTheBit) {
  std::vector<double> scores;
  std::vector<uint8_t> member;
  RandomScores(1, 3000, &scores, &member);
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(RankedScores ranked, RankedScores::Rank(scores));
  const std::vector<double> targets = {0.0, 0.001, 0.01, 0.1, 0.5, 1.0};
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(
      PooledStatistics s,
      WeightedStatistics(ranked, member, std::vector<double>(3000, 1.0), targets));
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(RocCurve roc, ComputeRoc(ranked, member));
  EXPECT_EQ(s.auc, Auc(roc));
  EXPECT_EQ(s.balanced_accuracy, BalancedAccuracy(roc));
  for (size_t i = 0; i < targets.size(); ++i) {
    MEMAUDIT_ASSERT_OK_AND_ASSIGN(OperatingPoint p, TprAtFpr(roc, targets[i]));
    EXPECT_EQ(s.tpr_at_fpr[i], p.tpr) << targets[i];
  }
}

TEST(WeightedStatisticsTest, AWeightOfKIsThePairKTimes) {
  // Hand-computed: members 3 (weight 2) and 1; non-members 2 and 0.
  // Duplicated: members {3, 3, 1}, non-members {2, 0}: member-nonmember
  // pairs won 3·2 − 1 = 5 of 6, so AUC = 5/6; TPR at FPR 0 = 2/3 (3 above
  // every non-member); at FPR 1/2: 1 (threshold 1 lets in every member and
  // one non-member); balanced accuracy max((2/3 + 1) / 2, (1 + 1/2) / 2) = 5/6.
  const std::vector<double> scores = {3, 1, 2, 0};
  const std::vector<uint8_t> member = {1, 1, 0, 0};
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(RankedScores ranked, RankedScores::Rank(scores));
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(PooledStatistics s,
                                WeightedStatistics(ranked, member, {2, 1, 1, 1}, {0.0, 0.5}));
  EXPECT_DOUBLE_EQ(s.auc, 5.0 / 6.0);
  EXPECT_DOUBLE_EQ(s.tpr_at_fpr[0], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.tpr_at_fpr[1], 1.0);
  EXPECT_DOUBLE_EQ(s.balanced_accuracy, 5.0 / 6.0);
  // Zero weight: the pair is gone.
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(PooledStatistics without,
                                WeightedStatistics(ranked, member, {0, 1, 1, 1}, {0.0}));
  EXPECT_DOUBLE_EQ(without.auc, 0.5);  // member 1 against non-members 2 and 0
  EXPECT_FALSE(WeightedStatistics(ranked, member, {1, 1, 0, 0}, {0.0}).ok());
  EXPECT_FALSE(WeightedStatistics(ranked, member, {1, -1, 1, 1}, {0.0}).ok());
}

// An audit's scores as a two-way random-effects model: every run draws new
// target models (a shift each) and new examples (a shift each, and whether
// it is a member of each model).
struct SimulatedRun {
  std::vector<double> scores;
  std::vector<uint8_t> member;
  std::vector<uint32_t> model_of, example_of;
};

SimulatedRun Simulate(uint64_t seed, uint32_t models, uint32_t examples, double model_sd) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::bernoulli_distribution half(0.5);
  std::vector<double> model_shift(models), model_signal(models), example_shift(examples);
  for (double& s : model_shift) s = model_sd * z(rng);
  for (double& s : model_signal) s = 0.8 + model_sd * z(rng);
  for (double& s : example_shift) s = 0.5 * z(rng);
  SimulatedRun run;
  for (uint32_t t = 0; t < models; ++t) {
    for (uint32_t e = 0; e < examples; ++e) {
      const bool in = half(rng);
      run.member.push_back(in);
      run.scores.push_back(model_shift[t] + example_shift[e] + (in ? model_signal[t] : 0) + z(rng));
      run.model_of.push_back(t);
      run.example_of.push_back(e);
    }
  }
  return run;
}

RerunIntervals IntervalsOf(const SimulatedRun& run, uint32_t models, uint32_t examples,
                           uint64_t seed) {
  auto ranked = RankedScores::Rank(run.scores);
  EXPECT_TRUE(ranked.ok());
  auto out = RerunIntervalsOf(*ranked, run.member, run.model_of, models, run.example_of, examples,
                              {0.01, 0.1}, seed);
  EXPECT_TRUE(out.ok()) << out.status();
  return *out;
}

TEST(RerunIntervalTest, HoldsTheEstimateAndIsSeeded) {
  const SimulatedRun run = Simulate(7, 8, 100, 0.3);
  const RerunIntervals a = IntervalsOf(run, 8, 100, 42), b = IntervalsOf(run, 8, 100, 42);
  EXPECT_EQ(a.auc.lo, b.auc.lo);
  EXPECT_EQ(a.tpr_at_fpr[1].hi, b.tpr_at_fpr[1].hi);
  EXPECT_LT(a.auc.lo, a.estimate.auc);
  EXPECT_GT(a.auc.hi, a.estimate.auc);
  EXPECT_GE(a.balanced_accuracy.lo, 0.5);
  EXPECT_LE(a.tpr_at_fpr[0].lo, a.estimate.tpr_at_fpr[0]);
  EXPECT_GE(a.tpr_at_fpr[0].hi, a.estimate.tpr_at_fpr[0]);
}

TEST(RerunIntervalTest, ModelsThatDifferWidenIt) {
  const RerunIntervals alike = IntervalsOf(Simulate(3, 16, 200, 0.0), 16, 200, 1);
  const RerunIntervals varied = IntervalsOf(Simulate(3, 16, 200, 0.6), 16, 200, 1);
  EXPECT_GT(varied.auc.hi - varied.auc.lo, 1.5 * (alike.auc.hi - alike.auc.lo));
}

// What the interval is for: of independent re-runs, the share of ordered
// pairs (i, j) whose run-j value lies in run i's interval, for each statistic.
TEST(RerunIntervalTest, CoversAnotherRunsValueAtLeastNineTimesInTen) {
  constexpr uint32_t kRuns = 24, kModels = 12, kExamples = 150;
  for (double model_sd : {0.0, 0.4}) {
    std::vector<RerunIntervals> runs;
    for (uint32_t r = 0; r < kRuns; ++r) {
      runs.push_back(IntervalsOf(Simulate(100 + r, kModels, kExamples, model_sd), kModels,
                                 kExamples, 900 + r));
    }
    auto coverage = [&](auto value, auto interval) {
      int inside = 0, pairs = 0;
      for (uint32_t i = 0; i < kRuns; ++i) {
        for (uint32_t j = 0; j < kRuns; ++j) {
          if (i == j) continue;
          const Interval in = interval(runs[i]);
          const double v = value(runs[j]);
          inside += in.lo <= v && v <= in.hi;
          ++pairs;
        }
      }
      return static_cast<double>(inside) / pairs;
    };
    SCOPED_TRACE(model_sd);
    EXPECT_GE(coverage([](const RerunIntervals& r) { return r.estimate.auc; },
                       [](const RerunIntervals& r) { return r.auc; }),
              0.9);
    EXPECT_GE(coverage([](const RerunIntervals& r) { return r.estimate.balanced_accuracy; },
                       [](const RerunIntervals& r) { return r.balanced_accuracy; }),
              0.9);
    EXPECT_GE(coverage([](const RerunIntervals& r) { return r.estimate.tpr_at_fpr[1]; },
                       [](const RerunIntervals& r) { return r.tpr_at_fpr[1]; }),
              0.9);
  }
}

TEST(RerunIntervalTest, BadInputIsRefused) {
  const SimulatedRun run = Simulate(1, 4, 10, 0.1);
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(RankedScores ranked, RankedScores::Rank(run.scores));
  EXPECT_FALSE(
      RerunIntervalsOf(ranked, run.member, run.model_of, 1, run.example_of, 10, {0.1}, 1).ok());
  EXPECT_FALSE(
      RerunIntervalsOf(ranked, run.member, run.model_of, 4, run.example_of, 10, {1.5}, 1).ok());
  std::vector<uint32_t> bad = run.model_of;
  bad[0] = 4;
  EXPECT_FALSE(RerunIntervalsOf(ranked, run.member, bad, 4, run.example_of, 10, {0.1}, 1).ok());
}

// The share of ordered pairs of runs (i, j), i != j, with run j's value
// inside run i's interval.
double PairwiseCoverage(const std::vector<double>& value, const std::vector<Interval>& interval) {
  int inside = 0, pairs = 0;
  for (size_t i = 0; i < value.size(); ++i) {
    for (size_t j = 0; j < value.size(); ++j) {
      if (i == j) continue;
      inside += interval[i].lo <= value[j] && value[j] <= interval[i].hi;
      ++pairs;
    }
  }
  return static_cast<double>(inside) / pairs;
}

// The weighted mean of `rows`, and the total weight when `with_total`.
WeightedStatisticsFn WeightedMean(const std::vector<double>& rows, bool with_total = false) {
  return [&rows, with_total](absl::Span<const double> w) -> absl::StatusOr<std::vector<double>> {
    double sum = 0, total = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      sum += w[i] * rows[i];
      total += w[i];
    }
    if (with_total) return std::vector<double>{sum / total, total};
    return std::vector<double>{sum / total};
  };
}

// A run whose attack leans on reference models: model m's raw signal on
// example e is its noise plus a member shift, and the attack scores
// target t against the mean of its references' raw signals where they left
// e out. Every target of a run shares those references.
struct ReferenceRun {
  std::vector<std::vector<double>> raw;  // models x examples
  std::vector<std::vector<uint8_t>> in;

  SubsetScores Scores(absl::Span<const uint32_t> models) const {
    SubsetScores out;
    const size_t examples = raw[0].size();
    for (uint32_t t : models) {
      for (size_t e = 0; e < examples; ++e) {
        double sum = 0;
        int n = 0;
        for (uint32_t r : models) {
          if (r != t && !in[r][e]) {
            sum += raw[r][e];
            ++n;
          }
        }
        out.scores.push_back(raw[t][e] - (n > 0 ? sum / n : 0.0));
        out.is_member.push_back(in[t][e]);
      }
    }
    return out;
  }
};

ReferenceRun SimulateReferences(uint64_t seed, uint32_t models, uint32_t examples) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::bernoulli_distribution half(0.5);
  ReferenceRun run;
  std::vector<double> difficulty(examples);
  for (double& d : difficulty) d = 2.0 * z(rng);
  for (uint32_t m = 0; m < models; ++m) {
    run.raw.emplace_back();
    run.in.emplace_back();
    for (uint32_t e = 0; e < examples; ++e) {
      const bool in = half(rng);
      run.in.back().push_back(in);
      run.raw.back().push_back(difficulty[e] + (in ? 0.6 : 0.0) + z(rng));
    }
  }
  return run;
}

// With the references redrawn, the union of the two intervals holds another
// run's AUC in at least 9 pairs of runs in 10; the halves are drawn without
// replacement, n = floor(M / 2) of them, sorted; the same seed gives the
// same bits.
TEST(HalfSampledRerunIntervalTest, RedrawsTheReferencesAndCoversAnotherRun) {
  constexpr uint32_t kRuns = 20, kModels = 12, kExamples = 150;
  std::vector<double> auc;
  std::vector<Interval> interval;
  for (uint32_t r = 0; r < kRuns; ++r) {
    const ReferenceRun run = SimulateReferences(300 + r, kModels, kExamples);
    std::vector<uint32_t> every(kModels);
    std::iota(every.begin(), every.end(), 0u);
    const SubsetScores full = run.Scores(every);
    std::vector<uint32_t> model_of, example_of;
    for (uint32_t t = 0; t < kModels; ++t) {
      for (uint32_t e = 0; e < kExamples; ++e) {
        model_of.push_back(t);
        example_of.push_back(e);
      }
    }
    MEMAUDIT_ASSERT_OK_AND_ASSIGN(RankedScores ranked, RankedScores::Rank(full.scores));
    const RescoreFn rescore = [&](absl::Span<const uint32_t> half) -> absl::StatusOr<SubsetScores> {
      EXPECT_EQ(half.size(), kModels / 2);
      EXPECT_TRUE(std::is_sorted(half.begin(), half.end()));
      EXPECT_EQ(std::adjacent_find(half.begin(), half.end()), half.end());
      return run.Scores(half);
    };
    MEMAUDIT_ASSERT_OK_AND_ASSIGN(
        RerunIntervals halves, HalfSampledRerunIntervals(ranked, full.is_member, kModels, kExamples,
                                                         rescore, {0.1}, 70 + r));
    MEMAUDIT_ASSERT_OK_AND_ASSIGN(RerunIntervals pigeonhole,
                                  RerunIntervalsOf(ranked, full.is_member, model_of, kModels,
                                                   example_of, kExamples, {0.1}, 70 + r));
    EXPECT_EQ(halves.estimate.auc, Auc(*ComputeRoc(ranked, full.is_member)));
    const RerunIntervals both = UnionOf(pigeonhole, halves);
    EXPECT_LE(both.auc.lo, std::min(pigeonhole.auc.lo, halves.auc.lo));
    EXPECT_GE(both.auc.hi, std::max(pigeonhole.auc.hi, halves.auc.hi));
    if (r == 0) {
      MEMAUDIT_ASSERT_OK_AND_ASSIGN(RerunIntervals again,
                                    HalfSampledRerunIntervals(ranked, full.is_member, kModels,
                                                              kExamples, rescore, {0.1}, 70));
      EXPECT_EQ(again.auc.lo, halves.auc.lo);
      EXPECT_EQ(again.tpr_at_fpr[0].hi, halves.tpr_at_fpr[0].hi);
    }
    auc.push_back(both.estimate.auc);
    interval.push_back(both.auc);
  }
  EXPECT_GE(PairwiseCoverage(auc, interval), 0.9);
}

TEST(HalfSampledRerunIntervalTest, ARescoreOfTheWrongSizeIsAnError) {
  const ReferenceRun run = SimulateReferences(1, 6, 20);
  std::vector<uint32_t> every = {0, 1, 2, 3, 4, 5};
  const SubsetScores full = run.Scores(every);
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(RankedScores ranked, RankedScores::Rank(full.scores));
  const RescoreFn wrong = [&](absl::Span<const uint32_t>) -> absl::StatusOr<SubsetScores> {
    return full;  // every model's pairs, not the half's
  };
  EXPECT_FALSE(HalfSampledRerunIntervals(ranked, full.is_member, 6, 20, wrong, {0.1}, 1).ok());
  EXPECT_FALSE(HalfSampledRerunIntervals(ranked, full.is_member, 3, 20, wrong, {0.1}, 1).ok());
}

// Rows nested in clusters with a cluster effect (sd 0.5) and row noise
// (sd 1): the weighted mean's re-run interval holds another run's mean (new
// clusters, new rows) in at least 9 pairs of runs in 10, and each resample
// weighs a row by its cluster's multiplicity.
TEST(ClusterBootstrapTest, TheReRunIntervalOfANestedMeanCoversAnotherRun) {
  constexpr uint32_t kClusters = 10, kRowsPerCluster = 20, kRuns = 30;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> effect(0.0, 0.5), noise(0.0, 1.0);
  std::vector<uint32_t> cluster_of;
  for (uint32_t c = 0; c < kClusters; ++c) cluster_of.insert(cluster_of.end(), kRowsPerCluster, c);
  std::vector<double> estimate;
  std::vector<Interval> interval;
  for (uint32_t r = 0; r < kRuns; ++r) {
    std::vector<double> rows;
    for (uint32_t c = 0; c < kClusters; ++c) {
      const double u = effect(rng);
      for (uint32_t i = 0; i < kRowsPerCluster; ++i) rows.push_back(u + noise(rng));
    }
    const WeightedStatisticsFn mean = WeightedMean(rows);
    const double m = (*mean(std::vector<double>(rows.size(), 1.0)))[0];
    MEMAUDIT_ASSERT_OK_AND_ASSIGN(std::vector<double> se,
                                  ClusterBootstrapErrors(cluster_of, kClusters, mean, 40 + r));
    ASSERT_EQ(se.size(), 1u);
    // The cluster effect dominates: SE near 0.5/√10 ≈ 0.16, far above the
    // rows' 1/√200 ≈ 0.07 alone.
    EXPECT_GT(se[0], 0.09);
    estimate.push_back(m);
    interval.push_back(RerunAround(m, se[0], kWholeLine));
  }
  EXPECT_GE(PairwiseCoverage(estimate, interval), 0.9);
}

TEST(ClusterBootstrapTest, IsSeededAndRefusesTooFewClusters) {
  const std::vector<uint32_t> cluster_of = {0, 0, 1, 1, 2};
  const std::vector<double> rows = {0.1, 0.3, 0.9, 0.7, 0.4};
  const WeightedStatisticsFn mean = WeightedMean(rows, /*with_total=*/true);
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(auto a, ClusterBootstrapErrors(cluster_of, 3, mean, 9));
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(auto b, ClusterBootstrapErrors(cluster_of, 3, mean, 9));
  EXPECT_EQ(a, b);
  // The same bits on any number of threads.
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(auto threaded,
                                ClusterBootstrapErrors(cluster_of, 3, mean, 9, kRerunResamples, 4));
  EXPECT_EQ(threaded, a);
  EXPECT_GT(a[1], 0.0) << "the rows' total weight varies with the clusters drawn";
  EXPECT_FALSE(ClusterBootstrapErrors({0, 0}, 1, mean, 9).ok());
  EXPECT_FALSE(ClusterBootstrapErrors({0, 3}, 3, mean, 9).ok());
  const Interval cut = RerunAround(0.95, 0.1, kUnitInterval);
  EXPECT_NEAR(cut.lo, 0.95 - 1.959963984540054 * std::sqrt(2.0) * 0.1, 1e-12);
  EXPECT_EQ(cut.hi, 1.0);
}

}  // namespace
}  // namespace memaudit::scoring
