#include "cli/html_report.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "cli/exposure_render.h"
#include "cli/forgetting_render.h"
#include "cli/render.h"

namespace memaudit::cli {
namespace {

constexpr const char* kColors[] = {"#1b6ca8", "#d1495b", "#2e933c",
                                   "#8e5cc2", "#e08e0b", "#4a4a4a"};
constexpr double kMinLog = -5;  // axes run from 1e-5 to 1

std::string Escape(const std::string& text) {
  return absl::StrReplaceAll(text,
                             {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

// Maps a rate to a pixel on a log axis; zero is drawn at the axis floor.
double LogPosition(double rate, double length) {
  const double clamped = std::max(rate, std::pow(10.0, kMinLog));
  return (std::log10(clamped) - kMinLog) / -kMinLog * length;
}

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
                                          Escape(a.attack()), a.auc(), a.balanced_accuracy()));
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
      Escape(r.vulnerability_attack()), r.vulnerability_fpr());
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

std::string CodeVersion() {
  return absl::StrCat(MEMAUDIT_VERSION, " (commit ", MEMAUDIT_GIT_COMMIT, ")");
}

std::string RocSvg(const v1::AuditResults& r) {
  const double w = 520, h = 420, left = 60, top = 20, plot_w = 420, plot_h = 340;
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" role=\"img\" "
      "aria-label=\"ROC curves, log-log\" class=\"roc\">",
      w, h);
  auto x = [&](double fpr) { return left + LogPosition(fpr, plot_w); };
  auto y = [&](double tpr) { return top + plot_h - LogPosition(tpr, plot_h); };
  absl::StrAppend(&svg, absl::StrFormat("<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" "
                                        "fill=\"#fff\" stroke=\"#999\"/>",
                                        left, top, plot_w, plot_h));
  for (int e = static_cast<int>(kMinLog); e <= 0; ++e) {
    const double v = std::pow(10.0, e);
    absl::StrAppend(
        &svg, absl::StrFormat("<line x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" stroke=\"#eee\"/>"
                              "<line x1=\"%g\" y1=\"%.1f\" x2=\"%g\" y2=\"%.1f\" stroke=\"#eee\"/>"
                              "<text x=\"%.1f\" y=\"%g\" font-size=\"11\" text-anchor=\"middle\">"
                              "1e%d</text><text x=\"%g\" y=\"%.1f\" font-size=\"11\" "
                              "text-anchor=\"end\">1e%d</text>",
                              x(v), top, x(v), top + plot_h, left, y(v), left + plot_w, y(v), x(v),
                              top + plot_h + 15, e, left - 5, y(v) + 4, e));
  }
  // Chance: TPR = FPR.
  absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                                        "stroke=\"#aaa\" stroke-dasharray=\"4 4\"/>",
                                        x(1e-5), y(1e-5), x(1), y(1)));
  if (r.attacks_size() > 0) {
    for (const v1::OperatingPoint& p : r.attacks(0).operating_points()) {
      absl::StrAppend(&svg,
                      absl::StrFormat("<line x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" "
                                      "stroke=\"#c33\" stroke-dasharray=\"2 3\"/>",
                                      x(p.fpr_target()), top, x(p.fpr_target()), top + plot_h));
    }
  }
  for (int i = 0; i < r.attacks_size(); ++i) {
    const v1::AttackResult& a = r.attacks(i);
    const char* color = kColors[i % 6];
    std::string points;
    for (const v1::RocPoint& p : a.roc()) {
      if (p.fpr() <= 0 || p.tpr() <= 0) continue;
      absl::StrAppend(&points, absl::StrFormat("%.1f,%.1f ", x(p.fpr()), y(p.tpr())));
    }
    absl::StrAppend(&svg, absl::StrFormat("<polyline class=\"curve\" points=\"%s\" fill=\"none\" "
                                          "stroke=\"%s\" stroke-width=\"1.6\"/>",
                                          points, color));
    absl::StrAppend(&svg, absl::StrFormat("<rect x=\"%g\" y=\"%d\" width=\"12\" height=\"3\" "
                                          "fill=\"%s\"/><text x=\"%g\" y=\"%d\" font-size=\"11\">"
                                          "%s (AUC %.3f)</text>",
                                          left + 10, 30 + 15 * i, color, left + 27, 35 + 15 * i,
                                          Escape(a.attack()), a.auc()));
  }
  absl::StrAppend(&svg,
                  absl::StrFormat("<text x=\"%g\" y=\"%g\" font-size=\"12\" "
                                  "text-anchor=\"middle\">false positive rate</text>"
                                  "<text x=\"14\" y=\"%g\" font-size=\"12\" "
                                  "text-anchor=\"middle\" transform=\"rotate(-90 14 %g)\">"
                                  "true positive rate</text></svg>",
                                  left + plot_w / 2, h - 25, top + plot_h / 2, top + plot_h / 2));
  return svg;
}

std::string HtmlReport(const v1::Audit& audit, const v1::AuditResults& results) {
  std::string html = absl::StrCat(
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>memaudit report ",
      Escape(audit.audit_id()),
      "</title><style>body{font-family:sans-serif;margin:2em;color:#222;max-width:70em}"
      "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
      "padding:.3em .6em;text-align:right}td:first-child,th:first-child{text-align:left}"
      "pre{background:#f6f6f6;padding:1em;overflow:auto}</style></head><body>");
  absl::StrAppend(&html, "<h1>memaudit: ", Escape(audit.kind()), " audit ", Escape(audit.name()),
                  "</h1>");
  absl::StrAppend(
      &html, "<table class=\"meta\">",
      absl::StrFormat("<tr><th>audit</th><td>%s</td></tr>", Escape(audit.audit_id())),
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
                absl::StrFormat("<tr><th>member / non-member scores</th><td>%d / %d</td></tr>",
                                results.members(), results.non_members())),
      absl::StrFormat("<tr><th>code version</th><td>%s</td></tr>", Escape(CodeVersion())),
      "</table>");
  if (!results.complete()) {
    absl::StrAppend(&html, "<p><strong>Results are not complete yet.</strong></p>");
  } else if (results.has_exposure()) {
    absl::StrAppend(&html, ExposureHtmlSection(results));
  } else if (results.has_forgetting()) {
    absl::StrAppend(&html, ForgettingHtmlSection(results));
  } else {
    absl::StrAppend(&html, "<h2>ROC, log-log</h2>", RocSvg(results),
                    "<p>Dashed red lines: the FPR operating points. Dashed grey: chance.</p>",
                    "<h2>Numbers</h2>", NumbersTable(results),
                    "<p>TPR at FPR &le; x is the largest TPR over thresholds whose FPR is at most "
                    "x, with 95% Clopper&ndash;Pearson intervals, pooled over every (target model, "
                    "example) pair.</p>",
                    VulnerableTable(results));
  }
  absl::StrAppend(&html, "<h2>Spec</h2><pre>", Escape(JsonToYaml(ToJson(audit.spec()))),
                  "</pre></body></html>\n");
  return html;
}

}  // namespace memaudit::cli
