// Canary exposure (Carlini et al., "The Secret Sharer"). Px is the canary's
// log-perplexity under the model: LOWER Px = more likely, so a canary that
// outranks every candidate has rank 1 and the highest exposure.
#ifndef MEMAUDIT_SCORING_EXPOSURE_H_
#define MEMAUDIT_SCORING_EXPOSURE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scoring/matrix.h"

namespace memaudit::scoring {

struct ExposureResult {
  double exposure = 0.0;    // log2|space| − log2 rank
  double log2_space = 0.0;  // log2|R| (exact) or log2|S| (sampled); always report it
  uint64_t rank = 0;        // >= 1
  // Sampled only: no reference had Px <= the secret's, so the true exposure
  // is at least `exposure` (= log2|S|): report it as "≥ log2|S|".
  bool lower_bound = false;
  // Sampled only: 95% interval of the exposure S estimates, -log2 of the
  // fraction of R at most as likely as the secret, from the Clopper-Pearson
  // interval of that fraction (|{s <= secret}| of |S|). `high` is +infinity
  // when no reference was as likely: nothing bounds it but log2|R|.
  double low = 0.0;
  double high = 0.0;
};

// Exact exposure over the full candidate space R, given as the Px of every
// candidate; the canary is space_px[canary_index] and counts itself.
// rank = |{r' in R : Px(r') <= Px(canary)}| (ties count against the canary).
absl::StatusOr<ExposureResult> ExactExposure(absl::Span<const double> space_px,
                                             size_t canary_index);

// Exposure from a rank counted elsewhere (e.g. the engine's branch-and-bound
// over a trie too large to enumerate). log2_space = log2|R| may be large;
// requires 1 <= rank <= 2^log2_space.
absl::StatusOr<ExposureResult> ExposureFromRank(double log2_space, uint64_t rank);

// Sampled exposure over a reference sample S that excludes the secret (and
// any inserted canary): rank = |{s in S : Px(s) <= Px(secret)}| + 1 and
// exposure = log2|S| − log2 rank, so it lies in [log2|S| − log2(|S|+1),
// log2|S|]; lower_bound is set when rank = 1.
absl::StatusOr<ExposureResult> SampledExposure(absl::Span<const double> reference_px,
                                               double secret_px);

// Reference calibration (Truth Serum style): subtract, per candidate, the mean
// Px over R reference models trained without canaries. reference_px is
// R models × C candidates; target_px has C entries. Apply it to every
// candidate (canaries and references alike) before ranking.
absl::StatusOr<std::vector<double>> CalibrateByReferenceMean(absl::Span<const double> target_px,
                                                             const Matrix& reference_px);

// Exact calibrated exposure: CalibrateByReferenceMean applied to every
// candidate of R (target_space_px has |R| entries, reference_space_px is
// R models x |R|, both in one candidate order), then ExactExposure of each
// canary among the calibrated values: with Px' = Px - mean reference Px,
// rank = |{r in R : Px'(r) <= Px'(canary)}| (the canary counts itself, ties
// count against it) and exposure = log2|R| - log2 rank. canary_indices are
// the canaries' positions in the candidate order; one result per canary.
absl::StatusOr<std::vector<ExposureResult>> CalibratedExactExposure(
    absl::Span<const double> target_space_px, const Matrix& reference_space_px,
    absl::Span<const uint64_t> canary_indices);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_EXPOSURE_H_
