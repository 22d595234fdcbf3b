#include "scoring/validation.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace memaudit::scoring {

absl::Status CheckNoNaN(absl::string_view name, absl::Span<const double> values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) {
      return absl::InvalidArgumentError(absl::StrCat(name, "[", i, "] is NaN; NaN is not allowed"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckFinite(absl::string_view name, absl::Span<const double> values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "[", i, "] = ", values[i], "; values must be finite"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckBinary(absl::string_view name, absl::Span<const uint8_t> flags) {
  for (size_t i = 0; i < flags.size(); ++i) {
    if (flags[i] > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "[", i, "] = ", int{flags[i]}, "; entries must be 0 or 1"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckNonEmpty(absl::string_view name, size_t size) {
  if (size == 0) return absl::InvalidArgumentError(absl::StrCat(name, " must not be empty"));
  return absl::OkStatus();
}

absl::Status CheckSameLength(absl::string_view name_a, size_t size_a, absl::string_view name_b,
                             size_t size_b) {
  if (size_a != size_b) {
    return absl::InvalidArgumentError(absl::StrCat(name_a, " (size ", size_a, ") and ", name_b,
                                                   " (size ", size_b, ") must have equal length"));
  }
  return absl::OkStatus();
}

absl::Status CheckProbability(absl::string_view name, double p) {
  if (!(p >= 0.0 && p <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(name, " = ", p, "; must lie in [0, 1]"));
  }
  return absl::OkStatus();
}

absl::Status CheckConfidence(double confidence) {
  if (!(confidence > 0.0 && confidence < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("confidence = ", confidence, "; must lie strictly between 0 and 1"));
  }
  return absl::OkStatus();
}

absl::Status CheckCount(size_t successes, size_t trials) {
  if (trials == 0) return absl::InvalidArgumentError("trials must be >= 1");
  if (successes > trials) {
    return absl::InvalidArgumentError(
        absl::StrCat("successes = ", successes, " must be <= trials = ", trials));
  }
  return absl::OkStatus();
}

absl::Status CheckLabeledScores(absl::Span<const double> scores,
                                absl::Span<const uint8_t> is_member) {
  MEMAUDIT_RETURN_IF_ERROR(CheckSameLength("scores", scores.size(), "is_member", is_member.size()));
  MEMAUDIT_RETURN_IF_ERROR(CheckNoNaN("scores", scores));
  MEMAUDIT_RETURN_IF_ERROR(CheckBinary("is_member", is_member));
  size_t members = 0;
  for (uint8_t m : is_member) members += m;
  if (members == 0) {
    return absl::InvalidArgumentError("is_member must contain at least one member (1)");
  }
  if (members == is_member.size()) {
    return absl::InvalidArgumentError("is_member must contain at least one non-member (0)");
  }
  return absl::OkStatus();
}

}  // namespace memaudit::scoring
