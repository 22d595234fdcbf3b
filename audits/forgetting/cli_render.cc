#include "audits/forgetting/cli_render.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "audits/forgetting/cli_plots.h"
#include "audits/forgetting/cli_render_construction.h"
#include "cli/render.h"
#include "common/base/status_macros.h"

namespace memaudit::cli {
namespace {

// A mean across trials with the interval a re-run would fall in.
std::string WithInterval(const v1::TrialMean& m) {
  return absl::StrFormat("%.3f [%.3f, %.3f]", m.mean(), m.rerun_low(), m.rerun_high());
}

// Why the curve's degenerate points (marked "*") measure ties; empty when
// it has none. The scorer gives every such point the same reason.
std::string DegenerateReason(
    const google::protobuf::RepeatedPtrField<v1::ForgettingCurvePoint>& curve) {
  for (const v1::ForgettingCurvePoint& p : curve) {
    if (!p.degenerate().empty()) return p.degenerate();
  }
  return "";
}

std::string CurveTable(const std::string& title, double fpr,
                       const google::protobuf::RepeatedPtrField<v1::ForgettingCurvePoint>& curve) {
  const std::string tpr = absl::StrFormat("TPR@%gFPR", fpr);
  const std::string header = absl::StrFormat("%-12s %-22s %-22s %-22s %-22s %-24s", "steps_since",
                                             "MI accuracy", "AUC", tpr, "precision", "epsilon");
  std::string out = absl::StrCat(title, " (mean over trials [95% interval of a re-run])\n", header,
                                 "\n", std::string(header.size(), '-'), "\n");
  for (const v1::ForgettingCurvePoint& p : curve) {
    // A degenerate point is marked, and why is said once under the table.
    const std::string steps =
        absl::StrCat(p.steps_since_injection(), p.degenerate().empty() ? "" : " *");
    absl::StrAppend(&out, absl::StrFormat("%-12s %-22s %-22s %-22s %-22s %-24s\n", steps,
                                          WithInterval(p.accuracy()), WithInterval(p.auc()),
                                          WithInterval(p.tpr()), WithInterval(p.precision()),
                                          WithInterval(p.epsilon())));
  }
  if (const std::string why = DegenerateReason(curve); !why.empty()) {
    absl::StrAppend(&out, "* ", why, "\n");
  }
  return out;
}

std::string HtmlCurveTable(
    double fpr, const google::protobuf::RepeatedPtrField<v1::ForgettingCurvePoint>& curve) {
  std::string html = absl::StrFormat(
      "<p>Means over trials; in brackets, the 95%% interval a re-run with other seeds would "
      "fall in.</p><table class=\"numbers\"><tr><th>steps since injection</th>"
      "<th>MI accuracy</th><th>AUC</th><th>TPR at FPR %g</th><th>precision</th>"
      "<th>&epsilon;</th></tr>",
      fpr);
  for (const v1::ForgettingCurvePoint& p : curve) {
    absl::StrAppend(&html, absl::StrFormat("<tr><td>%d%s</td>", p.steps_since_injection(),
                                           p.degenerate().empty() ? "" : " *"));
    for (const v1::TrialMean* m :
         {&p.accuracy(), &p.auc(), &p.tpr(), &p.precision(), &p.epsilon()}) {
      absl::StrAppend(&html, absl::StrFormat("<td>%.4f [%.4f, %.4f]</td>", m->mean(),
                                             m->rerun_low(), m->rerun_high()));
    }
    absl::StrAppend(&html, "</tr>");
  }
  absl::StrAppend(&html, "</table>");
  if (const std::string why = DegenerateReason(curve); !why.empty()) {
    absl::StrAppend(&html, "<p class=\"note\">* ", HtmlEscape(why), "</p>");
  }
  return html;
}

// The re-run intervals of a point's five means, as CSV cells after a comma.
std::string RerunColumns(const v1::ForgettingCurvePoint& p) {
  std::string out;
  for (const v1::TrialMean* m : {&p.accuracy(), &p.auc(), &p.tpr(), &p.precision(), &p.epsilon()}) {
    absl::StrAppend(&out, absl::StrFormat(",%.17g,%.17g", m->rerun_low(), m->rerun_high()));
  }
  return absl::StrCat(out, ",");
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
      "Dp selection %s: mean loss %.3f under the trials' selection reference models (candidates: "
      "%.3f)\n",
      f.selection(), f.selection_loss_mean(), f.candidate_loss_mean());
}

bool IsReplay(const v1::ForgettingResults& f) { return f.attack() == "deterministic_replay"; }

// A group of inserted canaries or sequences by its copies: "x16", or
// "controls" for 0.
std::string GroupName(uint32_t copies) {
  return copies == 0 ? "controls" : absl::StrCat("x", copies);
}

// LM canaries: one row per evaluation point, one "injected / baseline" mean
// exposure column per insertion count.
std::string ExposureTable(const v1::AuditResults& r) {
  const v1::ForgettingResults& f = r.forgetting();
  std::string out = absl::StrFormat(
      "audit %s (forgetting, LM canaries): %u trials x %u inserted canaries, log2|R| = %.2f, %u "
      "steps per trial\n\nmean exposure in bits, injected arm / baseline arm (means across "
      "trials)\n",
      r.audit_id(), f.trials(), f.injected_examples(), f.log2_space(), f.training_steps());
  std::string header = absl::StrFormat("%-12s", "steps_since");
  for (const v1::ForgettingExposureCurve& c : f.exposure_curves()) {
    absl::StrAppend(&header, absl::StrFormat(" %-15s", absl::StrCat(GroupName(c.repeats()), " (",
                                                                    c.canaries(), ")")));
  }
  absl::StrAppend(&out, header, "\n", std::string(header.size(), '-'), "\n");
  const int points = f.exposure_curves().empty() ? 0 : f.exposure_curves(0).points_size();
  uint32_t bounded = 0;
  for (int i = 0; i < points; ++i) {
    absl::StrAppend(
        &out, absl::StrFormat("%-12d", f.exposure_curves(0).points(i).steps_since_injection()));
    for (const v1::ForgettingExposureCurve& c : f.exposure_curves()) {
      if (i >= c.points_size()) continue;
      const v1::ForgettingExposurePoint& p = c.points(i);
      bounded += p.bounded();
      absl::StrAppend(&out,
                      absl::StrFormat(" %-15s", absl::StrFormat("%.2f / %.2f", p.exposure().mean(),
                                                                p.baseline_exposure().mean())));
    }
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, absl::StrFormat("\nxN: N copies of each canary in the canary batch; "
                                        "controls were never inserted (chance: about 1.44 bits "
                                        "mean). %u ranks hit the query budget (exposure then an "
                                        "upper bound).\n",
                                        bounded));
  return out;
}

std::string ExposureHtml(const v1::AuditResults& r) {
  const v1::ForgettingResults& f = r.forgetting();
  std::string html = absl::StrFormat(
      "<h2>Forgetting of canaries</h2><p>Inject, %u trials, %u inserted canaries, "
      "log<sub>2</sub>|R| = %.2f. Mean exposure (bits) under the injected arm, then under the "
      "baseline arm.</p><table class=\"numbers\"><tr><th>steps since injection</th>",
      f.trials(), f.injected_examples(), f.log2_space());
  for (const v1::ForgettingExposureCurve& c : f.exposure_curves()) {
    absl::StrAppend(&html, "<th>", GroupName(c.repeats()), " injected</th><th>",
                    GroupName(c.repeats()), " baseline</th>");
  }
  absl::StrAppend(&html, "</tr>");
  const int points = f.exposure_curves().empty() ? 0 : f.exposure_curves(0).points_size();
  for (int i = 0; i < points; ++i) {
    absl::StrAppend(&html, absl::StrFormat("<tr><td>%d</td>",
                                           f.exposure_curves(0).points(i).steps_since_injection()));
    for (const v1::ForgettingExposureCurve& c : f.exposure_curves()) {
      if (i >= c.points_size()) continue;
      absl::StrAppend(&html,
                      absl::StrFormat("<td>%.3f</td><td>%.3f</td>", c.points(i).exposure().mean(),
                                      c.points(i).baseline_exposure().mean()));
    }
    absl::StrAppend(&html, "</tr>");
  }
  absl::StrAppend(&html, "</table>");
  return html;
}

bool IsCanaryAudit(const v1::ForgettingResults& f) { return f.exposure_curves_size() > 0; }

// Extractable memorization as a forgetting curve: one row per evaluation
// point, one "injected / baseline" fraction column per group.
std::string ExtractableTable(const v1::ForgettingResults& f) {
  if (f.extractable_curves().empty()) return "";
  std::string out =
      "\nextractable memorization: fraction of held-out sequences continued exactly from their "
      "prefix, injected arm / baseline arm (means across trials)\n";
  std::string header = absl::StrFormat("%-12s", "steps_since");
  for (const v1::ForgettingExtractableCurve& c : f.extractable_curves()) {
    absl::StrAppend(&header, absl::StrFormat(" %-15s", absl::StrCat(GroupName(c.duplicates()), " (",
                                                                    c.sequences(), ")")));
  }
  absl::StrAppend(&out, header, "\n", std::string(header.size(), '-'), "\n");
  for (int i = 0; i < f.extractable_curves(0).points_size(); ++i) {
    absl::StrAppend(
        &out, absl::StrFormat("%-12d", f.extractable_curves(0).points(i).steps_since_injection()));
    for (const v1::ForgettingExtractableCurve& c : f.extractable_curves()) {
      const v1::ForgettingExtractablePoint& p = c.points(i);
      absl::StrAppend(&out,
                      absl::StrFormat(" %-15s", absl::StrFormat("%.3f / %.3f", p.fraction().mean(),
                                                                p.baseline_fraction().mean())));
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

std::string ExtractableHtml(const v1::ForgettingResults& f) {
  if (f.extractable_curves().empty()) return "";
  std::string html =
      "<h2>Extractable memorization over steps since injection</h2><p>Fraction of held-out "
      "sequences that greedy decoding continues exactly from their prefix, mean across trials "
      "[95% re-run interval], under the injected arm and the baseline arm.</p><table "
      "class=\"numbers\"><tr><th>steps since injection</th>";
  for (const v1::ForgettingExtractableCurve& c : f.extractable_curves()) {
    absl::StrAppend(&html, "<th>", GroupName(c.duplicates()), " injected</th><th>",
                    GroupName(c.duplicates()), " baseline</th>");
  }
  absl::StrAppend(&html, "</tr>");
  for (int i = 0; i < f.extractable_curves(0).points_size(); ++i) {
    absl::StrAppend(&html,
                    absl::StrFormat("<tr><td>%d</td>",
                                    f.extractable_curves(0).points(i).steps_since_injection()));
    for (const v1::ForgettingExtractableCurve& c : f.extractable_curves()) {
      const v1::ForgettingExtractablePoint& p = c.points(i);
      absl::StrAppend(
          &html, absl::StrFormat("<td>%.3f [%.3f, %.3f]</td><td>%.3f</td>", p.fraction().mean(),
                                 p.fraction().rerun_low(), p.fraction().rerun_high(),
                                 p.baseline_fraction().mean()));
    }
    absl::StrAppend(&html, "</tr>");
  }
  absl::StrAppend(&html, "</table>");
  return html;
}

std::string SigmaNote(const v1::ForgettingResults& f) {
  return f.lira_per_example_variance() ? "sigma per example" : "sigma pooled over Dp";
}

std::string LiraModelsNote(const v1::ForgettingResults& f) {
  if (f.in_reference_models() > 0) {
    return absl::StrFormat(" (%u OUT + %u IN LiRA reference models per trial, %s)",
                           f.reference_models(), f.in_reference_models(), SigmaNote(f));
  }
  return absl::StrFormat(" (%u LiRA reference models per trial%s)", f.reference_models(),
                         f.lira_per_example_variance() ? ", sigma per example" : "");
}

}  // namespace

std::string ForgettingTable(const v1::AuditResults& r) {
  const v1::ForgettingResults& f = r.forgetting();
  if (IsConstruction(f)) return ConstructionTable(r);
  if (IsCanaryAudit(f)) return ExposureTable(r) + ExtractableTable(f);
  std::string out = absl::StrFormat(
      "audit %s (forgetting): strategy %s, attack %s, %u trials x %u injected examples, "
      "%u steps per trial%s\n",
      r.audit_id(), f.strategy(), f.attack(), f.trials(), f.injected_examples(), f.training_steps(),
      f.reference_models() > 0 ? LiraModelsNote(f) : "");
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
  if (f.offline_curve_size() > 0) {
    absl::StrAppend(&out, "\n",
                    CurveTable(absl::StrCat("offline LiRA ", f.offline_attack(),
                                            " on the same OUT references (means across trials)"),
                               f.fpr_target(), f.offline_curve()));
  }
  absl::StrAppend(&out,
                  "\nMI accuracy 0.5 = forgotten (chance). epsilon = ln(TPR/FPR), FPR clamped to "
                  "1/|Dp| when 0.\n");
  return out;
}

std::string ForgettingHtmlSection(const v1::AuditResults& r) {
  const v1::ForgettingResults& f = r.forgetting();
  if (IsConstruction(f)) return ConstructionHtml(r);
  if (IsCanaryAudit(f)) return ExposureHtml(r) + ExtractableHtml(f);
  std::string html = absl::StrFormat(
      "<h2>Forgetting curve</h2><p>Strategy %s, attack %s, %u trials, %u injected examples; "
      "membership inference of the injected arm against the baseline arm.</p>",
      f.strategy(), f.attack(), f.trials(), f.injected_examples());
  if (const std::string line = SelectionLine(f); !line.empty()) {
    absl::StrAppend(&html, "<p>", line, "</p>");
  }
  if (f.in_reference_models() > 0) {
    absl::StrAppend(&html,
                    absl::StrFormat("<p>Online LiRA against %u OUT reference models "
                                    "(baseline-arm forks) and %u IN reference models "
                                    "(injected-arm forks) per trial, each with its own "
                                    "data order; %s.</p>",
                                    f.reference_models(), f.in_reference_models(), SigmaNote(f)));
  } else if (f.reference_models() > 0) {
    absl::StrAppend(&html, absl::StrFormat("<p>Offline LiRA against %u reference models per trial "
                                           "(baseline-arm forks with their own data order); "
                                           "%s.</p>",
                                           f.reference_models(), SigmaNote(f)));
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
  if (f.offline_curve_size() > 0) {
    absl::StrAppend(&html,
                    absl::StrFormat("<h3>Offline LiRA (%s) on the same OUT references</h3>",
                                    f.offline_attack()),
                    HtmlCurveTable(f.fpr_target(), f.offline_curve()));
  }
  return html;
}

absl::Status WriteForgettingCsv(const v1::AuditResults& r, const std::string& dir) {
  if (IsConstruction(r.forgetting())) return WriteConstructionCsv(r, dir);
  if (IsCanaryAudit(r.forgetting())) {
    std::string csv =
        "audit_id,repeats,canaries,steps_since_injection,exposure,exposure_low,exposure_high,"
        "baseline_exposure,baseline_low,baseline_high,bounded,log2_space\n";
    for (const v1::ForgettingExposureCurve& c : r.forgetting().exposure_curves()) {
      for (const v1::ForgettingExposurePoint& p : c.points()) {
        absl::StrAppend(
            &csv, absl::StrFormat(
                      "%s,%u,%u,%d,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%u,%.17g\n", r.audit_id(),
                      c.repeats(), c.canaries(), p.steps_since_injection(), p.exposure().mean(),
                      p.exposure().low(), p.exposure().high(), p.baseline_exposure().mean(),
                      p.baseline_exposure().low(), p.baseline_exposure().high(), p.bounded(),
                      r.forgetting().log2_space()));
      }
    }
    MEMAUDIT_RETURN_IF_ERROR(WriteFile(dir + "/forgetting_exposure.csv", csv));
    if (r.forgetting().extractable_curves().empty()) return absl::OkStatus();
    std::string extractable =
        "audit_id,duplicates,sequences,steps_since_injection,fraction,fraction_low,"
        "fraction_high,fraction_rerun_low,fraction_rerun_high,baseline_fraction,baseline_low,"
        "baseline_high\n";
    for (const v1::ForgettingExtractableCurve& c : r.forgetting().extractable_curves()) {
      for (const v1::ForgettingExtractablePoint& p : c.points()) {
        absl::StrAppend(
            &extractable,
            absl::StrFormat("%s,%u,%u,%d,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n",
                            r.audit_id(), c.duplicates(), c.sequences(), p.steps_since_injection(),
                            p.fraction().mean(), p.fraction().low(), p.fraction().high(),
                            p.fraction().rerun_low(), p.fraction().rerun_high(),
                            p.baseline_fraction().mean(), p.baseline_fraction().low(),
                            p.baseline_fraction().high()));
      }
    }
    return WriteFile(dir + "/forgetting_extractable.csv", extractable);
  }
  std::string csv =
      "audit_id,strategy,attack,steps_since_injection,accuracy,accuracy_low,accuracy_high,auc,"
      "auc_low,auc_high,fpr_target,tpr,tpr_low,tpr_high,precision,epsilon,"
      "epsilon_clamped_trials,accuracy_rerun_low,accuracy_rerun_high,auc_rerun_low,"
      "auc_rerun_high,tpr_rerun_low,tpr_rerun_high,precision_rerun_low,precision_rerun_high,"
      "epsilon_rerun_low,epsilon_rerun_high,selection,degenerate\n";
  const v1::ForgettingResults& f = r.forgetting();
  // A replay or LiRA audit's standard curve (and lira_online's offline
  // curve) follow as rows with their own attack.
  for (const auto& [attack, curve] :
       {std::pair{f.attack(), &f.curve()}, std::pair{f.standard_attack(), &f.standard_curve()},
        std::pair{f.offline_attack(), &f.offline_curve()}}) {
    for (const v1::ForgettingCurvePoint& p : *curve) {
      absl::StrAppend(
          &csv, absl::StrFormat("%s,%s,%s,%d,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,"
                                "%.17g,%.17g,%.17g,%u%s%s,%d\n",
                                r.audit_id(), f.strategy(), attack, p.steps_since_injection(),
                                p.accuracy().mean(), p.accuracy().low(), p.accuracy().high(),
                                p.auc().mean(), p.auc().low(), p.auc().high(), f.fpr_target(),
                                p.tpr().mean(), p.tpr().low(), p.tpr().high(), p.precision().mean(),
                                p.epsilon().mean(), p.epsilon_clamped_trials(), RerunColumns(p),
                                f.selection().empty() ? "random" : f.selection(),
                                // The reason is in the results JSON.
                                p.degenerate().empty() ? 0 : 1));
    }
  }
  return WriteFile(dir + "/forgetting_curve.csv", csv);
}

namespace {

class Forgetting final : public KindHandler {
 public:
  std::string Table(const v1::AuditResults& results) const override {
    return ForgettingTable(results);
  }

  absl::Status WriteCsv(const v1::AuditResults& results, const std::string& dir) const override {
    return WriteForgettingCsv(results, dir);
  }

  std::string HtmlSections(const v1::AuditResults& results) const override {
    // A construction's table is its whole story: no curve plots.
    if (IsConstruction(results.forgetting())) return ForgettingHtmlSection(results);
    return absl::StrCat(ForgettingPlotsHtml(results), ForgettingHtmlSection(results));
  }
};

}  // namespace

}  // namespace memaudit::cli

namespace memaudit {

template <>
const cli::KindHandler& HandlerOfKind<cli::KindHandler, v1::AuditSpec::kForgetting>() {
  static const cli::Forgetting handler;
  return handler;
}

}  // namespace memaudit
