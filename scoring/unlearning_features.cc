#include "scoring/unlearning_features.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "scoring/validation.h"

namespace memaudit::scoring {

absl::StatusOr<std::vector<double>> UnlearningFeatures(absl::Span<const double> p_original,
                                                       absl::Span<const double> p_unlearned,
                                                       UnlearningFeature kind) {
  MEMAUDIT_RETURN_IF_ERROR(CheckNonEmpty("p_original", p_original.size()));
  MEMAUDIT_RETURN_IF_ERROR(
      CheckSameLength("p_original", p_original.size(), "p_unlearned", p_unlearned.size()));
  MEMAUDIT_RETURN_IF_ERROR(CheckFinite("p_original", p_original));
  MEMAUDIT_RETURN_IF_ERROR(CheckFinite("p_unlearned", p_unlearned));
  const size_t n = p_original.size();
  std::vector<double> po(p_original.begin(), p_original.end());
  std::vector<double> pu(p_unlearned.begin(), p_unlearned.end());
  if (kind == UnlearningFeature::kSortedConcat || kind == UnlearningFeature::kSortedDiff) {
    std::vector<size_t> perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    std::stable_sort(perm.begin(), perm.end(),
                     [&](size_t a, size_t b) { return p_original[a] > p_original[b]; });
    for (size_t i = 0; i < n; ++i) {
      po[i] = p_original[perm[i]];
      pu[i] = p_unlearned[perm[i]];
    }
  }
  std::vector<double> out;
  switch (kind) {
    case UnlearningFeature::kDirectConcat:
    case UnlearningFeature::kSortedConcat:
      out = po;
      out.insert(out.end(), pu.begin(), pu.end());
      break;
    case UnlearningFeature::kDirectDiff:
    case UnlearningFeature::kSortedDiff:
      out.resize(n);
      for (size_t i = 0; i < n; ++i) out[i] = po[i] - pu[i];
      break;
    case UnlearningFeature::kEucDist: {
      double ss = 0.0;
      for (size_t i = 0; i < n; ++i) ss += (po[i] - pu[i]) * (po[i] - pu[i]);
      out = {std::sqrt(ss)};
      break;
    }
    case UnlearningFeature::kOriginalOnly:
      out = po;
      break;
  }
  return out;
}

absl::StatusOr<Matrix> UnlearningFeatureMatrix(const Matrix& p_original, const Matrix& p_unlearned,
                                               UnlearningFeature kind) {
  MEMAUDIT_RETURN_IF_ERROR(p_original.CheckShape("p_original"));
  MEMAUDIT_RETURN_IF_ERROR(p_unlearned.CheckShape("p_unlearned"));
  if (p_original.rows != p_unlearned.rows || p_original.cols != p_unlearned.cols) {
    return absl::InvalidArgumentError("p_original and p_unlearned must have the same shape");
  }
  MEMAUDIT_RETURN_IF_ERROR(CheckNonEmpty("p_original rows (samples)", p_original.rows));
  Matrix out;
  for (size_t r = 0; r < p_original.rows; ++r) {
    auto row = UnlearningFeatures(absl::MakeConstSpan(p_original.row(r), p_original.cols),
                                  absl::MakeConstSpan(p_unlearned.row(r), p_unlearned.cols), kind);
    if (!row.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("row ", r, ": ", row.status().message()));
    }
    if (r == 0) out = Matrix(p_original.rows, row->size());
    std::copy(row->begin(), row->end(), out.row(r));
  }
  return out;
}

}  // namespace memaudit::scoring
