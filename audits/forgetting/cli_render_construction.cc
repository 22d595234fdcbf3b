#include "audits/forgetting/cli_render_construction.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/render.h"

namespace memaudit::cli {
namespace {

std::string Described(const v1::ForgettingResults& f) {
  if (f.construction() == "kmeans") {
    return "k-means with k = 2 on three 1-D clusters; the adversary guesses IN when the middle "
           "cluster ended merged with the left one";
  }
  return "mean estimation by per-example gradient steps; the adversary guesses IN on +v's side";
}

std::string Precision(const v1::ForgettingConstructionPoint& p) {
  if (p.precision_undefined()) return "undefined";
  return absl::StrFormat("%.3f [%.3f, %.3f]", p.precision(), p.precision_low(), p.precision_high());
}

// The closed form of random-sampling mean estimation, or "-".
std::string Optimal(const v1::ForgettingConstructionPoint& p) {
  if (p.optimal_accuracy() == 0) return "-";
  return absl::StrFormat("%.3f", p.optimal_accuracy());
}

std::string Kl(const v1::ForgettingConstructionPoint& p) {
  if (p.optimal_accuracy() == 0) return "-";
  if (std::isinf(p.kl_divergence())) return "inf <= inf";
  return absl::StrFormat("%.4g <= %.4g", p.kl_divergence(), p.kl_bound());
}

bool HasClosedForm(const v1::ForgettingResults& f) {
  for (const auto& p : f.construction_curve()) {
    if (p.optimal_accuracy() != 0) return true;
  }
  return false;
}

uint32_t IdenticalTrials(const v1::ForgettingResults& f) {
  uint32_t n = 0;
  for (const auto& p : f.construction_curve()) n += p.identical_trials();
  return n;
}

}  // namespace

std::string ConstructionTable(const v1::AuditResults& r) {
  const v1::ForgettingResults& f = r.forgetting();
  std::string out = absl::StrFormat("audit %s (forgetting construction %s): %s; %u trials\n",
                                    r.audit_id(), f.construction(), Described(f), f.trials());
  const std::string header =
      absl::StrFormat("%-12s %-24s %-24s %-17s %-10s %-20s", "steps_since", "MI accuracy [95%]",
                      "precision [95%]", "TP FP TN FN", "optimal", "KL <= Theorem 1");
  absl::StrAppend(&out, header, "\n", std::string(header.size(), '-'), "\n");
  for (const v1::ForgettingConstructionPoint& p : f.construction_curve()) {
    absl::StrAppend(
        &out, absl::StrFormat("%-12d %-24s %-24s %-17s %-10s %-20s\n", p.steps_since_injection(),
                              absl::StrFormat("%.3f [%.3f, %.3f]", p.accuracy(), p.accuracy_low(),
                                              p.accuracy_high()),
                              Precision(p),
                              absl::StrCat(p.true_positives(), " ", p.false_positives(), " ",
                                           p.true_negatives(), " ", p.false_negatives()),
                              Optimal(p), Kl(p)));
  }
  absl::StrAppend(&out,
                  "\nIntervals: Clopper-Pearson over the 2 x trials guesses. MI accuracy 0.5 = "
                  "forgotten (chance).\n");
  if (const uint32_t identical = IdenticalTrials(f); identical > 0) {
    absl::StrAppend(&out, absl::StrFormat("%u trial-points ended with both arms on the same "
                                          "double: rounding, not the learner, forgot.\n",
                                          identical));
  }
  return out;
}

std::string ConstructionHtml(const v1::AuditResults& r) {
  const v1::ForgettingResults& f = r.forgetting();
  std::string html = absl::StrFormat(
      "<h2>Forgetting construction: %s</h2><p>%s; %u trials, each an IN arm and an OUT arm on "
      "their own samples. Intervals are Clopper-Pearson over the 2 &times; trials "
      "guesses.</p><table class=\"numbers\"><tr><th>steps since injection</th><th>MI "
      "accuracy</th><th>precision</th><th>TP / FP / TN / FN</th>%s</tr>",
      HtmlEscape(f.construction()), HtmlEscape(Described(f)), f.trials(),
      HasClosedForm(f) ? "<th>optimal accuracy</th><th>KL &le; Theorem 1's bound</th>" : "");
  for (const v1::ForgettingConstructionPoint& p : f.construction_curve()) {
    absl::StrAppend(
        &html,
        absl::StrFormat("<tr><td>%d</td><td>%.3f [%.3f, %.3f]</td><td>%s</td><td>%u / %u / %u / "
                        "%u</td>",
                        p.steps_since_injection(), p.accuracy(), p.accuracy_low(),
                        p.accuracy_high(), Precision(p), p.true_positives(), p.false_positives(),
                        p.true_negatives(), p.false_negatives()),
        HasClosedForm(f) ? absl::StrCat("<td>", Optimal(p), "</td><td>", Kl(p), "</td>") : "",
        "</tr>");
  }
  absl::StrAppend(&html, "</table>");
  if (const uint32_t identical = IdenticalTrials(f); identical > 0) {
    absl::StrAppend(&html, absl::StrFormat("<p>%u trial-points ended with both arms on the same "
                                           "double: rounding, not the learner, forgot.</p>",
                                           identical));
  }
  return html;
}

absl::Status WriteConstructionCsv(const v1::AuditResults& r, const std::string& dir) {
  std::string csv =
      "audit_id,construction,steps_since_injection,true_positives,false_positives,"
      "true_negatives,false_negatives,accuracy,accuracy_low,accuracy_high,precision,"
      "precision_low,precision_high,precision_undefined,optimal_accuracy,kl_divergence,kl_bound,"
      "identical_trials\n";
  const v1::ForgettingResults& f = r.forgetting();
  for (const v1::ForgettingConstructionPoint& p : f.construction_curve()) {
    absl::StrAppend(&csv, absl::StrFormat("%s,%s,%d,%u,%u,%u,%u,%.17g,%.17g,%.17g,%.17g,%.17g,"
                                          "%.17g,%d,%.17g,%.17g,%.17g,%u\n",
                                          r.audit_id(), f.construction(), p.steps_since_injection(),
                                          p.true_positives(), p.false_positives(),
                                          p.true_negatives(), p.false_negatives(), p.accuracy(),
                                          p.accuracy_low(), p.accuracy_high(), p.precision(),
                                          p.precision_low(), p.precision_high(),
                                          p.precision_undefined() ? 1 : 0, p.optimal_accuracy(),
                                          p.kl_divergence(), p.kl_bound(), p.identical_trials()));
  }
  return WriteFile(dir + "/forgetting_construction.csv", csv);
}

}  // namespace memaudit::cli
