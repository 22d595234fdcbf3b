#include "audits/unlearning/cli_render.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "audits/unlearning/cli_plots.h"
#include "cli/render.h"
#include "common/base/status_macros.h"

namespace memaudit::cli {
namespace {

std::string Summary(const v1::UnlearningResults& u) {
  std::string out = absl::StrFormat(
      "method %s, deletion %s (group size %u), seed policy %s; %u shadow / %u target attack "
      "rows, %u models trained\n",
      u.method(), u.deletion(), u.group_size(), u.seed_policy(), u.shadow_rows(), u.target_rows(),
      u.models_trained());
  absl::StrAppend(
      &out, absl::StrFormat("target originals: train accuracy %.3f, test accuracy "
                            "%.3f, overfitting %.3f",
                            u.target_train_accuracy(), u.target_test_accuracy(), u.overfitting()));
  if (u.dp_epsilon() > 0)
    absl::StrAppend(&out, absl::StrFormat(", DP-SGD epsilon %.3f", u.dp_epsilon()));
  return out + "\n";
}

// "[lo, hi]" of a re-run interval, or "n/a" where the audit has fewer than
// 2 target originals to resample.
std::string Rerun(const v1::AuditResults& r, double lo, double hi) {
  const bool resampled =
      r.has_spec() ? r.spec().unlearning().target().originals() >= 2 : (lo != 0 || hi != 0);
  return resampled ? absl::StrFormat("[%.4f, %.4f]", lo, hi) : "n/a";
}

}  // namespace

std::string UnlearningTable(const v1::AuditResults& r) {
  const v1::UnlearningResults& u = r.unlearning();
  std::string out = absl::StrCat("audit ", r.audit_id(), " (unlearning): ", Summary(u), "\n");
  const std::string header = absl::StrFormat(
      "%-12s %-20s %-20s %8s %17s %9s %17s %9s %19s", "defense", "feature", "classifier", "AUC",
      "re-run 95%", "DegCount", "re-run 95%", "DegRate", "re-run 95%");
  absl::StrAppend(&out, header, "\n", std::string(header.size(), '-'), "\n");
  for (const v1::UnlearningAttackResult& a : u.attacks()) {
    const bool baseline = a.feature() == "baseline";
    absl::StrAppend(
        &out, absl::StrFormat(
                  "%-12s %-20s %-20s %8.4f %17s %9s %17s %9s %19s\n", a.defense(), a.feature(),
                  a.classifier(), a.auc(), Rerun(r, a.auc_rerun_low(), a.auc_rerun_high()),
                  baseline ? "-" : absl::StrFormat("%.4f", a.deg_count()),
                  baseline ? "-" : Rerun(r, a.deg_count_rerun_low(), a.deg_count_rerun_high()),
                  baseline ? "-" : absl::StrFormat("%.4f", a.deg_rate()),
                  baseline ? "-" : Rerun(r, a.deg_rate_rerun_low(), a.deg_rate_rerun_high())));
  }
  absl::StrAppend(&out,
                  "\nAUC on target-side rows (deleted samples vs samples in neither model) of an "
                  "attack trained on shadow rows; baseline = classical membership inference on the "
                  "original model's posterior alone. DegCount / DegRate compare with the baseline "
                  "of the same defense and classifier (> 0.5 / > 0: unlearning leaks more). "
                  "re-run 95%: where a re-run with other seeds would fall (bootstraps over the "
                  "target original models and over the shadow ones, refitting the attacks; the "
                  "results JSON also holds the intervals over the target rows alone).\n");
  return out;
}

std::string UnlearningHtmlSection(const v1::AuditResults& r) {
  const v1::UnlearningResults& u = r.unlearning();
  std::string html = absl::StrCat(
      "<h2>Unlearning attack</h2><p>", HtmlEscape(Summary(u)),
      "</p><table class=\"numbers\"><tr><th>defense</th><th>feature</th><th>classifier</th>"
      "<th>AUC [re-run 95%]</th><th>DegCount [re-run 95%]</th><th>DegRate [re-run 95%]</th>"
      "</tr>");
  for (const v1::UnlearningAttackResult& a : u.attacks()) {
    const bool baseline = a.feature() == "baseline";
    absl::StrAppend(
        &html,
        absl::StrFormat(
            "<tr><td>%s</td><td>%s</td><td>%s</td><td>%.4f %s</td><td>%s</td><td>%s</td></tr>",
            HtmlEscape(a.defense()), HtmlEscape(a.feature()), HtmlEscape(a.classifier()), a.auc(),
            Rerun(r, a.auc_rerun_low(), a.auc_rerun_high()),
            baseline ? "&ndash;"
                     : absl::StrFormat("%.4f %s", a.deg_count(),
                                       Rerun(r, a.deg_count_rerun_low(), a.deg_count_rerun_high())),
            baseline ? "&ndash;"
                     : absl::StrFormat("%.4f %s", a.deg_rate(),
                                       Rerun(r, a.deg_rate_rerun_low(), a.deg_rate_rerun_high()))));
  }
  absl::StrAppend(&html,
                  "</table><p>AUC: the attack, trained on shadow models, telling deleted samples "
                  "from samples in neither model on the target models. <em>baseline</em> is "
                  "classical membership inference on the original model alone; DegCount and "
                  "DegRate compare each attack with the baseline of the same defense and "
                  "classifier. In brackets, the 95% interval a re-run with other seeds would fall "
                  "in (bootstraps over the target and the shadow original models, the attacks "
                  "refitted on each shadow resample).</p>");
  return html;
}

absl::Status WriteUnlearningCsv(const v1::AuditResults& r, const std::string& dir) {
  const v1::UnlearningResults& u = r.unlearning();
  std::string attacks =
      "audit_id,defense,feature,classifier,auc,auc_low,auc_high,deg_count,deg_rate,"
      "deg_count_low,deg_count_high,deg_rate_low,deg_rate_high,auc_rerun_low,auc_rerun_high,"
      "deg_count_rerun_low,deg_count_rerun_high,deg_rate_rerun_low,deg_rate_rerun_high\n";
  for (const v1::UnlearningAttackResult& a : u.attacks()) {
    absl::StrAppend(
        &attacks,
        absl::StrFormat("%s,%s,%s,%s,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,"
                        "%.17g,%.17g,%.17g,%.17g,%.17g\n",
                        r.audit_id(), a.defense(), a.feature(), a.classifier(), a.auc(),
                        a.auc_low(), a.auc_high(), a.deg_count(), a.deg_rate(), a.deg_count_low(),
                        a.deg_count_high(), a.deg_rate_low(), a.deg_rate_high(), a.auc_rerun_low(),
                        a.auc_rerun_high(), a.deg_count_rerun_low(), a.deg_count_rerun_high(),
                        a.deg_rate_rerun_low(), a.deg_rate_rerun_high()));
  }
  const std::string summary = absl::StrCat(
      "audit_id,method,deletion,group_size,seed_policy,shadow_rows,target_rows,"
      "target_train_accuracy,target_test_accuracy,overfitting,models_trained,dp_epsilon\n",
      absl::StrFormat("%s,%s,%s,%u,%s,%u,%u,%.17g,%.17g,%.17g,%u,%.17g\n", r.audit_id(), u.method(),
                      u.deletion(), u.group_size(), u.seed_policy(), u.shadow_rows(),
                      u.target_rows(), u.target_train_accuracy(), u.target_test_accuracy(),
                      u.overfitting(), u.models_trained(), u.dp_epsilon()));
  MEMAUDIT_RETURN_IF_ERROR(WriteFile(dir + "/unlearning_attacks.csv", attacks));
  return WriteFile(dir + "/unlearning_summary.csv", summary);
}

namespace {

class Unlearning final : public KindHandler {
 public:
  std::string Table(const v1::AuditResults& results) const override {
    return UnlearningTable(results);
  }

  absl::Status WriteCsv(const v1::AuditResults& results, const std::string& dir) const override {
    return WriteUnlearningCsv(results, dir);
  }

  std::string HtmlSections(const v1::AuditResults& results) const override {
    return absl::StrCat(UnlearningPlotsHtml(results), UnlearningHtmlSection(results));
  }
};

}  // namespace

}  // namespace memaudit::cli

namespace memaudit {

template <>
const cli::KindHandler& HandlerOfKind<cli::KindHandler, v1::AuditSpec::kUnlearning>() {
  static const cli::Unlearning handler;
  return handler;
}

}  // namespace memaudit
