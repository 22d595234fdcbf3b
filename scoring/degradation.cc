#include "scoring/degradation.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
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
                                               absl::Span<const double> p_classical,
                                               double confidence) {
  MEMAUDIT_RETURN_IF_ERROR(CheckNonEmpty("is_member", is_member.size()));
  MEMAUDIT_RETURN_IF_ERROR(
      CheckSameLength("is_member", is_member.size(), "p_attack", p_attack.size()));
  MEMAUDIT_RETURN_IF_ERROR(
      CheckSameLength("is_member", is_member.size(), "p_classical", p_classical.size()));
  MEMAUDIT_RETURN_IF_ERROR(CheckBinary("is_member", is_member));
  MEMAUDIT_RETURN_IF_ERROR(CheckUnit("p_attack", p_attack));
  MEMAUDIT_RETURN_IF_ERROR(CheckUnit("p_classical", p_classical));
  size_t count = 0;
  double rate = 0.0;
  std::vector<double> wins(is_member.size()), gains(is_member.size());
  for (size_t i = 0; i < is_member.size(); ++i) {
    const double pu = p_attack[i], pm = p_classical[i];
    if (is_member[i]) {
      wins[i] = pu > pm ? 1 : 0;
      gains[i] = pu - pm;
    } else {
      wins[i] = pu < pm ? 1 : 0;
      gains[i] = pm - pu;
    }
    count += static_cast<size_t>(wins[i]);
    rate += gains[i];
  }
  constexpr Interval kGainRange{-1.0, 1.0};
  MEMAUDIT_ASSIGN_OR_RETURN(const MeanSummary gain, SummarizeMean(gains, confidence, kGainRange));
  const double n = static_cast<double>(is_member.size());
  Degradation out;
  out.deg_count = static_cast<double>(count) / n;
  out.deg_rate = rate / n;
  MEMAUDIT_ASSIGN_OR_RETURN(out.deg_count_interval,
                            ClopperPearson(count, is_member.size(), confidence));
  // SummarizeMean's one-value interval is the value itself: one row says
  // nothing about the spread.
  out.deg_rate_interval = gain.n > 1 ? gain.interval : kGainRange;
  out.wins = std::move(wins);
  out.gains = std::move(gains);
  return out;
}

}  // namespace memaudit::scoring
