// Per-example scores for forgetting audits, calibrated against the shared
// checkpoint θ_ckpt taken just before injection ("Measuring Forgetting"):
// subtracting the checkpoint's signal removes per-example hardness.
#ifndef MEMAUDIT_SCORING_CALIBRATED_SCORES_H_
#define MEMAUDIT_SCORING_CALIBRATED_SCORES_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace memaudit::scoring {

// φ = z_y − logsumexp_{j≠y} z_j = log(p_y / (1 − p_y)), computed stably in
// double. Needs >= 2 finite logits and label < logits.size().
absl::StatusOr<double> LogitScaledConfidence(absl::Span<const double> logits, size_t label);

// s = φ_t − φ_ckpt (the paper's attack). Equal lengths, finite values.
absl::StatusOr<std::vector<double>> CheckpointCalibratedScores(absl::Span<const double> phi_t,
                                                               absl::Span<const double> phi_ckpt);
// s = −(ℓ_t − ℓ_ckpt): a loss that fell since the checkpoint ⇒ member.
absl::StatusOr<std::vector<double>> CalibratedLossScores(absl::Span<const double> loss_t,
                                                         absl::Span<const double> loss_ckpt);
// Confidence attack: s = p_y, the probability of the true label, in [0, 1].
absl::StatusOr<std::vector<double>> ConfidenceScores(absl::Span<const double> p_true);
// Its calibrated form s = p_y,t − p_y,ckpt.
absl::StatusOr<std::vector<double>> CalibratedConfidenceScores(
    absl::Span<const double> p_true_t, absl::Span<const double> p_true_ckpt);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_CALIBRATED_SCORES_H_
