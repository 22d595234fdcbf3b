// Confidence intervals: exact binomial (Clopper–Pearson) for rates such as
// TPR and FPR, and a Student-t interval for a mean across trials.
#ifndef MEMAUDIT_SCORING_INTERVALS_H_
#define MEMAUDIT_SCORING_INTERVALS_H_

#include <cstddef>
#include <limits>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace memaudit::scoring {

struct Interval {
  double lo = 0.0;
  double hi = 0.0;
};

// Two-sided exact interval for a binomial proportion k/n at `confidence`
// (e.g. 0.95): lo = Beta⁻¹(α/2; k, n−k+1), hi = Beta⁻¹(1−α/2; k+1, n−k),
// with lo = 0 at k = 0 and hi = 1 at k = n. Needs n >= 1, k <= n,
// 0 < confidence < 1.
absl::StatusOr<Interval> ClopperPearson(size_t successes, size_t trials, double confidence = 0.95);

// No bound: a quantity that can take any real value.
inline constexpr Interval kWholeLine{-std::numeric_limits<double>::infinity(),
                                     std::numeric_limits<double>::infinity()};
// A rate, an AUC, a probability.
inline constexpr Interval kUnitInterval{0.0, 1.0};

// The standard normal's 97.5% quantile: a two-sided 95% normal interval.
inline constexpr double kZ95 = 1.959963984540054;

// The sample standard deviation (n − 1) of `values`, n >= 2: the spread of
// a bootstrap's resampled statistics, their standard error.
double SampleStandardDeviation(absl::Span<const double> values);

struct MeanSummary {
  double mean = 0.0;
  double stddev = 0.0;  // sample std (n − 1); 0 when n = 1
  Interval interval;    // mean ± t_{n−1}·sd/√n; [mean, mean] when n = 1
  // Where the mean of another n trials (a re-run with other seeds) falls:
  // the prediction interval mean ± t_{n−1}·sd·√(2/n), since the difference
  // of two independent means of n has variance 2σ²/n (Hahn, Meeker &
  // Escobar, "Statistical Intervals", 2nd ed. 2017, ch. 4). [mean, mean]
  // when n = 1 (the results warn: few_trials, few_replicates).
  Interval rerun;
  size_t n = 0;
};

// Mean with a Student-t interval. With few trials (the forgetting paper uses
// 3) the t quantile, not the normal one, keeps the coverage honest.
// The interval is cut to `range`, the values the quantity can take (a rate
// is in [0, 1]): with two trials a t interval can reach far past it.
// Needs >= 1 finite value and 0 < confidence < 1.
absl::StatusOr<MeanSummary> SummarizeMean(absl::Span<const double> values, double confidence = 0.95,
                                          Interval range = kWholeLine);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_INTERVALS_H_
