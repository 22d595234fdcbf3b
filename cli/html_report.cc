#include "cli/html_report.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "cli/exposure_render.h"
#include "cli/forgetting_render.h"
#include "cli/relational_render.h"
#include "cli/render.h"
#include "cli/report_plots.h"
#include "cli/unlearning_render.h"
#include "common/version.h"

namespace memaudit::cli {
namespace {

std::string FormatTime(int64_t unix_ms) {
  std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&seconds));
  return text;
}

std::string NumbersTable(const v1::AuditResults& r) {
  std::string out = "<table><tr><th>attack</th><th>AUC</th><th>balanced accuracy</th>";
  if (r.attacks_size() > 0) {
    for (const v1::OperatingPoint& p : r.attacks(0).operating_points()) {
      absl::StrAppend(&out, absl::StrFormat("<th>TPR at FPR &le; %g [95%% CI]</th>"
                                            "<th>FPR reached</th>",
                                            p.fpr_target()));
    }
  }
  absl::StrAppend(&out, "</tr>");
  for (const v1::AttackResult& a : r.attacks()) {
    absl::StrAppend(&out, absl::StrFormat("<tr><td>%s</td><td>%.4f</td><td>%.4f</td>",
                                          HtmlEscape(a.attack()), a.auc(), a.balanced_accuracy()));
    for (const v1::OperatingPoint& p : a.operating_points()) {
      absl::StrAppend(&out, absl::StrFormat("<td>%.4f [%.4f, %.4f]</td><td>%.5f</td>", p.tpr(),
                                            p.tpr_low(), p.tpr_high(), p.fpr()));
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
      HtmlEscape(r.vulnerability_attack()), r.vulnerability_fpr());
  for (int i = 0; i < r.most_vulnerable_size(); ++i) {
    const v1::VulnerableExample& v = r.most_vulnerable(i);
    absl::StrAppend(&out, absl::StrFormat("<tr><td>%d</td><td>%u</td><td>%u</td><td>%u / %u</td>"
                                          "<td>%.3f</td></tr>",
                                          i + 1, v.pool_index(), v.dataset_index(), v.detected(),
                                          v.member_models(), v.mean_member_score()));
  }
  return out + "</table>";
}

}  // namespace

std::string HtmlReport(const v1::Audit& audit, const v1::AuditResults& results) {
  std::string html = absl::StrCat(
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>memaudit report ",
      HtmlEscape(audit.audit_id()),
      "</title><style>body{font-family:sans-serif;margin:2em;color:#222;max-width:70em}"
      "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
      "padding:.3em .6em;text-align:right}td:first-child,th:first-child{text-align:left}"
      "pre{background:#f6f6f6;padding:1em;overflow:auto}</style></head><body>");
  absl::StrAppend(&html, "<h1>memaudit: ", HtmlEscape(audit.kind()), " audit ",
                  HtmlEscape(audit.name()), "</h1>");
  absl::StrAppend(
      &html, "<table class=\"meta\">",
      absl::StrFormat("<tr><th>audit</th><td>%s</td></tr>", HtmlEscape(audit.audit_id())),
      absl::StrFormat("<tr><th>state</th><td>%s</td></tr>", StateName(audit.state())),
      absl::StrFormat("<tr><th>seed</th><td>%d</td></tr>", audit.spec().seed()),
      absl::StrFormat("<tr><th>submitted</th><td>%s</td></tr>",
                      FormatTime(audit.created_unix_ms())),
      results.has_exposure()
          ? absl::StrFormat("<tr><th>models &times; canaries</th><td>%u &times; %u</td></tr>",
                            results.models(), results.examples())
          : absl::StrCat(
                absl::StrFormat("<tr><th>models &times; examples</th><td>%u &times; %u</td></tr>",
                                results.models(), results.examples()),
                absl::StrFormat("<tr><th>%s</th><td>%d / %d</td></tr>",
                                results.has_relational() ? "training / held-out records"
                                                         : "member / non-member scores",
                                results.members(), results.non_members())),
      absl::StrFormat("<tr><th>code version</th><td>%s</td></tr>", HtmlEscape(CodeVersion())),
      "</table>");
  if (!results.complete()) {
    absl::StrAppend(&html, "<p><strong>Results are not complete yet.</strong></p>");
  } else if (results.has_exposure()) {
    absl::StrAppend(&html, ExposurePlotsHtml(results), ExposureHtmlSection(results));
  } else if (results.has_forgetting()) {
    absl::StrAppend(&html, ForgettingPlotsHtml(results), ForgettingHtmlSection(results));
  } else if (results.has_unlearning()) {
    absl::StrAppend(&html, UnlearningPlotsHtml(results), UnlearningHtmlSection(results));
  } else if (results.has_relational()) {
    absl::StrAppend(&html, RelationalPlotsHtml(results), RelationalHtmlSection(results));
  } else {
    absl::StrAppend(&html, "<h2>ROC, log-log</h2>", RocSvg(results),
                    "<p>Dashed red lines: the FPR operating points. Dashed grey: chance.</p>",
                    "<h2>Numbers</h2>", NumbersTable(results),
                    "<p>TPR at FPR &le; x is the largest TPR over thresholds whose FPR is at most "
                    "x, with 95% Clopper&ndash;Pearson intervals, pooled over every (target model, "
                    "example) pair.</p>",
                    VulnerableTable(results));
  }
  absl::StrAppend(&html, "<h2>Spec</h2><pre>", HtmlEscape(JsonToYaml(ToJson(audit.spec()))),
                  "</pre></body></html>\n");
  return html;
}

}  // namespace memaudit::cli
