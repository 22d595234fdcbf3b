#include "cli/gates.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/render.h"

namespace memaudit::cli {
namespace {

std::string OutcomeName(v1::GateOutcome outcome) {
  switch (outcome) {
    case v1::GATE_PASS:
      return "PASS";
    case v1::GATE_FAIL:
      return "FAIL";
    case v1::GATE_INCONCLUSIVE:
      return "INCONCLUSIVE";
    default:
      return "UNKNOWN";
  }
}

std::string Condition(const v1::GateVerdict& g) {
  return absl::StrFormat("%s %s %g", g.metric(), g.bound(), g.limit());
}

}  // namespace

std::string GateLines(const v1::AuditResults& results) {
  std::string out;
  for (const v1::GateVerdict& g : results.gates()) {
    absl::StrAppend(&out, absl::StrFormat("gate %s: %s (%.4g: %s)\n", Condition(g),
                                          OutcomeName(g.outcome()), g.value(), g.reason()));
  }
  return out;
}

std::string GatesHtml(const v1::AuditResults& results) {
  if (results.gates_size() == 0) return "";
  std::string html =
      "<h2>Gates</h2><table><tr><th>gate</th><th>verdict</th><th>value [95% interval]</th>"
      "<th>why</th></tr>";
  for (const v1::GateVerdict& g : results.gates()) {
    absl::StrAppend(&html, "<tr><td>", HtmlEscape(Condition(g)), "</td><td><b>",
                    OutcomeName(g.outcome()), "</b></td><td>",
                    absl::StrFormat("%.4g [%.4g, %.4g]", g.value(), g.low(), g.high()), "</td><td>",
                    HtmlEscape(g.reason()), "</td></tr>");
  }
  absl::StrAppend(&html, "</table>");
  return html;
}

int GateExitCode(const v1::AuditResults& results) {
  bool inconclusive = false;
  for (const v1::GateVerdict& g : results.gates()) {
    if (g.outcome() == v1::GATE_FAIL) return kExitGateFailed;
    if (g.outcome() != v1::GATE_PASS) inconclusive = true;
  }
  return inconclusive ? kExitGateInconclusive : 0;
}

}  // namespace memaudit::cli
