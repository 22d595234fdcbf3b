#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "audits/membership/attacks.h"
#include "audits/membership/cli_plots.h"
#include "audits/membership/tasks.h"
#include "cli/kind_handler.h"
#include "cli/render.h"
#include "common/base/status_macros.h"
#include "common/messages/audit_kinds.h"

namespace memaudit::cli {
namespace {

std::string FormatPercent(double value) { return absl::StrFormat("%g%%", value * 100); }

// A re-run interval as the tables print it; "n/a" where none is computed:
// with one target model there is no model-to-model spread to measure.
std::string Rerun(const v1::AuditResults& r, double lo, double hi) {
  if (membership::ScoresOneTarget(r.spec().membership())) return "n/a";
  return absl::StrFormat("[%.3f, %.3f]", lo, hi);
}

std::string NumbersTable(const v1::AuditResults& r) {
  std::string out =
      "<table><tr><th>attack</th><th>AUC [95% CI] {re-run}</th>"
      "<th>balanced accuracy [95% CI] {re-run}</th>";
  if (r.attacks_size() > 0) {
    for (const v1::OperatingPoint& p : r.attacks(0).operating_points()) {
      absl::StrAppend(&out, absl::StrFormat("<th>TPR at FPR &le; %g [95%% CI] {re-run}</th>"
                                            "<th>FPR reached</th>",
                                            p.fpr_target()));
    }
  }
  absl::StrAppend(&out, "</tr>");
  for (const v1::AttackResult& a : r.attacks()) {
    absl::StrAppend(
        &out, absl::StrFormat(
                  "<tr><td>%s</td><td>%.4f [%.4f, %.4f] {%s}</td>"
                  "<td>%.4f [%.4f, %.4f] {%s}</td>",
                  HtmlEscape(membership::AttackName(a.attack())), a.auc(), a.auc_low(),
                  a.auc_high(), Rerun(r, a.auc_rerun_low(), a.auc_rerun_high()),
                  a.balanced_accuracy(), a.balanced_accuracy_low(), a.balanced_accuracy_high(),
                  Rerun(r, a.balanced_accuracy_rerun_low(), a.balanced_accuracy_rerun_high())));
    for (const v1::OperatingPoint& p : a.operating_points()) {
      absl::StrAppend(
          &out,
          absl::StrFormat("<td>%.4f [%.4f, %.4f] {%s}</td><td>%.5f</td>", p.tpr(), p.tpr_low(),
                          p.tpr_high(), Rerun(r, p.tpr_rerun_low(), p.tpr_rerun_high()), p.fpr()));
    }
    absl::StrAppend(&out, "</tr>");
  }
  return out + "</table>";
}

std::string VulnerableTable(const v1::AuditResults& r) {
  if (r.most_vulnerable().empty()) return "";
  std::string out = absl::StrFormat(
      "<h2>Most exposed examples</h2><p>Ranked by how many of the models that trained on an "
      "example flag it as a member with <code>%s</code> at FPR &le; %g.</p><table><tr>"
      "<th>rank</th><th>pool index</th><th>dataset index</th><th>flagged / member models</th>"
      "<th>mean member score</th></tr>",
      HtmlEscape(membership::AttackName(r.vulnerability_attack())), r.vulnerability_fpr());
  for (int i = 0; i < r.most_vulnerable_size(); ++i) {
    const v1::VulnerableExample& v = r.most_vulnerable(i);
    absl::StrAppend(&out, absl::StrFormat("<tr><td>%d</td><td>%u</td><td>%u</td><td>%u / %u</td>"
                                          "<td>%.3f</td></tr>",
                                          i + 1, v.pool_index(), v.dataset_index(), v.detected(),
                                          v.member_models(), v.mean_member_score()));
  }
  return out + "</table>";
}

class Membership final : public KindHandler {
 public:
  std::string Table(const v1::AuditResults& r) const override {
    std::string out = absl::StrFormat(
        "audit %s (%s): %u models x %u examples, %u member / %u non-member scores\n\n",
        r.audit_id(), AuditKindName(r.kind()), r.models(), r.examples(), r.members(),
        r.non_members());
    if (r.spec().membership().has_target()) {
      // The models above are the references; the scores are the given model's.
      const v1::TargetModelSpec& t = r.spec().membership().target();
      out.insert(out.size() - 1,
                 r.spec().membership().has_documents()
                     ? absl::StrFormat("target: %s, trained on the %u lines of %s (%s)\n",
                                       t.torchscript_path(), t.members(), t.members_path(),
                                       t.content_hash())
                     : absl::StrFormat("target: %s, trained on %u rows listed in %s (%s)\n",
                                       t.torchscript_path(), t.members(), t.members_path(),
                                       t.content_hash()));
    }
    // Each number with the interval a re-run would fall in (scoring/rerun_interval.h).
    std::string header = absl::StrFormat("%-28s %7s %-14s %7s %-14s", "attack", "AUC",
                                         " re-run 95%", "bal.acc", " re-run 95%");
    if (r.attacks_size() > 0) {
      for (const v1::OperatingPoint& p : r.attacks(0).operating_points()) {
        absl::StrAppend(
            &header, absl::StrFormat(" %11s %-14s", "TPR@" + FormatPercent(p.fpr_target()) + "FPR",
                                     " re-run 95%"));
      }
    }
    while (!header.empty() && header.back() == ' ') header.pop_back();
    absl::StrAppend(&out, header, "\n", std::string(header.size(), '-'), "\n");
    for (const v1::AttackResult& a : r.attacks()) {
      std::string row = absl::StrFormat(
          "%-28s %7.4f %-14s %7.4f %-14s", membership::AttackName(a.attack()), a.auc(),
          Rerun(r, a.auc_rerun_low(), a.auc_rerun_high()), a.balanced_accuracy(),
          Rerun(r, a.balanced_accuracy_rerun_low(), a.balanced_accuracy_rerun_high()));
      for (const v1::OperatingPoint& p : a.operating_points()) {
        absl::StrAppend(&row, absl::StrFormat(" %11.4f %-14s", p.tpr(),
                                              Rerun(r, p.tpr_rerun_low(), p.tpr_rerun_high())));
      }
      while (!row.empty() && row.back() == ' ') row.pop_back();
      absl::StrAppend(&out, row, "\n");
    }
    absl::StrAppend(&out,
                    "\nTPR@x: the largest TPR over thresholds whose FPR is <= x, pooled over "
                    "every (target model, example) pair. [a, b]: the 95% interval a re-run with "
                    "another seed would fall in (docs/scoring.md).\n");
    return out;
  }

