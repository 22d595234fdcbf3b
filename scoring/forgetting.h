// Forgetting curves ("Measuring Forgetting of Memorized Training Examples"):
// at each evaluation point, membership inference separates the injected arm
// (members) from the baseline arm (non-members) of each trial; the per-trial
// metrics are then averaged across trials.
#ifndef MEMAUDIT_SCORING_FORGETTING_H_
#define MEMAUDIT_SCORING_FORGETTING_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scoring/intervals.h"

namespace memaudit::scoring {

// Scores (higher = member, e.g. CheckpointCalibratedScores) of the injected
// examples under the injected arm and under the baseline arm of one trial.
struct TrialScores {
  std::vector<double> injected;
  std::vector<double> baseline;
};

struct ForgettingEvalPoint {
  int64_t steps_since_seen = 0;  // key: steps since the examples were last seen
  std::vector<TrialScores> trials;
};

struct ForgettingOptions {
  double fpr_target = 0.1;  // the paper's "precision at FPR 10%"
  double confidence = 0.95;
};

struct TrialMetrics {
  double accuracy = 0.0;  // balanced accuracy, max over thresholds
  double auc = 0.0;
  double tpr = 0.0;  // at the largest-TPR threshold with FPR <= fpr_target
  double fpr = 0.0;
  double threshold = 0.0;
  double precision = 0.0;  // at that threshold; 0 when nothing is predicted
  bool precision_defined = false;
  double epsilon = 0.0;          // ln(TPR/FPR); +inf when FPR = 0 < TPR
  double epsilon_clamped = 0.0;  // FPR clamped to 1/|baseline| when 0
  bool epsilon_fpr_zero = false;
};

struct ForgettingCurvePoint {
  int64_t steps_since_seen = 0;
  std::vector<TrialMetrics> trials;
  // Mean across trials with a Student-t interval and the prediction interval
  // for another run's mean (see SummarizeMean). Each trial draws its own D,
  // Dp, label flips, init and order, as a re-run with another seed does, so
  // the trials' spread is a re-run's and needs nothing added.
  MeanSummary accuracy, auc, tpr, precision;
  MeanSummary epsilon;  // of epsilon_clamped, so one FPR = 0 trial stays finite
  size_t epsilon_clamped_trials = 0;
  size_t precision_undefined_trials = 0;
  // Trials whose non-members (baseline arm) all share one score: the attack
  // cannot rank them, so their accuracy, AUC and FPR measure ties. Every
  // trial at k = 0 of a checkpoint-calibrated attack, where the baseline arm
  // is the checkpoint and every calibrated score is exactly 0.
  size_t tied_baseline_trials = 0;
};

absl::StatusOr<TrialMetrics> ForgettingTrialMetrics(const TrialScores& trial,
                                                    double fpr_target = 0.1);

// One curve point per evaluation point, sorted by steps_since_seen (keys
// must be distinct; every point needs >= 1 trial, every arm >= 1 score).
absl::StatusOr<std::vector<ForgettingCurvePoint>> ForgettingCurve(
    absl::Span<const ForgettingEvalPoint> points, const ForgettingOptions& options = {});

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_FORGETTING_H_
