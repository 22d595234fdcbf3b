#include "scoring/degradation.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scoring/validation.h"

namespace memaudit::scoring {
namespace {

absl::Status CheckUnit(absl::string_view name, absl::Span<const double> p) {
  for (size_t i = 0; i < p.size(); ++i) {
    if (!(p[i] >= 0.0 && p[i] <= 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "[", i, "] = ", p[i], "; confidences must lie in [0, 1]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Degradation> ComputeDegradation(absl::Span<const uint8_t> is_member,
                                               absl::Span<const double> p_attack,
                                               absl::Span<const double> p_classical) {
  MEMAUDIT_RETURN_IF_ERROR(CheckNonEmpty("is_member", is_member.size()));
  MEMAUDIT_RETURN_IF_ERROR(
      CheckSameLength("is_member", is_member.size(), "p_attack", p_attack.size()));
  MEMAUDIT_RETURN_IF_ERROR(
      CheckSameLength("is_member", is_member.size(), "p_classical", p_classical.size()));
  MEMAUDIT_RETURN_IF_ERROR(CheckBinary("is_member", is_member));
  MEMAUDIT_RETURN_IF_ERROR(CheckUnit("p_attack", p_attack));
  MEMAUDIT_RETURN_IF_ERROR(CheckUnit("p_classical", p_classical));
  double count = 0.0, rate = 0.0;
  for (size_t i = 0; i < is_member.size(); ++i) {
    const double pu = p_attack[i], pm = p_classical[i];
    if (is_member[i]) {
      count += pu > pm ? 1.0 : 0.0;
      rate += pu - pm;
    } else {
      count += pu < pm ? 1.0 : 0.0;
      rate += pm - pu;
    }
  }
  const double n = static_cast<double>(is_member.size());
  return Degradation{count / n, rate / n};
}

}  // namespace memaudit::scoring
