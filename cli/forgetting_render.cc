#include "cli/forgetting_render.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace memaudit::cli {
namespace {

std::string WithInterval(const v1::TrialMean& m) {
  return absl::StrFormat("%.3f [%.3f, %.3f]", m.mean(), m.low(), m.high());
}

}  // namespace

std::string ForgettingTable(const v1::AuditResults& r) {
  const v1::ForgettingResults& f = r.forgetting();
  std::string out = absl::StrFormat(
      "audit %s (forgetting): strategy %s, attack %s, %u trials x %u injected examples, "
      "%u steps per trial\n\n",
      r.audit_id(), f.strategy(), f.attack(), f.trials(), f.injected_examples(),
      f.training_steps());
  const std::string tpr = absl::StrFormat("TPR@%gFPR", f.fpr_target());
  const std::string header =
      absl::StrFormat("%-12s %-22s %-22s %-22s %-10s %-8s", "steps_since", "MI accuracy [95%]",
                      "AUC [95%]", tpr + " [95%]", "precision", "epsilon");
  absl::StrAppend(&out, "forgetting curve (means across trials)\n", header, "\n",
                  std::string(header.size(), '-'), "\n");
  for (const v1::ForgettingCurvePoint& p : f.curve()) {
    absl::StrAppend(
        &out, absl::StrFormat("%-12d %-22s %-22s %-22s %-10.3f %-8.3f\n", p.steps_since_injection(),
                              WithInterval(p.accuracy()), WithInterval(p.auc()),
                              WithInterval(p.tpr()), p.precision().mean(), p.epsilon().mean()));
  }
  absl::StrAppend(&out,
                  "\nMI accuracy 0.5 = forgotten (chance). epsilon = ln(TPR/FPR), FPR clamped to "
                  "1/|Dp| when 0.\n");
  return out;
}

std::string ForgettingHtmlSection(const v1::AuditResults& r) {
  const v1::ForgettingResults& f = r.forgetting();
  std::string html = absl::StrFormat(
      "<h2>Forgetting curve</h2><p>Strategy %s, attack %s, %u trials, %u injected examples; "
      "membership inference of the injected arm against the baseline arm.</p>"
      "<table class=\"numbers\"><tr><th>steps since injection</th><th>MI accuracy</th>"
      "<th>95%% interval</th><th>AUC</th><th>TPR at FPR %g</th><th>precision</th>"
      "<th>&epsilon;</th></tr>",
      f.strategy(), f.attack(), f.trials(), f.injected_examples(), f.fpr_target());
  for (const v1::ForgettingCurvePoint& p : f.curve()) {
    absl::StrAppend(
        &html, absl::StrFormat("<tr><td>%d</td><td>%.4f</td><td>[%.4f, %.4f]</td><td>%.4f</td>"
                               "<td>%.4f</td><td>%.4f</td><td>%.3f</td></tr>",
                               p.steps_since_injection(), p.accuracy().mean(), p.accuracy().low(),
                               p.accuracy().high(), p.auc().mean(), p.tpr().mean(),
                               p.precision().mean(), p.epsilon().mean()));
  }
  absl::StrAppend(&html, "</table>");
  return html;
}

absl::Status WriteForgettingCsv(const v1::AuditResults& r, const std::string& dir) {
  std::string csv =
      "audit_id,strategy,attack,steps_since_injection,accuracy,accuracy_low,accuracy_high,auc,"
      "auc_low,auc_high,fpr_target,tpr,tpr_low,tpr_high,precision,epsilon,"
      "epsilon_clamped_trials\n";
  const v1::ForgettingResults& f = r.forgetting();
  for (const v1::ForgettingCurvePoint& p : f.curve()) {
    absl::StrAppend(
        &csv, absl::StrFormat("%s,%s,%s,%d,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,"
                              "%.17g,%.17g,%.17g,%u\n",
                              r.audit_id(), f.strategy(), f.attack(), p.steps_since_injection(),
                              p.accuracy().mean(), p.accuracy().low(), p.accuracy().high(),
                              p.auc().mean(), p.auc().low(), p.auc().high(), f.fpr_target(),
                              p.tpr().mean(), p.tpr().low(), p.tpr().high(), p.precision().mean(),
                              p.epsilon().mean(), p.epsilon_clamped_trials()));
  }
  const std::string path = dir + "/forgetting_curve.csv";
  std::ofstream out(path);
  out << csv;
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace memaudit::cli
