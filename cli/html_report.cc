#include "cli/html_report.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "cli/gates.h"
#include "cli/kind_handler.h"
#include "cli/render.h"
#include "common/base/version.h"

namespace memaudit::cli {
namespace {

std::string FormatTime(int64_t unix_ms) {
  std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&seconds));
  return text;
}

// The runs this audit did not train, each with the audit, task, lease and
// worker that did (docs/security.md, "Reuse only what was confirmed").
std::string ReusedSection(const v1::AuditResults& results) {
  if (results.reused().empty()) return "";
  std::string html = absl::StrCat(
      "<h2>Reused runs</h2><p>", results.reused_size(),
      " run(s) were trained by earlier audits of the same recipe:</p><table><tr><th>run</th>"
      "<th>from audit</th><th>its run</th><th>task</th><th>lease</th><th>worker</th></tr>");
  for (const v1::ReusedRun& r : results.reused()) {
    absl::StrAppend(&html, "<tr><td>", r.run(), "</td><td>", HtmlEscape(r.from_audit_id()),
                    "</td><td>", r.from_run(), "</td><td>", HtmlEscape(r.from_task()), "</td><td>",
                    r.from_lease(), "</td><td>", HtmlEscape(r.from_worker()), "</td></tr>");
  }
  return absl::StrCat(html, "</table>");
}

}  // namespace

std::string HtmlReport(const v1::Audit& audit, const v1::AuditResults& results) {
  // The audit names its kind even when the results are a placeholder.
  const KindHandler* kind = HandlerFor(KindOfApi(audit.kind()));
  const v1::Resources& resources =
      results.has_spec() ? results.spec().resources() : audit.spec().resources();
  std::string html = absl::StrCat(
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>memaudit report ",
      HtmlEscape(audit.audit_id()),
      "</title><style>body{font-family:sans-serif;margin:2em;color:#222;max-width:70em}"
      "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
      "padding:.3em .6em;text-align:right}td:first-child,th:first-child{text-align:left}"
      "pre{background:#f6f6f6;padding:1em;overflow:auto}"
      ".warnings{background:#fff4d6;border-left:4px solid #d89a00;padding:.2em "
      "1em}</style></head><body>");
  absl::StrAppend(&html, "<h1>memaudit: ", HtmlEscape(AuditKindName(audit.kind())), " audit ",
                  HtmlEscape(audit.name()), "</h1>");
  absl::StrAppend(
      &html, "<table class=\"meta\">",
      absl::StrFormat("<tr><th>audit</th><td>%s</td></tr>", HtmlEscape(audit.audit_id())),
      absl::StrFormat("<tr><th>state</th><td>%s</td></tr>", StateName(audit.state())),
      absl::StrFormat("<tr><th>seed</th><td>%d</td></tr>", audit.spec().seed()),
      // An archived results document (memaudit report FILE.json) has no time.
      audit.created_unix_ms() == 0 ? ""
                                   : absl::StrFormat("<tr><th>submitted</th><td>%s</td></tr>",
                                                     FormatTime(audit.created_unix_ms())),
      kind != nullptr ? kind->HtmlSizeRows(results) : "",
      absl::StrFormat("<tr><th>numerics</th><td>%s</td></tr>", HtmlEscape(NumericsLine(resources))),
      resources.numeric_environments().empty()
          ? ""
          : absl::StrFormat("<tr><th>trained on</th><td>%s</td></tr>",
                            absl::StrJoin(resources.numeric_environments(), "<br>",
                                          [](std::string* out, const std::string& environment) {
                                            out->append(HtmlEscape(environment));
                                          })),
      // The code that scored the results, when they say; else this report's.
      absl::StrFormat("<tr><th>code version</th><td>%s</td></tr>",
                      HtmlEscape(results.version().empty() ? CodeVersion() : results.version())),
      "</table>");
  if (results.warnings_size() > 0) {
    absl::StrAppend(&html, "<div class=\"warnings\"><h2>Warnings</h2><ul>");
    for (const v1::ResultWarning& w : results.warnings()) {
      absl::StrAppend(&html, "<li><code>", HtmlEscape(w.code()),
                      "</code>: ", HtmlEscape(w.message()), "</li>");
    }
    absl::StrAppend(&html, "</ul></div>");
  }
  absl::StrAppend(&html, GatesHtml(results));
  if (!results.error().empty()) {
    absl::StrAppend(&html, "<p><strong>The audit cannot be scored:</strong> ",
                    HtmlEscape(results.error()), "</p>");
  } else if (!results.complete()) {
    absl::StrAppend(&html, "<p><strong>Results are not complete yet.</strong></p>");
  } else if (kind != nullptr) {
    absl::StrAppend(&html, kind->HtmlSections(results));
  }
  absl::StrAppend(&html, ReusedSection(results));
  absl::StrAppend(&html, "<h2>Spec</h2><pre>", HtmlEscape(JsonToYaml(ToJson(audit.spec()))),
                  "</pre></body></html>\n");
  return html;
}

}  // namespace memaudit::cli
