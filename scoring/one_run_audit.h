// Privacy auditing in one training run: m canaries, each included in training
// independently with probability 1/2; an attack's scores rank them, the top
// k+ are guessed IN and the bottom k- OUT, and the number of correct guesses
// is turned into a lower bound on the training's privacy parameters.
//
// Two tests of the same counts:
// - (ε, δ)-DP: Steinke, Nasr & Jagielski, "Privacy Auditing with One (1)
//   Training Run" (NeurIPS 2023), Theorem 3.1 and its reference code.
// - μ-Gaussian DP (f-DP with a Gaussian trade-off): Mahloujifar, Melis &
//   Chaudhuri, "Auditing f-Differential Privacy in One Run" (2024), the
//   recursion `audit_rh_with_cap`, as DeepMind's jax_privacy implements it.
//
// Each bound is a lower bound: if it exceeds the ε (or μ) the training
// promised, the promise is broken with the stated confidence; if not, nothing
// is proven. See docs/audits/dp-audit-scoring.md.
#ifndef MEMAUDIT_SCORING_ONE_RUN_AUDIT_H_
#define MEMAUDIT_SCORING_ONE_RUN_AUDIT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace memaudit::scoring {

// The ε search stops here: at ε = 100 randomized response is right with
// probability 1 − 4e-44, and no count of canaries can reject that.
inline constexpr double kOneRunMaxEpsilon = 100.0;
// The μ search stops here: 50-GDP separates the two hypotheses by 50 standard
// deviations, beyond any audit's reach.
inline constexpr double kOneRunMaxGdpMu = 50.0;
// Both searches bisect until the bracket is this narrow (absolute), then
// return its low end: a value that is rejected, so the bound errs low.
inline constexpr double kOneRunSearchTolerance = 1e-9;
// The most guess budgets one audit may test. Each costs a factor in the
// multiple-testing correction (OneRunSignificance), so a long list buys
// nothing.
inline constexpr size_t kMaxGuessBudgets = 64;

// An upper bound on P[W >= v], W the number of correct guesses among r
// guesses (the other m − r canaries abstain), when the training is
// (ε, δ)-DP. With q = e^ε / (1 + e^ε), the accuracy of ε-DP randomized
// response, and X ~ Binomial(r, q):
//   β = P[X >= v],
//   α = max_{i = 1..v} P[v − i <= X < v] / i   (α = 0 when v = 0),
//   p = min(1, β + α · δ · 2m).
// v = 0 gives 1. β comes from Boost's incomplete beta; the pmf terms of α
// from a ratio recurrence started at the largest term (so none underflows
// unless it is negligible next to it), relative error about r · 1e-16.
// When q rounds to 1 (ε > ~37) the result is 1, which is conservative.
// Assumes valid input: v <= r <= m, ε >= 0, 0 <= δ <= 1 (AuditOneRun checks
// counts that come from outside).
double OneRunPValue(uint64_t m, uint64_t r, uint64_t v, double epsilon, double delta);

// The largest ε in [0, kOneRunMaxEpsilon] whose (ε, δ)-DP claim is rejected:
// OneRunPValue(m, r, v, ε, δ) <= significance. 0 when even ε = 0 is not
// rejected. The p-value is non-decreasing in ε: the upper end doubles from 1
// until not rejected, then bisection to kOneRunSearchTolerance; the low end
// (rejected) is returned. Same input assumptions as OneRunPValue, and
// 0 < significance < 1.
double OneRunEpsilonLowerBound(uint64_t m, uint64_t r, uint64_t v, double delta,
                               double significance);

// Whether r guesses with v correct among m canaries reject "μ-GDP" at
// `significance` (τ). With g(x) = Φ(Φ⁻¹(x) − μ), the inverse of the GDP
// blow-up (g(0) = 0, g(1) = 1):
//   R = τ·v/m;  H = τ·(r − v)/m
//   for i = v − 1 down to 0:
//     H' = max(H, g(R));  if H' == H: stop   (nothing changes after this)
//     R = min(R + i/(r − i) · (H' − H), 1);  H = H'
//   rejected iff R + H − r/m > 0.
// Larger μ is harder to reject. Same input assumptions as
// OneRunEpsilonLowerBound, μ >= 0.
bool OneRunGdpRejects(uint64_t m, uint64_t r, uint64_t v, double mu, double significance);

// The largest μ in [0, kOneRunMaxGdpMu] whose μ-GDP claim OneRunGdpRejects
// rejects; 0 when μ = 0 is not rejected. Bracketing and bisection as in
// OneRunEpsilonLowerBound; the low end (rejected) is returned.
double OneRunGdpMuLowerBound(uint64_t m, uint64_t r, uint64_t v, double significance);