  absl::Status WriteCsv(const v1::AuditResults& r, const std::string& dir) const override {
    std::string attacks =
        "audit_id,attack,auc,auc_low,auc_high,balanced_accuracy,balanced_accuracy_low,"
        "balanced_accuracy_high\n";
    std::string points =
        "audit_id,attack,fpr_target,tpr,tpr_low,tpr_high,fpr,fpr_low,fpr_high,threshold\n";
    std::string roc = "audit_id,attack,fpr,tpr\n";
    for (const v1::AttackResult& a : r.attacks()) {
      absl::StrAppend(
          &attacks, absl::StrFormat("%s,%s,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n", r.audit_id(),
                                    membership::AttackName(a.attack()), a.auc(), a.auc_low(),
                                    a.auc_high(), a.balanced_accuracy(), a.balanced_accuracy_low(),
                                    a.balanced_accuracy_high()));
      for (const v1::OperatingPoint& p : a.operating_points()) {
        absl::StrAppend(&points,
                        absl::StrFormat("%s,%s,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n",
                                        r.audit_id(), membership::AttackName(a.attack()),
                                        p.fpr_target(), p.tpr(), p.tpr_low(), p.tpr_high(), p.fpr(),
                                        p.fpr_low(), p.fpr_high(), p.threshold()));
      }
      for (const v1::RocPoint& p : a.roc()) {
        absl::StrAppend(&roc,
                        absl::StrFormat("%s,%s,%.17g,%.17g\n", r.audit_id(),
                                        membership::AttackName(a.attack()), p.fpr(), p.tpr()));
      }
    }
    MEMAUDIT_RETURN_IF_ERROR(WriteFile(dir + "/attacks.csv", attacks));
    MEMAUDIT_RETURN_IF_ERROR(WriteFile(dir + "/operating_points.csv", points));
    return WriteFile(dir + "/roc.csv", roc);
  }

  std::string HtmlSections(const v1::AuditResults& results) const override {
    return absl::StrCat(
        "<h2>ROC, log-log</h2>", RocSvg(results),
        "<p>Dashed red lines: the FPR operating points. Dashed grey: chance.</p>",
        "<h2>Numbers</h2>", NumbersTable(results),
        "<p>TPR at FPR &le; x is the largest TPR over thresholds whose FPR is at most "
        "x, with 95% Clopper&ndash;Pearson intervals, pooled over every (target model, "
        "example) pair. The balanced accuracy's interval is a bootstrap over examples that "
        "allows for the threshold being chosen on the same scores. These [intervals] are for "
        "the sampling of examples; {re-run} is the 95% interval the number of a re-run with "
        "another seed (other models, halves and pool) would fall in: a two-way bootstrap over "
        "target models and examples, widened by &radic;2 (docs/scoring.md).</p>",
        VulnerableTable(results));
  }
};

}  // namespace

}  // namespace memaudit::cli

namespace memaudit {

template <>
const cli::KindHandler& HandlerOfKind<cli::KindHandler, v1::AuditSpec::kMembership>() {
  static const cli::Membership handler;
  return handler;
}

}  // namespace memaudit
