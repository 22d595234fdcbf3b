#include "scoring/difference_intervals.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "boost/math/distributions/normal.hpp"
#include "common/base/status_macros.h"
#include "scoring/validation.h"

namespace memaudit::scoring {
namespace {

absl::Status CheckUnitValues(absl::string_view name, absl::Span<const double> values) {
  MEMAUDIT_RETURN_IF_ERROR(CheckNonEmpty(name, values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    if (!(values[i] >= 0.0 && values[i] <= 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "[", i, "] = ", values[i], "; successes must lie in [0, 1]"));
    }
  }
  return absl::OkStatus();
}

double Mean(absl::Span<const double> v) {
  double sum = 0.0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// The number of ones when every value is 0 or 1, else -1.
long BinaryCount(absl::Span<const double> v) {
  long ones = 0;
  for (double x : v) {
    if (x != 0.0 && x != 1.0) return -1;
    ones += x == 1.0;
  }
  return ones;
}

}  // namespace

absl::StatusOr<Interval> WilsonScore(size_t successes, size_t trials, double confidence) {
  MEMAUDIT_RETURN_IF_ERROR(CheckConfidence(confidence));
  MEMAUDIT_RETURN_IF_ERROR(CheckCount(successes, trials));
  const double z =
      boost::math::quantile(boost::math::normal_distribution<double>(), 0.5 + confidence / 2);
  const double n = static_cast<double>(trials);
  const double p = static_cast<double>(successes) / n;
  const double z2n = z * z / n;
  const double center = (p + z2n / 2) / (1 + z2n);
  const double half = z / (1 + z2n) * std::sqrt(p * (1 - p) / n + z2n / (4 * n));
  // Exact ends at k = 0 and k = n, where rounding could leave them a hair off.
  return Interval{successes == 0 ? 0.0 : std::max(0.0, center - half),
                  successes == trials ? 1.0 : std::min(1.0, center + half)};
}

Interval MoverDifference(double p1, Interval i1, double p2, Interval i2) {
  const double d = p1 - p2;
  return Interval{std::max(-1.0, d - std::hypot(p1 - i1.lo, i2.hi - p2)),
                  std::min(1.0, d + std::hypot(i1.hi - p1, p2 - i2.lo))};
}

absl::StatusOr<Interval> NewcombeDifference(size_t successes1, size_t trials1, size_t successes2,
                                            size_t trials2, double confidence) {
  MEMAUDIT_ASSIGN_OR_RETURN(const Interval w1, WilsonScore(successes1, trials1, confidence));
  MEMAUDIT_ASSIGN_OR_RETURN(const Interval w2, WilsonScore(successes2, trials2, confidence));
  return MoverDifference(static_cast<double>(successes1) / static_cast<double>(trials1), w1,
                         static_cast<double>(successes2) / static_cast<double>(trials2), w2);
}

absl::StatusOr<SuccessIntervals> SuccessRateIntervals(absl::Span<const double> first,
                                                      absl::Span<const double> second,
                                                      double confidence) {
  MEMAUDIT_RETURN_IF_ERROR(CheckConfidence(confidence));
  MEMAUDIT_RETURN_IF_ERROR(CheckUnitValues("first", first));
  MEMAUDIT_RETURN_IF_ERROR(CheckUnitValues("second", second));
  // One split's reported interval, and the one MOVER combines (Wilson's
  // for a count, as in Newcombe's interval).
  struct Split {
    double mean = 0;
    Interval reported, combined;
  };
  auto one = [&](absl::Span<const double> v) -> absl::StatusOr<Split> {
    Split out;
    out.mean = Mean(v);
    const long ones = BinaryCount(v);
    if (ones >= 0) {
      const size_t k = static_cast<size_t>(ones);
      MEMAUDIT_ASSIGN_OR_RETURN(out.reported, ClopperPearson(k, v.size(), confidence));
      MEMAUDIT_ASSIGN_OR_RETURN(out.combined, WilsonScore(k, v.size(), confidence));
      return out;
    }
    out.reported = kUnitInterval;  // one fractional record: no spread to go on
    if (v.size() >= 2) {
      MEMAUDIT_ASSIGN_OR_RETURN(const MeanSummary m, SummarizeMean(v, confidence, kUnitInterval));
      out.reported = m.interval;
    }
    out.combined = out.reported;
    return out;
  };
  MEMAUDIT_ASSIGN_OR_RETURN(const Split a, one(first));
  MEMAUDIT_ASSIGN_OR_RETURN(const Split b, one(second));
  SuccessIntervals out;
  out.first = a.reported;
  out.second = b.reported;
  out.difference = MoverDifference(a.mean, a.combined, b.mean, b.combined);
  return out;
}

}  // namespace memaudit::scoring
