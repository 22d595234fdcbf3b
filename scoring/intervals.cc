#include "scoring/intervals.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "boost/math/distributions/beta.hpp"
#include "boost/math/distributions/students_t.hpp"
#include "common/base/status_macros.h"
#include "scoring/validation.h"

namespace memaudit::scoring {

absl::StatusOr<Interval> ClopperPearson(size_t successes, size_t trials, double confidence) {
  MEMAUDIT_RETURN_IF_ERROR(CheckConfidence(confidence));
  MEMAUDIT_RETURN_IF_ERROR(CheckCount(successes, trials));
  const double alpha = 1.0 - confidence;
  const double k = static_cast<double>(successes), n = static_cast<double>(trials);
  Interval ci{0.0, 1.0};
  if (successes > 0) {
    ci.lo = boost::math::quantile(boost::math::beta_distribution<double>(k, n - k + 1), alpha / 2);
  }
  if (successes < trials) {
    ci.hi = boost::math::quantile(boost::math::beta_distribution<double>(k + 1, n - k),
                                  1.0 - alpha / 2);
  }
  return ci;
}

absl::StatusOr<MeanSummary> SummarizeMean(absl::Span<const double> values, double confidence,
                                          Interval range) {
  MEMAUDIT_RETURN_IF_ERROR(CheckConfidence(confidence));
  MEMAUDIT_RETURN_IF_ERROR(CheckNonEmpty("values", values.size()));
  MEMAUDIT_RETURN_IF_ERROR(CheckFinite("values", values));
  MeanSummary out;
  out.n = values.size();
  const double n = static_cast<double>(out.n);
  for (double v : values) out.mean += v;
  out.mean /= n;
  out.interval = {out.mean, out.mean};
  out.rerun = out.interval;
  if (out.n == 1) return out;
  double ss = 0.0;
  for (double v : values) ss += (v - out.mean) * (v - out.mean);
  out.stddev = std::sqrt(ss / (n - 1.0));
  const double t = boost::math::quantile(boost::math::students_t_distribution<double>(n - 1.0),
                                         0.5 + confidence / 2.0);
  const double half = t * out.stddev / std::sqrt(n);
  out.interval = {std::max(range.lo, out.mean - half), std::min(range.hi, out.mean + half)};
  const double rerun_half = half * std::sqrt(2.0);
  out.rerun = {std::max(range.lo, out.mean - rerun_half),
               std::min(range.hi, out.mean + rerun_half)};
  return out;
}

double SampleStandardDeviation(absl::Span<const double> values) {
  double mean = 0;
  for (double x : values) mean += x;
  mean /= static_cast<double>(values.size());
  double ss = 0;
  for (double x : values) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(values.size() - 1));
}

}  // namespace memaudit::scoring
