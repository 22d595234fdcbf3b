// How the CLI shows a `dp_audit`: the lower bounds beside the accountant's
// epsilon, then every guess budget.
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/kind_handler.h"
#include "cli/render.h"

namespace memaudit::cli {
namespace {

std::string Epsilon(double e) { return std::isinf(e) ? "inf" : absl::StrFormat("%.3f", e); }

// What the lower bound says about the accountant's claim, in one line.
std::string Verdict(const v1::DpAuditResults& r) {
  if (!r.dp_sgd()) return "no DP-SGD: the bound is the run's empirical privacy loss";
  if (r.epsilon_lower() > r.accountant_epsilon()) {
    return absl::StrFormat(
        "VIOLATED: the run spends more than the accountant's epsilon %s (at %g%% confidence)",
        Epsilon(r.accountant_epsilon()), 100 * r.confidence());
  }
  return "consistent with the accountant (a lower bound proves a violation, never a guarantee)";
}

std::string BudgetName(const v1::DpAuditBudget& b) {
  return absl::StrFormat("%u in + %u out", b.positives(), b.negatives());
}

std::string DpAuditTable(const v1::AuditResults& results) {
  const v1::DpAuditResults& r = results.dp_audit();
  std::string out = absl::StrFormat(
      "dp_audit: %s canaries, %u per run x %u run(s) = %u audited (%u included), delta %g, "
      "%g%% confidence\n",
      r.canary_type(), r.canaries(), r.runs(), r.audited(), r.included(), r.delta(),
      100 * r.confidence());
  const v1::DpAuditBudget* best = r.best_budget() < static_cast<uint32_t>(r.budgets_size())
                                      ? &r.budgets(r.best_budget())
                                      : nullptr;
  absl::StrAppend(&out, absl::StrFormat("  epsilon lower bound   %s", Epsilon(r.epsilon_lower())));
  if (best != nullptr) {
    absl::StrAppend(&out, absl::StrFormat("   (%s: %u of %u guesses correct)", BudgetName(*best),
                                          best->correct(), best->guesses()));
  }
  absl::StrAppend(
      &out,
      absl::StrFormat("\n  mu-GDP lower bound    %.3f   (epsilon %s at delta)\n", r.gdp_mu_lower(),
                      Epsilon(r.gdp_epsilon_lower())),
      absl::StrFormat("  largest provable      %s   (a perfect attack on these canaries)\n",
                      Epsilon(r.max_certifiable_epsilon())));
  if (r.dp_sgd()) {
    absl::StrAppend(&out, absl::StrFormat("  accountant epsilon    %s   (noise multiplier %.4g)\n",
                                          Epsilon(r.accountant_epsilon()), r.noise_multiplier()));
  }
  absl::StrAppend(
      &out,
      absl::StrFormat("  canary score AUC      %.4f\n  training accuracy     %.4f\n", r.auc(),
                      r.train_accuracy()),
      "  ", Verdict(r), "\n",
      absl::StrFormat("budgets (each tested at %.3g, Bonferroni):\n", r.significance_per_test()),
      absl::StrFormat("  %-20s %8s %8s %10s %8s\n", "budget", "guesses", "correct", "eps lower",
                      "mu lower"));
  for (const v1::DpAuditBudget& b : r.budgets()) {
    absl::StrAppend(&out,
                    absl::StrFormat("  %-20s %8u %8u %10s %8.3f\n", BudgetName(b), b.guesses(),
                                    b.correct(), Epsilon(b.epsilon_lower()), b.gdp_mu_lower()));
  }
  return out;
}

class DpAuditKind final : public KindHandler {
 public:
  std::string Table(const v1::AuditResults& results) const override {
    return DpAuditTable(results);
  }

  absl::Status WriteCsv(const v1::AuditResults& results, const std::string& dir) const override {
    const v1::DpAuditResults& r = results.dp_audit();
    std::string csv =
        "audit_id,canary_type,audited,delta,confidence,positives,negatives,guesses,correct,"
        "epsilon_lower,gdp_mu_lower,best\n";
    for (int i = 0; i < r.budgets_size(); ++i) {
      const v1::DpAuditBudget& b = r.budgets(i);
      absl::StrAppend(
          &csv,
          absl::StrFormat("%s,%s,%u,%.17g,%.17g,%u,%u,%u,%u,%.17g,%.17g,%d\n", results.audit_id(),
                          r.canary_type(), r.audited(), r.delta(), r.confidence(), b.positives(),
                          b.negatives(), b.guesses(), b.correct(), b.epsilon_lower(),
                          b.gdp_mu_lower(), static_cast<uint32_t>(i) == r.best_budget() ? 1 : 0));
    }
    return WriteFile(dir + "/dp_audit_budgets.csv", csv);
  }

  std::string HtmlSections(const v1::AuditResults& results) const override {
    return absl::StrCat("<h2>One-run DP audit</h2><pre>", HtmlEscape(DpAuditTable(results)),
                        "</pre><p>The epsilon lower bound follows <i>Privacy Auditing with One (1) "
                        "Training Run</i> (exact binomial tail with the delta term); the mu-GDP "
                        "bound <i>Auditing f-Differential Privacy in One Run</i>. A bound above "
                        "the accountant's epsilon proves the training spends more than it "
                        "promises.</p>");
  }

  std::string HtmlSizeRows(const v1::AuditResults& results) const override {
    const v1::DpAuditResults& r = results.dp_audit();
    return absl::StrFormat(
        "<tr><th>runs &times; canaries</th><td>%u &times; %u</td></tr>"
        "<tr><th>included / excluded canaries</th><td>%d / %d</td></tr>",
        r.runs(), r.canaries(), r.included(), r.audited() - r.included());
  }
};

}  // namespace

}  // namespace memaudit::cli

namespace memaudit {

template <>
const cli::KindHandler& HandlerOfKind<cli::KindHandler, v1::AuditSpec::kDpAudit>() {
  static const cli::DpAuditKind handler;
  return handler;
}

}  // namespace memaudit