// The ε that a μ-GDP mechanism spends at δ (Dong, Roth & Su, "Gaussian
// Differential Privacy", JRSS-B 2022, Corollary 2.13): the smallest ε >= 0
// with Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2) <= δ, evaluated in log space.
// 0 when μ = 0 (or when ε = 0 already meets δ); +inf when δ = 0 < μ (no
// finite ε). Bisection to 1e-10, returning the low end. This converts the
// f-DP bound into an ε to compare with the accountant's; it is what a μ-GDP
// mechanism would spend, not a bound on (ε, δ)-DP itself ((ε, δ)-DP does not
// imply any μ-GDP). Needs μ >= 0 and 0 <= δ < 1.
double GdpEpsilon(double mu, double delta);

// How many canaries to guess: the `positives` highest-scoring IN, the
// `negatives` lowest-scoring OUT; the rest abstain.
struct GuessBudget {
  uint32_t positives = 0;  // k+
  uint32_t negatives = 0;  // k-
};

struct BudgetOutcome {
  GuessBudget budget;
  uint64_t guesses = 0;  // k+ + k-
  uint64_t correct = 0;
  double epsilon_lower = 0;  // OneRunEpsilonLowerBound at significance_per_budget
  double gdp_mu_lower = 0;   // OneRunGdpMuLowerBound at significance_per_budget
};

struct OneRunAuditResult {
  std::vector<BudgetOutcome> budgets;  // in the order given
  size_t best = 0;                     // index of the largest epsilon_lower (first on ties)
  size_t best_gdp = 0;                 // index of the largest gdp_mu_lower (first on ties)
  // The significance every single test ran at: OneRunSignificance(confidence,
  // budgets.size()) = (1 − confidence) / (2·|budgets|).
  double significance_per_budget = 0;
  double epsilon_lower = 0;      // budgets[best].epsilon_lower
  double gdp_mu_lower = 0;       // budgets[best_gdp].gdp_mu_lower
  double gdp_epsilon_lower = 0;  // GdpEpsilon(gdp_mu_lower, delta)
};

// The significance of each test in an audit of `num_budgets` budgets at
// `confidence`: one Bonferroni correction over the 2·num_budgets tests (an
// (ε, δ) test and a μ-GDP test per budget), so that the best ε and the best
// μ both hold, jointly, with probability >= confidence.
double OneRunSignificance(double confidence, size_t num_budgets);

// The audit. Canaries are ranked by score, highest first, ties broken by the
// lower canary index first (so among tied scores at the bottom, the higher
// index is guessed OUT first). For each budget the first k+ are guessed IN,
// the last k- OUT; a guess is correct when included[i] agrees. The order of
// the indices must carry no information about inclusion (number the
// canaries before drawing included).
// Needs: scores non-empty (m >= 1) and finite, included the same length with
// entries 0/1, 1 <= |budgets| <= kMaxGuessBudgets, every budget with
// 1 <= k+ + k- <= m, 0 <= delta < 1, 0 < confidence < 1. Errors are
// InvalidArgumentError naming the argument (e.g. "budgets[2]").
absl::StatusOr<OneRunAuditResult> AuditOneRun(absl::Span<const double> scores,
                                              absl::Span<const uint8_t> included,
                                              absl::Span<const GuessBudget> budgets, double delta,
                                              double confidence);

// A fixed grid for m canaries, k on the 1-2-5 series (1, 2, 5, 10, 20, 50,
// ...): the two-sided budgets (k, k) with 2k <= m, the one-sided budgets
// (k, 0) with k <= m, the all-guess budget (⌈m/2⌉, ⌊m/2⌋), and "all but the
// middle" (k, k) with k = ⌊m/2 − s·√m/2⌋ for s = 1, 2, 3 (all correct for a
// perfect attack while the included count is within s standard deviations
// of m/2); duplicates dropped, sorted by total guesses then by k+. Counts
// are 32-bit, so k past 2^32 − 1 (and the all-guess budget from m = 2^33 on)
// is left out: at most 62 entries, within kMaxGuessBudgets. m = 1000 gives
// 22, m = 10^4 gives 28.
// Empty for m = 0.
std::vector<GuessBudget> DefaultGuessBudgets(uint64_t m);

// The largest ε lower bound `budgets` can give on these inclusion bits at
// (delta, confidence): that of a perfect attack, which ranks every included
// canary above every excluded one, so that a budget (k+, k-) has
// min(k+, included) + min(k-, excluded) correct guesses. What the canaries
// can prove at all: a bound near it means the audit, not the training, is
// the limit. Budgets must be valid for AuditOneRun (0 when they are not).
double PerfectAttackEpsilon(absl::Span<const uint8_t> included,
                            absl::Span<const GuessBudget> budgets, double delta, double confidence);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_ONE_RUN_AUDIT_H_
