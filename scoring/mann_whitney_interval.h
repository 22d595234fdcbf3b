// A confidence interval for an AUC (the Mann–Whitney parameter) of m
// independent members and n independent non-members that does not collapse
// at 0 or 1: the score-type interval on Hanley and McNeil's variance ("The
// meaning and use of the area under a receiver operating characteristic
// (ROC) curve", Radiology 1982), as Newcombe proposes for this parameter
// ("Confidence intervals for an effect size measure based on the
// Mann–Whitney statistic. Part 2", Statistics in Medicine 2006).
//
// V(θ) = θ(1−θ)·[1 + (m−1)(1−θ)/(2−θ) + (n−1)θ/(1+θ)] / (m·n), Hanley and
// McNeil's variance with Q1 = θ/(2−θ) and Q2 = 2θ²/(1+θ) written for the
// AUC θ itself; the interval is every θ in [0, 1] with (θ̂ − θ)² ≤ z²·V(θ).
// At θ̂ = 1 the lower end is the θ whose own spread reaches 1, so a handful
// of perfectly separated sequences reads as "at least this", not as 1.
#ifndef MEMAUDIT_SCORING_MANN_WHITNEY_INTERVAL_H_
#define MEMAUDIT_SCORING_MANN_WHITNEY_INTERVAL_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "scoring/intervals.h"

namespace memaudit::scoring {

// Hanley and McNeil's variance of the AUC at θ (above).
double HanleyMcNeilVariance(double theta, uint64_t members, uint64_t nonmembers);

// Needs 0 ≤ auc ≤ 1, members and nonmembers ≥ 1, 0 < confidence < 1. The
// ends are found by bisection to 1e-12 (deterministic).
absl::StatusOr<Interval> MannWhitneyScoreInterval(double auc, uint64_t members, uint64_t nonmembers,
                                                  double confidence = 0.95);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_MANN_WHITNEY_INTERVAL_H_
