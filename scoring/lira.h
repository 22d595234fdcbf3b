// LiRA (Carlini et al., "Membership Inference Attacks From First
// Principles"), evaluated leave-one-out over N models trained on random
// halves: each model in turn is the target and all the others are its
// reference (shadow) models.
#ifndef MEMAUDIT_SCORING_LIRA_H_
#define MEMAUDIT_SCORING_LIRA_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scoring/matrix.h"

namespace memaudit::scoring {

struct LiraOptions {
  // Online: log N(φ; μ_in, σ_in) − log N(φ; μ_out, σ_out).
  // Offline: log Φ((φ − μ_out) / σ_out), one-sided against OUT.
  bool online = true;
  // Offline only: score −log N(φ; μ_out, σ_out) instead, the density test of
  // the LiRA reference code (`-scipy.stats.norm.logpdf(φ, μ_out, σ_out)`):
  // φ far from OUT on either side scores as a member. For comparison with
  // published numbers; the one-sided test is the paper's.
  bool two_sided = false;
  // Replace per-example σ by one σ_in and one σ_out per target, each the
  // population std of the residuals (value − that example's centre) pooled
  // over all examples. (The reference code instead pools raw values and
  // reuses the IN std for OUT; see docs/scoring.md.)
  bool fixed_variance = false;
  // Instead of fixed_variance: one σ per target for IN and OUT alike, the
  // population std of its references' raw IN values pooled over every
  // example — the LiRA reference code's fix_variance (`np.std(dat_in)` for
  // both sets), for comparison with published numbers.
  bool reference_variance = false;
  enum class Center { kMedian, kMean };
  // kMedian matches the reference code; σ is always the population std
  // (ddof 0) about the mean, as np.std.
  Center center = Center::kMedian;
};

// Every σ is floored at this so a constant reference set yields finite scores.
inline constexpr double kLiraSigmaFloor = 1e-6;

struct LiraDiagnostics {
  // (target, example) pairs scored 0 because the reference set they need was
  // empty: IN or OUT for online, OUT for offline.
  size_t skipped = 0;
  // With fixed_variance: the pooled σ per target, in target order (one entry
  // for LiraScores). Empty otherwise.
  std::vector<double> pooled_sigma_in;
  std::vector<double> pooled_sigma_out;
};

// phi: N models × M examples of logit-scaled confidences (finite).
// keep: N × M, 1 = example in that model's training set.
// Returns M scores for model `target` (higher = more likely member) using
// every other model as a reference. Direct computation, O(M · N log N); the
// reference implementation for LiraScoresAllTargets. `diagnostics` may be null.
absl::StatusOr<std::vector<double>> LiraScores(const Matrix& phi, const KeepMatrix& keep,
                                               size_t target, const LiraOptions& options = {},
                                               LiraDiagnostics* diagnostics = nullptr);

// Scores for every target at once: an N × M row-major vector, row = target.
// Sorts each example's N values once and derives every leave-one-out
// median / mean / std by index arithmetic and subtracted sums:
// O(M · N log N) in total instead of O(M · N² log N).
absl::StatusOr<std::vector<double>> LiraScoresAllTargets(const Matrix& phi, const KeepMatrix& keep,
                                                         const LiraOptions& options = {},
                                                         LiraDiagnostics* diagnostics = nullptr);

// The loss baseline: score = −loss (lower loss ⇒ member). Rejects NaN.
absl::StatusOr<std::vector<double>> LossScores(absl::Span<const double> losses);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_LIRA_H_
