#include "scoring/exposure.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "scoring/intervals.h"
#include "scoring/validation.h"

namespace memaudit::scoring {

absl::StatusOr<ExposureResult> ExactExposure(absl::Span<const double> space_px,
                                             size_t canary_index) {
  MEMAUDIT_RETURN_IF_ERROR(CheckNonEmpty("space_px", space_px.size()));
  MEMAUDIT_RETURN_IF_ERROR(CheckNoNaN("space_px", space_px));
  if (canary_index >= space_px.size()) {
    return absl::InvalidArgumentError(absl::StrCat("canary_index = ", canary_index,
                                                   "; must be < |space_px| = ", space_px.size()));
  }
  const double canary = space_px[canary_index];
  uint64_t rank = 0;
  for (double px : space_px) rank += px <= canary ? 1 : 0;  // includes the canary itself
  ExposureResult r;
  r.log2_space = std::log2(static_cast<double>(space_px.size()));
  r.rank = rank;
  r.exposure = r.log2_space - std::log2(static_cast<double>(rank));
  return r;
}

absl::StatusOr<ExposureResult> ExposureFromRank(double log2_space, uint64_t rank) {
  if (!(log2_space >= 0.0) || !std::isfinite(log2_space)) {
    return absl::InvalidArgumentError(
        absl::StrCat("log2_space = ", log2_space, "; must be finite and >= 0"));
  }
  const double log2_rank = std::log2(static_cast<double>(rank));
  // Small slack: log2_space is itself a rounded double.
  if (rank == 0 || log2_rank > log2_space + 1e-9) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank = ", rank, "; must satisfy 1 <= rank <= 2^log2_space"));
  }
  ExposureResult r;
  r.log2_space = log2_space;
  r.rank = rank;
  r.exposure = log2_space - log2_rank;
  return r;
}

absl::StatusOr<ExposureResult> SampledExposure(absl::Span<const double> reference_px,
                                               double secret_px) {
  MEMAUDIT_RETURN_IF_ERROR(CheckNonEmpty("reference_px", reference_px.size()));
  MEMAUDIT_RETURN_IF_ERROR(CheckNoNaN("reference_px", reference_px));
  if (std::isnan(secret_px)) return absl::InvalidArgumentError("secret_px is NaN");
  uint64_t at_most = 0;
  for (double px : reference_px) at_most += px <= secret_px ? 1 : 0;
  ExposureResult r;
  r.log2_space = std::log2(static_cast<double>(reference_px.size()));
  r.rank = at_most + 1;
  r.exposure = r.log2_space - std::log2(static_cast<double>(r.rank));
  r.lower_bound = at_most == 0;
  MEMAUDIT_ASSIGN_OR_RETURN(const Interval fraction, ClopperPearson(at_most, reference_px.size()));
  // At most the estimate: with every reference below the secret the
  // estimate, log2(|S| / (|S| + 1)), dips just under 0.
  r.low = std::min(std::max(0.0, -std::log2(fraction.hi)), r.exposure);
  r.high = fraction.lo > 0 ? -std::log2(fraction.lo) : std::numeric_limits<double>::infinity();
  return r;
}

absl::StatusOr<std::vector<double>> CalibrateByReferenceMean(absl::Span<const double> target_px,
                                                             const Matrix& reference_px) {
  MEMAUDIT_RETURN_IF_ERROR(reference_px.CheckShape("reference_px"));
  MEMAUDIT_RETURN_IF_ERROR(CheckNonEmpty("reference_px rows (models)", reference_px.rows));
  MEMAUDIT_RETURN_IF_ERROR(
      CheckSameLength("target_px", target_px.size(), "reference_px columns", reference_px.cols));
  MEMAUDIT_RETURN_IF_ERROR(CheckFinite("target_px", target_px));
  MEMAUDIT_RETURN_IF_ERROR(CheckFinite("reference_px.data", reference_px.data));
  std::vector<double> mean(reference_px.cols, 0.0);
  for (size_t r = 0; r < reference_px.rows; ++r) {
    for (size_t c = 0; c < reference_px.cols; ++c) mean[c] += reference_px.at(r, c);
  }
  std::vector<double> out(target_px.size());
  for (size_t c = 0; c < out.size(); ++c) {
    out[c] = target_px[c] - mean[c] / static_cast<double>(reference_px.rows);
  }
  return out;
}

absl::StatusOr<std::vector<ExposureResult>> CalibratedExactExposure(
    absl::Span<const double> target_space_px, const Matrix& reference_space_px,
    absl::Span<const uint64_t> canary_indices) {
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<double> calibrated,
                            CalibrateByReferenceMean(target_space_px, reference_space_px));
  MEMAUDIT_RETURN_IF_ERROR(CheckNonEmpty("target_space_px", calibrated.size()));
  // ExactExposure per canary, counted on one sorted copy: the number of
  // values <= x is upper_bound(x).
  std::vector<double> sorted = calibrated;
  std::sort(sorted.begin(), sorted.end());
  const double log2_space = std::log2(static_cast<double>(sorted.size()));
  std::vector<ExposureResult> out;
  out.reserve(canary_indices.size());
  for (size_t i = 0; i < canary_indices.size(); ++i) {
    if (canary_indices[i] >= calibrated.size()) {
      return absl::InvalidArgumentError(absl::StrCat("canary_indices[", i,
                                                     "] = ", canary_indices[i],
                                                     "; must be < |R| = ", calibrated.size()));
    }
    const double px = calibrated[canary_indices[i]];
    ExposureResult& r = out.emplace_back();
    r.log2_space = log2_space;
    r.rank =
        static_cast<uint64_t>(std::upper_bound(sorted.begin(), sorted.end(), px) - sorted.begin());
    r.exposure = log2_space - std::log2(static_cast<double>(r.rank));
  }
  return out;
}

}  // namespace memaudit::scoring
