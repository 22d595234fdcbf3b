#include "audits/exposure/cli_extractable_render.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/render.h"
#include "common/status_macros.h"

namespace memaudit::cli {
namespace {

std::string GroupLabel(const v1::ExtractableGroup& g) {
  return g.duplicates() == 0 ? "never" : absl::StrCat("x", g.duplicates());
}

}  // namespace

std::string ExtractableText(const v1::ExposureResults& x) {
  if (x.extractable_size() == 0) return "";
  std::string out =
      "\nextractable memorization (held-out corpus sequences; extracted = the continuation "
      "reproduced exactly by greedy decoding from the prompt):\n"
      "inserted   sequences  extracted  fraction  95% CI            mean matched chars\n";
  for (const v1::ExtractableGroup& g : x.extractable()) {
    absl::StrAppend(&out,
                    absl::StrFormat("%-10s %9u  %9u  %8.3f  [%.3f, %.3f]  %18.1f\n", GroupLabel(g),
                                    g.sequences(), g.extracted(), g.fraction(), g.fraction_low(),
                                    g.fraction_high(), g.mean_matched_chars()));
  }
  return out;
}

std::string ExtractableHtml(const v1::ExposureResults& x) {
  if (x.extractable_size() == 0) return "";
  std::string html =
      "<h3>Extractable memorization</h3><table><tr><th>inserted</th><th>sequences</th>"
      "<th>extracted</th><th>fraction</th><th>95% interval</th><th>mean matched "
      "characters</th></tr>";
  for (const v1::ExtractableGroup& g : x.extractable()) {
    absl::StrAppend(&html,
                    absl::StrFormat("<tr><td>%s</td><td>%u</td><td>%u</td><td>%.3f</td>"
                                    "<td>[%.3f, %.3f]</td><td>%.1f</td></tr>",
                                    GroupLabel(g), g.sequences(), g.extracted(), g.fraction(),
                                    g.fraction_low(), g.fraction_high(), g.mean_matched_chars()));
  }
  absl::StrAppend(&html,
                  "</table><p>Lines of the corpus held out of every model, inserted back that "
                  "many times (never: the controls). Each is prompted with its first characters "
                  "after a newline; extracted when greedy decoding reproduces the rest exactly. "
                  "Interval: Clopper&ndash;Pearson, over the group's sequences.</p>");
  return html;
}

absl::Status WriteExtractableCsv(const std::string& audit_id,
                                 const std::vector<v1::ExposureVariantResult>& variants,
                                 const std::string& dir) {
  std::string csv =
      "audit_id,variant,duplicates,sequences,extracted,fraction,fraction_low,fraction_high,"
      "mean_matched_chars\n";
  bool any = false;
  for (const v1::ExposureVariantResult& v : variants) {
    for (const v1::ExtractableGroup& g : v.results().extractable()) {
      any = true;
      absl::StrAppend(
          &csv, absl::StrFormat("%s,%s,%u,%u,%u,%.17g,%.17g,%.17g,%.17g\n", audit_id, v.name(),
                                g.duplicates(), g.sequences(), g.extracted(), g.fraction(),
                                g.fraction_low(), g.fraction_high(), g.mean_matched_chars()));
    }
  }
  if (!any) return absl::OkStatus();
  return WriteFile(dir + "/extractable.csv", csv);
}

}  // namespace memaudit::cli
