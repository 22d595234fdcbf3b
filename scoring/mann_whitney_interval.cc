#include "scoring/mann_whitney_interval.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "scoring/normal.h"

namespace memaudit::scoring {
namespace {

// The end of the interval between `inside` (where (θ̂−θ)² ≤ z²V(θ)) and
// `outside` (where it is not), by bisection.
double Boundary(double auc, uint64_t m, uint64_t n, double z, double inside, double outside) {
  const auto within = [&](double theta) {
    const double d = auc - theta;
    return d * d <= z * z * HanleyMcNeilVariance(theta, m, n);
  };
  if (within(outside)) return outside;
  for (int i = 0; i < 200 && std::abs(inside - outside) > 1e-12; ++i) {
    const double mid = 0.5 * (inside + outside);
    (within(mid) ? inside : outside) = mid;
  }
  return inside;
}

}  // namespace

double HanleyMcNeilVariance(double theta, uint64_t members, uint64_t nonmembers) {
  const double m = static_cast<double>(members), n = static_cast<double>(nonmembers);
  return theta * (1 - theta) *
         (1 + (m - 1) * (1 - theta) / (2 - theta) + (n - 1) * theta / (1 + theta)) / (m * n);
}

absl::StatusOr<Interval> MannWhitneyScoreInterval(double auc, uint64_t members, uint64_t nonmembers,
                                                  double confidence) {
  if (!(auc >= 0 && auc <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("auc: must be in [0, 1] (got ", auc, ")"));
  }
  if (members == 0 || nonmembers == 0) {
    return absl::InvalidArgumentError("members and nonmembers: at least 1 each");
  }
  if (!(confidence > 0 && confidence < 1)) {
    return absl::InvalidArgumentError("confidence: must be in (0, 1)");
  }
  const double z = NormalQuantile(0.5 + confidence / 2);
  return Interval{Boundary(auc, members, nonmembers, z, auc, 0.0),
                  Boundary(auc, members, nonmembers, z, auc, 1.0)};
}

}  // namespace memaudit::scoring
