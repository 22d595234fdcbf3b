#include "audits/relational/cli_render.h"

#include <fstream>
#include <map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "audits/relational/cli_plots.h"
#include "cli/render.h"

namespace memaudit::cli {
namespace {

constexpr size_t kTableSteps = 12;

bool Linear(const v1::RelationalResults& r) { return r.model() == "linear"; }

// The points of one curve grouped by step (ascending), metric -> point.
std::vector<std::pair<uint64_t, std::map<std::string, const v1::RelationalPoint*>>> ByStep(
    const v1::RelationalCurve& c) {
  std::vector<std::pair<uint64_t, std::map<std::string, const v1::RelationalPoint*>>> out;
  for (const v1::RelationalPoint& p : c.points()) {
    if (out.empty() || out.back().first != p.step()) out.push_back({p.step(), {}});
    out.back().second[p.metric()] = &p;
  }
  return out;
}

// About kTableSteps evenly spaced rows, always the first and the last.
std::vector<size_t> Thinned(size_t rows) {
  std::vector<size_t> out;
  if (rows <= kTableSteps) {
    for (size_t i = 0; i < rows; ++i) out.push_back(i);
    return out;
  }
  const size_t stride = (rows + kTableSteps - 2) / (kTableSteps - 1);
  for (size_t i = 0; i + 1 < rows; i += stride) out.push_back(i);
  out.push_back(rows - 1);
  return out;
}

const v1::RelationalPoint* Latest(const v1::RelationalCurve& c, const std::string& metric) {
  const v1::RelationalPoint* out = nullptr;
  for (const v1::RelationalPoint& p : c.points()) {
    if (p.metric() == metric) out = &p;
  }
  return out;
}

// "0.123 [0.045, 0.201]": a mean across replicates with the interval a
// re-run would fall in.
std::string AcrossReplicates(const v1::TrialMean& m) {
  return absl::StrFormat("%+.3f [%+.3f, %+.3f]", m.mean(), m.rerun_low(), m.rerun_high());
}

// replicates >= 2: each variant's latest point per metric across the
// replicates; "" otherwise.
std::string ReplicatesText(const v1::RelationalResults& rel) {
  if (rel.replicates() < 2) return "";
  std::string out = absl::StrFormat(
      "\nacross %u replicates (each the whole audit on its own seed; mean [95%% interval of a "
      "re-run on %u other seeds]), at each variant's latest point:\n",
      rel.replicates(), rel.replicates());
  const std::string header = absl::StrFormat("  %-12s %-12s %-26s %-26s %-26s", "variant", "metric",
                                             "s_train", "s_val", "RM_norm");
  absl::StrAppend(&out, header, "\n");
  for (const v1::RelationalCurve& c : rel.curves()) {
    for (const std::string& m : rel.metrics()) {
      const v1::RelationalPoint* p = Latest(c, m);
      if (p == nullptr || !p->has_across_replicates()) continue;
      const v1::RelationalAcrossReplicates& a = p->across_replicates();
      absl::StrAppend(
          &out, absl::StrFormat("  %-12s %-12s %-26s %-26s %-26s\n", c.variant(), m,
                                AcrossReplicates(a.success_train()),
                                AcrossReplicates(a.success_val()), AcrossReplicates(a.rm_norm())));
    }
  }
  return out;
}

}  // namespace

std::string RelationalTable(const v1::AuditResults& r) {
  const v1::RelationalResults& rel = r.relational();
  const bool linear = Linear(rel);
  std::string out = absl::StrFormat(
      "audit %s (relational): %s model, %u variants, %u training / %u held-out %s\n\n",
      r.audit_id(), linear ? "linear" : "phone-book", rel.curves_size(), r.members(),
      r.non_members(), linear ? "samples" : "records");
  absl::StrAppend(&out, "RM_norm = s_train - s_val: success at recovering ",
                  linear ? "t from <w,(0,x)> / (1 - w_1)" : "the number from the digit-free prompt",
                  ", training minus held-out\n");
  // Two header lines: the metric above its three columns.
  std::string title = absl::StrFormat("%-12s %10s", "", "");
  std::string header = absl::StrFormat("%-12s %10s", "variant", linear ? "step" : "epoch");
  for (const std::string& m : rel.metrics()) {
    absl::StrAppend(&title, absl::StrFormat("  %-46s", m));
    absl::StrAppend(&header, absl::StrFormat("  %8s %8s %8s %19s", "s_train", "s_val", "RM_norm",
                                             "RM_norm 95% CI"));
  }
  absl::StrAppend(&header, absl::StrFormat("  %10s %10s", linear ? "mse_train" : "acc_train",
                                           linear ? "mse_val" : "acc_val"));
  absl::StrAppend(&out, absl::StripTrailingAsciiWhitespace(title), "\n", header, "\n",
                  std::string(header.size(), '-'), "\n");
  for (const v1::RelationalCurve& c : rel.curves()) {
    const auto steps = ByStep(c);
    for (size_t i : Thinned(steps.size())) {
      const auto& [step, metrics] = steps[i];
      absl::StrAppend(&out, absl::StrFormat("%-12s %10d", c.variant(), step));
      const v1::RelationalPoint* any = nullptr;
      for (const std::string& m : rel.metrics()) {
        auto it = metrics.find(m);
        if (it == metrics.end()) {
          absl::StrAppend(&out, absl::StrFormat("  %8s %8s %8s %19s", "-", "-", "-", "-"));
          continue;
        }
        any = it->second;
        absl::StrAppend(&out, absl::StrFormat("  %8.3f %8.3f %+8.3f %19s", any->success_train(),
                                              any->success_val(), any->rm_norm(),
                                              absl::StrFormat("[%+.3f, %+.3f]", any->rm_norm_low(),
                                                              any->rm_norm_high())));
      }
      if (any != nullptr) {
        absl::StrAppend(&out,
                        absl::StrFormat("  %10.4g %10.4g", any->clean_train(), any->clean_val()));
      }
      absl::StrAppend(&out, "\n");
    }
  }
  absl::StrAppend(&out,
                  "\nRM_norm near 0: no relation recovered beyond what held-out records "
                  "allow; near 1: x works as a key to y. 95% CI: Newcombe's for 0/1 metrics, "
                  "else MOVER from Student t.\n",
                  linear ? "" : "acc = next-character accuracy on the clean records.\n",
                  ReplicatesText(rel));
  return out;
}

std::string RelationalHtmlSection(const v1::AuditResults& r) {
  const v1::RelationalResults& rel = r.relational();
  const bool linear = Linear(rel);
  std::string html = absl::StrFormat(
      "<h2>Relational memorization: numbers</h2><p>%s; RM<sub>norm</sub> = s<sub>train</sub> "
      "&minus; "
      "s<sub>val</sub>, the success at recovering the private part from the corrupted record on "
      "training minus held-out data (%u / %u).</p>",
      linear ? "Linear model: the adversary reads t from &lang;w, (0, x)&rang; / (1 &minus; w<sub>1"
               "</sub>), success when within the tolerance"
             : "Phone book: greedy completion of each record with its digits removed",
      r.members(), r.non_members());
  // The latest RM_norm per variant and metric first: the audit's answer.
  absl::StrAppend(&html, "<table class=\"numbers\"><tr><th>variant</th>");
  for (const std::string& m : rel.metrics()) {
    absl::StrAppend(&html, absl::StrFormat("<th>latest RM<sub>norm</sub> (%s) [95%% CI]</th>", m));
  }
  absl::StrAppend(&html, "</tr>");
  for (const v1::RelationalCurve& c : rel.curves()) {
    absl::StrAppend(&html, "<tr><td>", c.variant(), "</td>");
    for (const std::string& m : rel.metrics()) {
      const v1::RelationalPoint* p = Latest(c, m);
      absl::StrAppend(&html, p == nullptr
                                 ? "<td>&ndash;</td>"
                                 : absl::StrFormat("<td>%.4f [%.4f, %.4f]</td>", p->rm_norm(),
                                                   p->rm_norm_low(), p->rm_norm_high()));
    }
    absl::StrAppend(&html, "</tr>");
  }
  absl::StrAppend(&html, "</table>");
  absl::StrAppend(
      &html, absl::StrFormat("<h2>RM<sub>norm</sub> by %s</h2><table class=\"numbers\"><tr>"
                             "<th>variant</th><th>%s</th><th>metric</th>"
                             "<th>s<sub>train</sub> [95%% CI]</th><th>s<sub>val</sub> [95%% CI]"
                             "</th><th>RM<sub>norm</sub> [95%% CI]</th><th>%s train</th>"
                             "<th>%s held-out</th></tr>",
                             linear ? "step" : "epoch", linear ? "step" : "epoch",
                             linear ? "MSE" : "next-char accuracy",
                             linear ? "MSE" : "next-char accuracy"));
  for (const v1::RelationalCurve& c : rel.curves()) {
    for (const v1::RelationalPoint& p : c.points()) {
      absl::StrAppend(
          &html,
          absl::StrFormat("<tr><td>%s</td><td>%d</td><td>%s</td><td>%.4f [%.4f, %.4f]</td>"
                          "<td>%.4f [%.4f, %.4f]</td><td>%.4f [%.4f, %.4f]</td><td>%.4g</td>"
                          "<td>%.4g</td></tr>",
                          c.variant(), p.step(), p.metric(), p.success_train(),
                          p.success_train_low(), p.success_train_high(), p.success_val(),
                          p.success_val_low(), p.success_val_high(), p.rm_norm(), p.rm_norm_low(),
                          p.rm_norm_high(), p.clean_train(), p.clean_val()));
    }
  }
  absl::StrAppend(&html,
                  "</table><p>95% intervals: Clopper&ndash;Pearson for a rate whose records "
                  "score 0 or 1 (exact match, within tolerance), Student t on the per-record "
                  "values otherwise (digit F1); RM<sub>norm</sub>: Newcombe's hybrid score "
                  "interval for 0/1 metrics, MOVER from the Student t intervals otherwise.</p>");
  if (rel.replicates() >= 2) {
    absl::StrAppend(&html, "<h2>Across replicates</h2><pre>",
                    HtmlEscape(ReplicatesText(rel).substr(1)), "</pre>");
  }
  return html;
}

absl::Status WriteRelationalCsv(const v1::AuditResults& r, const std::string& dir) {
  std::string csv =
      "audit_id,model,variant,step,metric,success_train,success_val,rm_norm,clean_train,"
      "clean_val,success_train_low,success_train_high,success_val_low,success_val_high,"
      "rm_norm_low,rm_norm_high,replicates,rm_norm_mean,rm_norm_rerun_low,rm_norm_rerun_high\n";
  const v1::RelationalResults& rel = r.relational();
  for (const v1::RelationalCurve& c : rel.curves()) {
    for (const v1::RelationalPoint& p : c.points()) {
      absl::StrAppend(
          &csv,
          absl::StrFormat(
              "%s,%s,%s,%d,%s,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,"
              "%.17g,%s\n",
              r.audit_id(), rel.model(), c.variant(), p.step(), p.metric(), p.success_train(),
              p.success_val(), p.rm_norm(), p.clean_train(), p.clean_val(), p.success_train_low(),
              p.success_train_high(), p.success_val_low(), p.success_val_high(), p.rm_norm_low(),
              p.rm_norm_high(),
              // Empty cells until every replicate reached the point.
              p.has_across_replicates()
                  ? absl::StrFormat("%u,%.17g,%.17g,%.17g", p.across_replicates().replicates(),
                                    p.across_replicates().rm_norm().mean(),
                                    p.across_replicates().rm_norm().rerun_low(),
                                    p.across_replicates().rm_norm().rerun_high())
                  : ",,,"));
    }
  }
  return WriteFile(dir + "/relational_curve.csv", csv);
}

namespace {

class Relational final : public KindHandler {
 public:
  std::string Table(const v1::AuditResults& results) const override {
    return RelationalTable(results);
  }

  absl::Status WriteCsv(const v1::AuditResults& results, const std::string& dir) const override {
    return WriteRelationalCsv(results, dir);
  }

  std::string HtmlSections(const v1::AuditResults& results) const override {
    return absl::StrCat(RelationalPlotsHtml(results), RelationalHtmlSection(results));
  }

  std::string HtmlSizeRows(const v1::AuditResults& results) const override {
    return absl::StrCat(
        absl::StrFormat("<tr><th>models &times; examples</th><td>%u &times; %u</td></tr>",
                        results.models(), results.examples()),
        absl::StrFormat("<tr><th>training / held-out records</th><td>%d / %d</td></tr>",
                        results.members(), results.non_members()));
  }
};

}  // namespace

}  // namespace memaudit::cli

namespace memaudit {

template <>
const cli::KindHandler& HandlerOfKind<cli::KindHandler, v1::AuditSpec::kRelational>() {
  static const cli::Relational handler;
  return handler;
}

}  // namespace memaudit
