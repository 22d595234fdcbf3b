#include "scoring/one_run_audit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "boost/math/distributions/binomial.hpp"
#include "boost/math/distributions/normal.hpp"
#include "common/base/status_macros.h"
#include "scoring/normal.h"
#include "scoring/validation.h"

namespace memaudit::scoring {
namespace {

// GdpEpsilon's bisection width.
constexpr double kGdpEpsilonTolerance = 1e-10;

// max_{i = 1..v} (t_{v−1} + … + t_{v−i}) / i, t_j the Binomial(r, q) pmf,
// 1 <= v <= r, 0 < q < 1 (odds = q / (1 − q) = e^ε).
//
// The terms come from the ratio t_{j+1} / t_j = (r − j)/(j + 1) · odds,
// started at j0 = min(v − 1, mode): the largest term of the range, so a term
// that underflows is negligible next to one that does not (starting at
// t_{v−1}, which underflows far above the mode, would lose them all).
// Below j0 the terms do not increase, and once the next term is at most the
// running mean, every later mean is smaller: the loop stops there.
double MaxMeanOfLowerTerms(uint64_t r, uint64_t v, double q, double odds) {
  const boost::math::binomial_distribution<double> bin(static_cast<double>(r), q);
  const uint64_t top = v - 1;
  const double mode = std::floor((static_cast<double>(r) + 1.0) * q);
  const uint64_t j0 = std::min<uint64_t>(
      top, mode >= static_cast<double>(r) ? r : static_cast<uint64_t>(std::max(0.0, mode)));
  // upper[k] = t_{j0 + k}, k = 0 .. top − j0.
  std::vector<double> upper;
  upper.reserve(top - j0 + 1);
  double t = boost::math::pdf(bin, static_cast<double>(j0));
  upper.push_back(t);
  for (uint64_t j = j0; j < top; ++j) {
    t *= static_cast<double>(r - j) / static_cast<double>(j + 1) * odds;
    upper.push_back(t);
  }
  double sum = 0.0, best = 0.0;
  double count = 0.0;  // i
  for (size_t k = upper.size(); k-- > 0;) {
    sum += upper[k];
    count += 1.0;
    best = std::max(best, sum / count);
  }
  t = upper.front();
  for (uint64_t j = j0; j > 0; --j) {
    // t_{j−1} / t_j; it grows with j, so once <= 1 it stays <= 1 below.
    const double ratio = static_cast<double>(j) / (static_cast<double>(r - j + 1) * odds);
    t *= ratio;
    if (ratio <= 1.0 && t <= sum / count) break;
    sum += t;
    count += 1.0;
    best = std::max(best, sum / count);
  }
  return best;
}

// g(x) = Φ(Φ⁻¹(x) − μ), the inverse of the μ-GDP blow-up.
double GdpBlowUpInverse(double x, double mu) {
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  if (mu == 0.0) return x;
  const boost::math::normal_distribution<double> normal;
  return boost::math::cdf(normal, boost::math::quantile(normal, x) - mu);
}

// Largest x in [0, cap] with rejected(x), given rejected is monotone
// (true below some point, false above); 0 when rejected(0) is false. The
// upper end doubles from 1, then bisection to `tolerance`; returns the low
// (rejected) end.
template <typename Rejected>
double LargestRejected(Rejected rejected, double cap, double tolerance) {
  if (!rejected(0.0)) return 0.0;
  double lo = 0.0, hi = std::min(1.0, cap);
  while (rejected(hi)) {
    lo = hi;
    if (hi >= cap) return cap;
    hi = std::min(2.0 * hi, cap);
  }
  while (hi - lo > tolerance) {
    const double mid = lo + (hi - lo) / 2.0;
    (rejected(mid) ? lo : hi) = mid;
  }
  return lo;
}

// log(Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2)), μ > 0: the δ that μ-GDP gives at ε.
double LogGdpDelta(double epsilon, double mu) {
  const double log_a = LogNormalCdf(-epsilon / mu + mu / 2.0);
  const double log_b = epsilon + LogNormalCdf(-epsilon / mu - mu / 2.0);
  if (log_b >= log_a) return -std::numeric_limits<double>::infinity();  // rounding only
  return log_a + std::log1p(-std::exp(log_b - log_a));
}

absl::Status CheckBudget(size_t i, const GuessBudget& b, uint64_t m) {
  const uint64_t guesses = uint64_t{b.positives} + uint64_t{b.negatives};
  if (guesses == 0 || guesses > m) {
    return absl::InvalidArgumentError(
        absl::StrCat("budgets[", i, "] = {positives: ", b.positives, ", negatives: ", b.negatives,
                     "}; positives + negatives must lie in [1, m] with m = ", m, " canaries"));
  }
  return absl::OkStatus();
}

}  // namespace

double OneRunPValue(uint64_t m, uint64_t r, uint64_t v, double epsilon, double delta) {
  if (v == 0) return 1.0;
  const double q = 1.0 / (1.0 + std::exp(-epsilon));
  // Binomial(r, 1) is r: β = 1. The true β is >= 1 − r·e^{−ε}, so 1 errs high.
  if (q >= 1.0) return 1.0;
  const boost::math::binomial_distribution<double> bin(static_cast<double>(r), q);
  const double beta = boost::math::cdf(boost::math::complement(bin, static_cast<double>(v - 1)));
  if (delta == 0.0) return std::min(1.0, beta);
  const double alpha = MaxMeanOfLowerTerms(r, v, q, std::exp(epsilon));
  return std::min(1.0, beta + alpha * delta * 2.0 * static_cast<double>(m));
}

double OneRunEpsilonLowerBound(uint64_t m, uint64_t r, uint64_t v, double delta,
                               double significance) {
  return LargestRejected(
      [&](double eps) { return OneRunPValue(m, r, v, eps, delta) <= significance; },
      kOneRunMaxEpsilon, kOneRunSearchTolerance);
}

bool OneRunGdpRejects(uint64_t m, uint64_t r, uint64_t v, double mu, double significance) {
  const double md = static_cast<double>(m);
  double R = significance * static_cast<double>(v) / md;
  double H = significance * static_cast<double>(r - v) / md;
  for (uint64_t i = v; i-- > 0;) {
    const double h_new = std::max(H, GdpBlowUpInverse(R, mu));
    if (h_new == H) break;        // R and H are a fixed point from here on
    const uint64_t rest = r - i;  // >= 1, since i < v <= r
    if (rest == 0) break;
    R = std::min(R + static_cast<double>(i) / static_cast<double>(rest) * (h_new - H), 1.0);
    H = h_new;
  }
  return R + H - static_cast<double>(r) / md > 0.0;
}

double OneRunGdpMuLowerBound(uint64_t m, uint64_t r, uint64_t v, double significance) {
  return LargestRejected([&](double mu) { return OneRunGdpRejects(m, r, v, mu, significance); },
                         kOneRunMaxGdpMu, kOneRunSearchTolerance);
}

double GdpEpsilon(double mu, double delta) {
  if (mu <= 0.0) return 0.0;
  if (delta <= 0.0) return std::numeric_limits<double>::infinity();
  const double log_delta = std::log(delta);
  // δ(ε) falls in ε; "above" = δ(ε) > δ, the side that is not yet enough.
  auto above = [&](double eps) { return LogGdpDelta(eps, mu) > log_delta; };
  if (!above(0.0)) return 0.0;
  double lo = 0.0, hi = 1.0;
  // δ(ε) -> 0, so this ends; ε stays below μ²/2 + μ·√(2·ln(1/δ)) + 1.
  while (above(hi)) {
    lo = hi;
    hi *= 2.0;
  }
  while (hi - lo > kGdpEpsilonTolerance) {
    const double mid = lo + (hi - lo) / 2.0;
    (above(mid) ? lo : hi) = mid;
  }
  return lo;
}

double OneRunSignificance(double confidence, size_t num_budgets) {
  return (1.0 - confidence) / (2.0 * static_cast<double>(num_budgets));
}

absl::StatusOr<OneRunAuditResult> AuditOneRun(absl::Span<const double> scores,
                                              absl::Span<const uint8_t> included,
                                              absl::Span<const GuessBudget> budgets, double delta,
                                              double confidence) {
  MEMAUDIT_RETURN_IF_ERROR(CheckNonEmpty("scores", scores.size()));
  MEMAUDIT_RETURN_IF_ERROR(CheckSameLength("scores", scores.size(), "included", included.size()));
  MEMAUDIT_RETURN_IF_ERROR(CheckFinite("scores", scores));
  MEMAUDIT_RETURN_IF_ERROR(CheckBinary("included", included));
  MEMAUDIT_RETURN_IF_ERROR(CheckNonEmpty("budgets", budgets.size()));
  if (budgets.size() > kMaxGuessBudgets) {
    return absl::InvalidArgumentError(absl::StrCat("budgets has ", budgets.size(),
                                                   " entries; at most ", kMaxGuessBudgets,
                                                   " (each one costs confidence)"));
  }
  const uint64_t m = scores.size();
  for (size_t i = 0; i < budgets.size(); ++i) {
    MEMAUDIT_RETURN_IF_ERROR(CheckBudget(i, budgets[i], m));
  }
  if (!(delta >= 0.0 && delta < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat("delta = ", delta, "; must lie in [0, 1)"));
  }
  MEMAUDIT_RETURN_IF_ERROR(CheckConfidence(confidence));

  // Rank: score descending, lower index first among ties.
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  // included_before[k] = how many of the k highest-ranked are included.
  std::vector<uint64_t> included_before(m + 1, 0);
  for (size_t k = 0; k < m; ++k) included_before[k + 1] = included_before[k] + included[order[k]];

  OneRunAuditResult out;
  out.significance_per_budget = OneRunSignificance(confidence, budgets.size());
  out.budgets.reserve(budgets.size());
  for (const GuessBudget& b : budgets) {
    BudgetOutcome o;
    o.budget = b;
    o.guesses = uint64_t{b.positives} + uint64_t{b.negatives};
    const uint64_t right_in = included_before[b.positives];
    const uint64_t included_in_bottom = included_before[m] - included_before[m - b.negatives];
    o.correct = right_in + (b.negatives - included_in_bottom);
    o.epsilon_lower =
        OneRunEpsilonLowerBound(m, o.guesses, o.correct, delta, out.significance_per_budget);
    o.gdp_mu_lower = OneRunGdpMuLowerBound(m, o.guesses, o.correct, out.significance_per_budget);
    out.budgets.push_back(o);
  }
  for (size_t i = 1; i < out.budgets.size(); ++i) {
    if (out.budgets[i].epsilon_lower > out.budgets[out.best].epsilon_lower) out.best = i;
    if (out.budgets[i].gdp_mu_lower > out.budgets[out.best_gdp].gdp_mu_lower) out.best_gdp = i;
  }
  out.epsilon_lower = out.budgets[out.best].epsilon_lower;
  out.gdp_mu_lower = out.budgets[out.best_gdp].gdp_mu_lower;
  out.gdp_epsilon_lower = GdpEpsilon(out.gdp_mu_lower, delta);
  return out;
}

double PerfectAttackEpsilon(absl::Span<const uint8_t> included,
                            absl::Span<const GuessBudget> budgets, double delta,
                            double confidence) {
  const uint64_t m = included.size();
  const uint64_t in = static_cast<uint64_t>(std::count(included.begin(), included.end(), 1));
  const double significance = OneRunSignificance(confidence, budgets.size());
  double best = 0;
  for (const GuessBudget& b : budgets) {
    const uint64_t guesses = uint64_t{b.positives} + b.negatives;
    if (guesses == 0 || guesses > m) return 0;
    const uint64_t correct =
        std::min<uint64_t>(b.positives, in) + std::min<uint64_t>(b.negatives, m - in);
    best = std::max(best, OneRunEpsilonLowerBound(m, guesses, correct, delta, significance));
  }
  return best;
}

std::vector<GuessBudget> DefaultGuessBudgets(uint64_t m) {
  constexpr uint64_t kMaxK = std::numeric_limits<uint32_t>::max();
  std::vector<GuessBudget> out;
  auto add = [&](uint64_t pos, uint64_t neg) {
    if (pos > kMaxK || neg > kMaxK) return;  // GuessBudget holds 32-bit counts
    out.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(neg)});
  };
  // k = 1, 2, 5, 10, 20, 50, …: stop before k overflows or passes m.
  for (uint64_t decade = 1; decade <= m; decade *= 10) {
    for (uint64_t mult : {1, 2, 5}) {
      if (decade > m / mult) break;  // k > m, written so that it cannot overflow
      const uint64_t k = decade * mult;
      if (k <= m / 2) add(k, k);
      add(k, 0);
    }
    if (decade > m / 10) break;
  }
  if (m > 0) add(m - m / 2, m / 2);
  // All but the middle: (k, k) with k = m/2 - s·√m/2, s = 1, 2, 3, so that a
  // perfect attack is all correct while the included count is within s
  // standard deviations (√m/2) of m/2. The all-guess budget above is all
  // correct only when exactly half are included.
  for (const double s : {1.0, 2.0, 3.0}) {
    const double k = std::floor(m / 2.0 - s * std::sqrt(static_cast<double>(m)) / 2);
    if (k >= 1) add(static_cast<uint64_t>(k), static_cast<uint64_t>(k));
  }
  std::sort(out.begin(), out.end(), [](const GuessBudget& a, const GuessBudget& b) {
    const uint64_t ga = uint64_t{a.positives} + a.negatives;
    const uint64_t gb = uint64_t{b.positives} + b.negatives;
    return ga != gb ? ga < gb : a.positives < b.positives;
  });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const GuessBudget& a, const GuessBudget& b) {
                          return a.positives == b.positives && a.negatives == b.negatives;
                        }),
            out.end());
  if (out.size() > kMaxGuessBudgets) out.resize(kMaxGuessBudgets);
  return out;
}

}  // namespace memaudit::scoring
