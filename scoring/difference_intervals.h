// Intervals for a rate or mean of per-record successes in [0, 1], and for
// the difference of two such means over independent record sets (RM_norm
// = s_train − s_val). Exact or analytic: no resampling, so no seed, and
// the same values give the same interval.
#ifndef MEMAUDIT_SCORING_DIFFERENCE_INTERVALS_H_
#define MEMAUDIT_SCORING_DIFFERENCE_INTERVALS_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scoring/intervals.h"

namespace memaudit::scoring {

// Wilson's score interval for k/n (Wilson 1927). Needs n >= 1, k <= n,
// 0 < confidence < 1.
absl::StatusOr<Interval> WilsonScore(size_t successes, size_t trials, double confidence = 0.95);

// Newcombe's hybrid score interval for p1 − p2 = k1/n1 − k2/n2 from two
// independent samples ("Interval estimation for the difference between
// independent proportions", Statistics in Medicine 1998, method 10): with
// Wilson intervals (l_i, u_i),
//   [d − √((p1 − l1)² + (u2 − p2)²), d + √((u1 − p1)² + (p2 − l2)²)].
// Inside [−1, 1], defined at k = 0 and k = n.
absl::StatusOr<Interval> NewcombeDifference(size_t successes1, size_t trials1, size_t successes2,
                                            size_t trials2, double confidence = 0.95);

// MOVER ("method of variance estimates recovery", Zou & Donner 2008) for
// p1 − p2 from each estimate's own interval (l_i, u_i), the two independent:
//   [d − √((p1 − l1)² + (u2 − p2)²), d + √((u1 − p1)² + (p2 − l2)²)],
// cut to [−1, 1]. Newcombe's interval is MOVER with Wilson intervals.
Interval MoverDifference(double p1, Interval i1, double p2, Interval i2);

// Per-record successes of one or two splits, each value in [0, 1].
struct SuccessIntervals {
  Interval first;       // mean of `first`
  Interval second;      // mean of `second`
  Interval difference;  // mean(first) − mean(second)
};

// The rule for success rates whose records may score 0/1 (exact match) or
// a fraction (digit F1):
// - a split whose every value is 0 or 1 is a binomial count: Clopper–Pearson;
//   otherwise Student t on its values, cut to [0, 1] ([0, 1] with one record);
// - the difference is MOVER from each split's interval, Wilson's for a 0/1
//   split (so Newcombe's when both are) and the Student t one otherwise.
// Needs non-empty splits of values in [0, 1], 0 < confidence < 1.
absl::StatusOr<SuccessIntervals> SuccessRateIntervals(absl::Span<const double> first,
                                                      absl::Span<const double> second,
                                                      double confidence = 0.95);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_DIFFERENCE_INTERVALS_H_
