#include "cli/exposure_render.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace memaudit::cli {
namespace {

std::string Escape(const std::string& text) {
  return absl::StrReplaceAll(text,
                             {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

std::string Repeats(uint32_t r) { return r == 0 ? "control" : absl::StrCat("x", r); }

std::string Sampled(const v1::CanaryResult& c) {
  return absl::StrFormat("%s%.2f", c.sampled_lower_bound() ? ">=" : "", c.sampled_exposure());
}

bool Has(const v1::ExposureResults& x, const std::string& estimator) {
  return std::find(x.estimators().begin(), x.estimators().end(), estimator) != x.estimators().end();
}

absl::Status Write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace

std::string ExposureTable(const v1::AuditResults& r) {
  const v1::ExposureResults& x = r.exposure();
  std::string out = absl::StrFormat(
      "audit %s (exposure): %u canaries, log2|R| = %.2f, estimators: %s, %u training steps\n\n",
      r.audit_id(), x.canaries_size(), x.log2_space(), absl::StrJoin(x.estimators(), ", "),
      x.training_steps());
  const std::string header =
      absl::StrFormat("%-20s %8s %9s %12s %9s %10s %12s", "secret", "inserted", "Px bits", "rank",
                      "exposure", "sampled", "extrapolated");
  absl::StrAppend(&out, header, "\n", std::string(header.size(), '-'), "\n");
  for (const v1::CanaryResult& c : x.canaries()) {
    absl::StrAppend(
        &out,
        absl::StrFormat(
            "%-20s %8s %9.2f %12s %9.2f %10s %12s\n", c.secret(), Repeats(c.repeats()), c.px_bits(),
            absl::StrCat(c.exact() ? "" : ">=", c.rank()), c.exposure(),
            Has(x, "sampled") ? Sampled(c) : "-",
            Has(x, "extrapolated") ? absl::StrFormat("%.2f", c.extrapolated_exposure()) : "-"));
  }
  absl::StrAppend(&out, "\nexposure vs insertions (mean exact exposure, bits):\n");
  for (const v1::ExposureByRepeats& g : x.by_repeats()) {
    absl::StrAppend(&out, absl::StrFormat("  %-8s %6.2f  (%u canaries)\n", Repeats(g.repeats()),
                                          g.mean_exposure(), g.canaries()));
  }
  absl::StrAppend(
      &out, absl::StrFormat("control median exposure: %.2f bits\n", x.control_median_exposure()));
  if (x.extraction_attempted()) {
    absl::StrAppend(&out, absl::StrFormat("extraction of the most-inserted canary: %s (got \"%s\", "
                                          "%u queries)\n",
                                          x.extracted() ? "SUCCESS" : "failed", x.extraction(),
                                          x.extraction_queries()));
  }
  absl::StrAppend(&out,
                  "\nexposure = log2|R| - log2 rank; rank \">=\" = query budget ran out (exposure "
                  "is then an upper bound); sampled \">=\" = above every reference.\n");
  return out;
}

std::string ExposureHtmlSection(const v1::AuditResults& r) {
  const v1::ExposureResults& x = r.exposure();
  // The plots come from ExposurePlotsHtml (report_plots.h).
  std::string html = absl::StrCat("<h2>Canaries</h2><table><tr>"
                                  "<th>secret</th><th>inserted</th><th>Px (bits)</th><th>rank</th>"
                                  "<th>exposure</th><th>sampled</th><th>extrapolated</th></tr>");
  for (const v1::CanaryResult& c : x.canaries()) {
    absl::StrAppend(&html, absl::StrFormat("<tr><td>%s</td><td>%s</td><td>%.3f</td><td>%s%d</td>"
                                           "<td>%.3f</td><td>%s</td><td>%.3f</td></tr>",
                                           Escape(c.secret()), Repeats(c.repeats()), c.px_bits(),
                                           c.exact() ? "" : "&ge;", c.rank(), c.exposure(),
                                           Escape(Sampled(c)), c.extrapolated_exposure()));
  }
  absl::StrAppend(
      &html, "</table>",
      absl::StrFormat("<p>log2|R| = %.3f; |S| = %u; control median exposure %.3f bits; "
                      "extraction: %s (\"%s\", %d queries).</p>",
                      x.log2_space(), x.reference_samples(), x.control_median_exposure(),
                      !x.extraction_attempted() ? "not attempted"
                      : x.extracted()           ? "succeeded"
                                                : "failed",
                      Escape(x.extraction()), x.extraction_queries()));
  return html;
}

absl::Status WriteExposureCsv(const v1::AuditResults& r, const std::string& dir) {
  const v1::ExposureResults& x = r.exposure();
  std::string canaries =
      "audit_id,secret,repeats,px_bits,rank,exact,exposure,sampled_exposure,"
      "sampled_lower_bound,extrapolated_exposure,rank_queries\n";
  for (const v1::CanaryResult& c : x.canaries()) {
    absl::StrAppend(&canaries,
                    absl::StrFormat("%s,%s,%u,%.17g,%u,%d,%.17g,%.17g,%d,%.17g,%u\n", r.audit_id(),
                                    c.secret(), c.repeats(), c.px_bits(), c.rank(), c.exact(),
                                    c.exposure(), c.sampled_exposure(), c.sampled_lower_bound(),
                                    c.extrapolated_exposure(), c.rank_queries()));
  }
  std::string groups =
      "audit_id,repeats,canaries,mean_exposure,median_exposure,mean_sampled_exposure,"
      "mean_extrapolated_exposure,log2_space\n";
  for (const v1::ExposureByRepeats& g : x.by_repeats()) {
    absl::StrAppend(
        &groups,
        absl::StrFormat("%s,%u,%u,%.17g,%.17g,%.17g,%.17g,%.17g\n", r.audit_id(), g.repeats(),
                        g.canaries(), g.mean_exposure(), g.median_exposure(),
                        g.mean_sampled_exposure(), g.mean_extrapolated_exposure(), x.log2_space()));
  }
  if (absl::Status s = Write(dir + "/canaries.csv", canaries); !s.ok()) return s;
  return Write(dir + "/exposure_by_repeats.csv", groups);
}

}  // namespace memaudit::cli
