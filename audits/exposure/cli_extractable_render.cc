#include "audits/exposure/cli_extractable_render.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/render.h"
#include "cli/report_plots.h"
#include "cli/svg_plot.h"
#include "common/base/status_macros.h"

namespace memaudit::cli {
namespace {

std::string GroupLabel(const v1::ExtractableGroup& g) {
  return g.duplicates() == 0 ? "never" : absl::StrCat("x", g.duplicates());
}

// The attacks of the first group that has them (every inserted group has
// the same ones); empty when none does.
const google::protobuf::RepeatedPtrField<v1::SequenceMembership>* MembershipColumns(
    const v1::ExposureResults& x) {
  for (const v1::ExtractableGroup& g : x.extractable()) {
    if (g.membership_size() > 0) return &g.membership();
  }
  return nullptr;
}

}  // namespace

std::string ExtractableText(const v1::ExposureResults& x) {
  if (x.extractable_size() == 0) return "";
  std::string out =
      "\nextractable memorization (held-out corpus sequences; extracted = the continuation "
      "reproduced exactly by greedy decoding from the prompt):\n"
      "inserted   sequences  extracted  fraction  95% CI            mean matched tokens\n";
  for (const v1::ExtractableGroup& g : x.extractable()) {
    absl::StrAppend(&out,
                    absl::StrFormat("%-10s %9u  %9u  %8.3f  [%.3f, %.3f]  %18.1f\n", GroupLabel(g),
                                    g.sequences(), g.extracted(), g.fraction(), g.fraction_low(),
                                    g.fraction_high(), g.mean_matched_chars()));
  }
  const auto* columns = MembershipColumns(x);
  if (columns == nullptr) return out;
  absl::StrAppend(&out,
                  "membership of the same sequences (AUC against the never-inserted, 95% "
                  "interval):\n");
  // Columns of 20; a row ends at its last value, not in padding.
  std::string header = "inserted   ";
  for (const v1::SequenceMembership& m : *columns) {
    absl::StrAppend(&header, absl::StrFormat("%-20s", m.attack()));
  }
  absl::StrAppend(&out, absl::StripTrailingAsciiWhitespace(header), "\n");
  for (const v1::ExtractableGroup& g : x.extractable()) {
    if (g.membership_size() == 0) continue;
    std::string row = absl::StrFormat("%-10s ", GroupLabel(g));
    for (const v1::SequenceMembership& m : g.membership()) {
      absl::StrAppend(&row, absl::StrFormat("%-20s", absl::StrFormat("%.2f [%.2f, %.2f]", m.auc(),
                                                                     m.auc_low(), m.auc_high())));
    }
    absl::StrAppend(&out, absl::StripTrailingAsciiWhitespace(row), "\n");
  }
  return out;
}

std::string ExtractableHtml(const v1::ExposureResults& x) {
  if (x.extractable_size() == 0) return "";
  std::string html =
      "<h3>Extractable memorization</h3><table><tr><th>inserted</th><th>sequences</th>"
      "<th>extracted</th><th>fraction</th><th>95% interval</th><th>mean matched "
      "tokens</th></tr>";
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
  const auto* columns = MembershipColumns(x);
  if (columns == nullptr) return html;
  absl::StrAppend(&html, "<table><tr><th>inserted</th>");
  for (const v1::SequenceMembership& m : *columns) {
    absl::StrAppend(&html, "<th>", m.attack(), " AUC</th>");
  }
  absl::StrAppend(&html, "</tr>");
  for (const v1::ExtractableGroup& g : x.extractable()) {
    if (g.membership_size() == 0) continue;
    absl::StrAppend(&html, "<tr><td>", GroupLabel(g), "</td>");
    for (const v1::SequenceMembership& m : g.membership()) {
      absl::StrAppend(
          &html, absl::StrFormat("<td>%.3f [%.3f, %.3f]</td>", m.auc(), m.auc_low(), m.auc_high()));
    }
    absl::StrAppend(&html, "</tr>");
  }
  absl::StrAppend(&html,
                  "</table><p>Membership attacks on the same sequences: how well each score "
                  "(loss, zlib ratio, Min-K%, Min-K%++; with reference models, the "
                  "reference-calibrated loss and offline LiRA) tells a group's sequences from "
                  "the never-inserted ones, by AUC (95% score-type interval).</p>");
  return html;
}

std::string ExtractableSvg(const v1::ExposureResults& x) {
  if (x.extractable_size() == 0) return "";
  double most = 1;
  for (const v1::ExtractableGroup& g : x.extractable())
    most = std::max<double>(most, g.duplicates());
  const svg::Frame frame = PageFrame();
  svg::Plot plot(frame, svg::Plot::XAxisFor(frame, svg::Scale::kLog1p, 0, most),
                 svg::Plot::YAxisFor(frame, svg::Scale::kLinear, 0, 1),
                 "extractable memorization against insertions", "extractable");
  plot.XTicks(svg::Log1pTicks(most), "times inserted (0: never)");
  plot.YTicks(svg::LinearTicks(0, 1, 5), "fraction extracted");
  // Groups in ascending insertions, the controls (0) first.
  std::vector<const v1::ExtractableGroup*> groups;
  for (const v1::ExtractableGroup& g : x.extractable()) groups.push_back(&g);
  std::sort(groups.begin(), groups.end(),
            [](const auto* a, const auto* b) { return a->duplicates() < b->duplicates(); });
  std::vector<double> xs, low, high;
  std::vector<svg::Point> line;
  for (const v1::ExtractableGroup* g : groups) {
    const double at = g->duplicates();
    xs.push_back(at);
    low.push_back(g->fraction_low());
    high.push_back(g->fraction_high());
    line.push_back({at, g->fraction()});
    plot.Dot(
        line.back(), svg::Color(0), "",
        absl::StrFormat("%s: %u of %u extracted, [%s, %s]", GroupLabel(*g), g->extracted(),
                        g->sequences(), Fixed(g->fraction_low(), 3), Fixed(g->fraction_high(), 3)),
        /*hollow=*/g->duplicates() == 0);
  }
  plot.Band(xs, low, high, svg::Color(0), "band", "95% interval");
  plot.Line(line, {svg::Color(0), 1.6, ""}, "curve", "fraction extracted");
  plot.Legend({{"fraction extracted", svg::Color(0), svg::LegendEntry::Kind::kLine},
               {"95% interval", svg::Color(0), svg::LegendEntry::Kind::kBox}},
              svg::Corner::kOutsideRight);
  return plot.Finish();
}

absl::Status WriteExtractableCsv(const std::string& audit_id,
                                 const std::vector<v1::ExposureVariantResult>& variants,
                                 const std::string& dir) {
  std::string csv =
      "audit_id,variant,duplicates,sequences,extracted,fraction,fraction_low,fraction_high,"
      "mean_matched_chars\n";
  std::string membership = "audit_id,variant,duplicates,attack,auc,auc_low,auc_high\n";
  bool any = false;
  for (const v1::ExposureVariantResult& v : variants) {
    for (const v1::ExtractableGroup& g : v.results().extractable()) {
      any = true;
      absl::StrAppend(
          &csv, absl::StrFormat("%s,%s,%u,%u,%u,%.17g,%.17g,%.17g,%.17g\n", audit_id, v.name(),
                                g.duplicates(), g.sequences(), g.extracted(), g.fraction(),
                                g.fraction_low(), g.fraction_high(), g.mean_matched_chars()));
      for (const v1::SequenceMembership& m : g.membership()) {
        absl::StrAppend(&membership, absl::StrFormat("%s,%s,%u,%s,%.17g,%.17g,%.17g\n", audit_id,
                                                     v.name(), g.duplicates(), m.attack(), m.auc(),
                                                     m.auc_low(), m.auc_high()));
      }
    }
  }
  if (!any) return absl::OkStatus();
  MEMAUDIT_RETURN_IF_ERROR(WriteFile(dir + "/extractable_membership.csv", membership));
  return WriteFile(dir + "/extractable.csv", csv);
}

}  // namespace memaudit::cli
