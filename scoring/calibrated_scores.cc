#include "scoring/calibrated_scores.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "scoring/validation.h"

namespace memaudit::scoring {
namespace {

absl::Status CheckProbabilities(absl::string_view name, absl::Span<const double> p) {
  for (size_t i = 0; i < p.size(); ++i) {
    if (!(p[i] >= 0.0 && p[i] <= 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "[", i, "] = ", p[i], "; probabilities must lie in [0, 1]"));
    }
  }
  return absl::OkStatus();
}

// a − b element-wise, after the shared checks; `sign` = −1 negates.
absl::StatusOr<std::vector<double>> Difference(absl::string_view name_a, absl::Span<const double> a,
                                               absl::string_view name_b, absl::Span<const double> b,
                                               double sign) {
  MEMAUDIT_RETURN_IF_ERROR(CheckSameLength(name_a, a.size(), name_b, b.size()));
  MEMAUDIT_RETURN_IF_ERROR(CheckFinite(name_a, a));
  MEMAUDIT_RETURN_IF_ERROR(CheckFinite(name_b, b));
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = sign * (a[i] - b[i]);
  return out;
}

}  // namespace

absl::StatusOr<double> LogitScaledConfidence(absl::Span<const double> logits, size_t label) {
  if (logits.size() < 2) {
    return absl::InvalidArgumentError("logits must have >= 2 classes for logit scaling");
  }
  if (label >= logits.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("label = ", label, "; must be < number of classes ", logits.size()));
  }
  MEMAUDIT_RETURN_IF_ERROR(CheckFinite("logits", logits));
  double max_other = -std::numeric_limits<double>::infinity();
  for (size_t j = 0; j < logits.size(); ++j) {
    if (j != label) max_other = std::max(max_other, logits[j]);
  }
  double sum = 0.0;
  for (size_t j = 0; j < logits.size(); ++j) {
    if (j != label) sum += std::exp(logits[j] - max_other);
  }
  return logits[label] - (max_other + std::log(sum));
}

absl::StatusOr<std::vector<double>> CheckpointCalibratedScores(absl::Span<const double> phi_t,
                                                               absl::Span<const double> phi_ckpt) {
  return Difference("phi_t", phi_t, "phi_ckpt", phi_ckpt, 1.0);
}

absl::StatusOr<std::vector<double>> CalibratedLossScores(absl::Span<const double> loss_t,
                                                         absl::Span<const double> loss_ckpt) {
  return Difference("loss_t", loss_t, "loss_ckpt", loss_ckpt, -1.0);
}

absl::StatusOr<std::vector<double>> ConfidenceScores(absl::Span<const double> p_true) {
  MEMAUDIT_RETURN_IF_ERROR(CheckProbabilities("p_true", p_true));
  return std::vector<double>(p_true.begin(), p_true.end());
}

absl::StatusOr<std::vector<double>> CalibratedConfidenceScores(
    absl::Span<const double> p_true_t, absl::Span<const double> p_true_ckpt) {
  MEMAUDIT_RETURN_IF_ERROR(CheckProbabilities("p_true_t", p_true_t));
  MEMAUDIT_RETURN_IF_ERROR(CheckProbabilities("p_true_ckpt", p_true_ckpt));
  return Difference("p_true_t", p_true_t, "p_true_ckpt", p_true_ckpt, 1.0);
}

}  // namespace memaudit::scoring
