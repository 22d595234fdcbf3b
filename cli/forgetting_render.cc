#include "cli/forgetting_render.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace memaudit::cli {
namespace {

std::string WithInterval(const v1::TrialMean& m) {
  return absl::StrFormat("%.3f [%.3f, %.3f]", m.mean(), m.low(), m.high());
}

std::string CurveTable(const std::string& title, double fpr,
                       const google::protobuf::RepeatedPtrField<v1::ForgettingCurvePoint>& curve) {
  const std::string tpr = absl::StrFormat("TPR@%gFPR", fpr);
  const std::string header =
      absl::StrFormat("%-12s %-22s %-22s %-22s %-10s %-8s", "steps_since", "MI accuracy [95%]",
                      "AUC [95%]", tpr + " [95%]", "precision", "epsilon");
  std::string out = absl::StrCat(title, "\n", header, "\n", std::string(header.size(), '-'), "\n");
  for (const v1::ForgettingCurvePoint& p : curve) {
    absl::StrAppend(
        &out, absl::StrFormat("%-12d %-22s %-22s %-22s %-10.3f %-8.3f\n", p.steps_since_injection(),
                              WithInterval(p.accuracy()), WithInterval(p.auc()),
                              WithInterval(p.tpr()), p.precision().mean(), p.epsilon().mean()));
  }
  return out;
}

std::string HtmlCurveTable(
    double fpr, const google::protobuf::RepeatedPtrField<v1::ForgettingCurvePoint>& curve) {
  std::string html = absl::StrFormat(
      "<table class=\"numbers\"><tr><th>steps since injection</th><th>MI accuracy</th>"
      "<th>95%% interval</th><th>AUC</th><th>TPR at FPR %g</th><th>precision</th>"
      "<th>&epsilon;</th></tr>",
      fpr);
  for (const v1::ForgettingCurvePoint& p : curve) {
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

// "k of n": trial-points where the replay reproduced the baseline bit for bit.
std::pair<uint64_t, uint64_t> ReplayExact(const v1::ForgettingResults& f) {
  uint64_t exact = 0;
  for (const v1::ForgettingCurvePoint& p : f.curve()) exact += p.replay_exact_trials();
  return {exact, static_cast<uint64_t>(f.curve_size()) * f.trials()};
}

// "selection hard (mean reference loss 2.31 vs 0.52 over 1000 candidates)".
std::string SelectionLine(const v1::ForgettingResults& f) {
  if (f.selection().empty() || f.selection() == "random") return "";
  return absl::StrFormat(
      "Dp selection %s: mean loss %.3f under the selection reference model (candidates: %.3f)\n",
      f.selection(), f.selection_loss_mean(), f.candidate_loss_mean());
}

bool IsReplay(const v1::ForgettingResults& f) { return f.attack() == "deterministic_replay"; }

}  // namespace

std::string ForgettingTable(const v1::AuditResults& r) {
  const v1::ForgettingResults& f = r.forgetting();
  std::string out = absl::StrFormat(
      "audit %s (forgetting): strategy %s, attack %s, %u trials x %u injected examples, "
      "%u steps per trial%s\n",
      r.audit_id(), f.strategy(), f.attack(), f.trials(), f.injected_examples(), f.training_steps(),
      f.reference_models() > 0
          ? absl::StrFormat(" (%u LiRA reference models per trial)", f.reference_models())
          : "");
  absl::StrAppend(&out, SelectionLine(f), "\n");
  absl::StrAppend(&out, CurveTable(absl::StrCat("forgetting curve, attack ", f.attack(),
                                                " (means across trials)"),
                                   f.fpr_target(), f.curve()));
  if (f.standard_curve_size() > 0) {
    const auto [exact, total] = ReplayExact(f);
    if (IsReplay(f)) {
      absl::StrAppend(&out, absl::StrFormat("replay reproduced the baseline arm bit for bit at %d "
                                            "of %d trial-points\n",
                                            exact, total));
    }
    absl::StrAppend(&out, "\n",
                    CurveTable(absl::StrCat("standard attack ", f.standard_attack(),
                                            " on the same arms (means across trials)"),
                               f.fpr_target(), f.standard_curve()));
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
      "membership inference of the injected arm against the baseline arm.</p>",
      f.strategy(), f.attack(), f.trials(), f.injected_examples());
  if (const std::string line = SelectionLine(f); !line.empty()) {
    absl::StrAppend(&html, "<p>", line, "</p>");
  }
  if (f.reference_models() > 0) {
    absl::StrAppend(&html, absl::StrFormat("<p>Offline LiRA against %u reference models per trial "
                                           "(baseline-arm forks with their own data order).</p>",
                                           f.reference_models()));
  }
  absl::StrAppend(&html, HtmlCurveTable(f.fpr_target(), f.curve()));
  if (f.standard_curve_size() > 0) {
    const auto [exact, total] = ReplayExact(f);
    if (IsReplay(f)) {
      absl::StrAppend(&html,
                      absl::StrFormat("<p>The replay reproduced the baseline arm bit for bit at %d "
                                      "of %d trial-points.</p>",
                                      exact, total));
    }
    absl::StrAppend(
        &html,
        absl::StrFormat("<h3>Standard attack (%s) on the same arms</h3>", f.standard_attack()),
        HtmlCurveTable(f.fpr_target(), f.standard_curve()));
  }
  return html;
}

absl::Status WriteForgettingCsv(const v1::AuditResults& r, const std::string& dir) {
  std::string csv =
      "audit_id,strategy,attack,steps_since_injection,accuracy,accuracy_low,accuracy_high,auc,"
      "auc_low,auc_high,fpr_target,tpr,tpr_low,tpr_high,precision,epsilon,"
      "epsilon_clamped_trials,selection\n";
  const v1::ForgettingResults& f = r.forgetting();
  // A replay audit's standard curve follows as rows with its own attack.
  for (const auto& [attack, curve] :
       {std::pair{f.attack(), &f.curve()}, std::pair{f.standard_attack(), &f.standard_curve()}}) {
    for (const v1::ForgettingCurvePoint& p : *curve) {
      absl::StrAppend(
          &csv, absl::StrFormat("%s,%s,%s,%d,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,"
                                "%.17g,%.17g,%.17g,%u,%s\n",
                                r.audit_id(), f.strategy(), attack, p.steps_since_injection(),
                                p.accuracy().mean(), p.accuracy().low(), p.accuracy().high(),
                                p.auc().mean(), p.auc().low(), p.auc().high(), f.fpr_target(),
                                p.tpr().mean(), p.tpr().low(), p.tpr().high(), p.precision().mean(),
                                p.epsilon().mean(), p.epsilon_clamped_trials(),
                                f.selection().empty() ? "random" : f.selection()));
    }
  }
  const std::string path = dir + "/forgetting_curve.csv";
  std::ofstream out(path);
  out << csv;
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace memaudit::cli
