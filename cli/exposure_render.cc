#include "cli/exposure_render.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "cli/render.h"

namespace memaudit::cli {

std::string InsertedLabel(uint32_t repeats) {
  return repeats == 0 ? "control" : absl::StrCat("x", repeats);
}

bool HasEstimator(const v1::ExposureResults& x, const std::string& estimator) {
  return std::find(x.estimators().begin(), x.estimators().end(), estimator) != x.estimators().end();
}
namespace {

std::string Sampled(const v1::CanaryResult& c) {
  return absl::StrFormat("%s%.2f", c.sampled_lower_bound() ? ">=" : "", c.sampled_exposure());
}

// Under the baseline model a budget-bounded rank makes the exposure an upper
// bound.
std::string Baseline(const v1::CanaryResult& c) {
  return absl::StrFormat("%s%.2f", c.baseline_exact() ? "" : "<=", c.baseline_exposure());
}

std::string Calibrated(const v1::CanaryResult& c) {
  return absl::StrFormat("%s%.2f", c.calibrated_lower_bound() ? ">=" : "", c.calibrated_exposure());
}

bool HasCalibration(const v1::ExposureResults& x) { return x.reference_models() > 0; }

// Every variant with its results: the sweep, or one "base" variant built from
// the top-level fields.
std::vector<v1::ExposureVariantResult> VariantsOf(const v1::ExposureResults& x) {
  std::vector<v1::ExposureVariantResult> out(x.variants().begin(), x.variants().end());
  if (out.empty()) {
    v1::ExposureVariantResult& base = out.emplace_back();
    base.set_name("base");
    *base.mutable_results() = x;
  }
  return out;
}

std::string Recipe(const v1::ExposureVariantResult& v) {
  std::string out =
      absl::StrFormat("batch %u, units %u, dropout %g", v.batch_size(), v.units(), v.dropout());
  if (v.dp_clip_norm() > 0) {
    absl::StrAppend(&out, absl::StrFormat(", DP-SGD sigma %g clip %g: epsilon %.3g at delta %g",
                                          v.dp_noise_multiplier(), v.dp_clip_norm(), v.dp_epsilon(),
                                          v.dp_delta()));
  }
  return out;
}

// One model's canary table, exposure by insertions, controls and extraction.
std::string CanaryTable(const v1::ExposureResults& x) {
  const bool baseline = x.baseline_model(), calibrated = HasCalibration(x);
  std::string header = absl::StrFormat("%-20s %8s %9s %12s %9s %10s %12s", "secret", "inserted",
                                       "Px bits", "rank", "exposure", "sampled", "extrapolated");
  if (baseline) absl::StrAppend(&header, absl::StrFormat(" %9s", "baseline"));
  if (calibrated) absl::StrAppend(&header, absl::StrFormat(" %10s", "calibrated"));
  std::string out = absl::StrCat(header, "\n", std::string(header.size(), '-'), "\n");
  for (const v1::CanaryResult& c : x.canaries()) {
    absl::StrAppend(&out,
                    absl::StrFormat("%-20s %8s %9.2f %12s %9.2f %10s %12s", c.secret(),
                                    InsertedLabel(c.repeats()), c.px_bits(),
                                    absl::StrCat(c.exact() ? "" : ">=", c.rank()), c.exposure(),
                                    HasEstimator(x, "sampled") ? Sampled(c) : "-",
                                    HasEstimator(x, "extrapolated")
                                        ? absl::StrFormat("%.2f", c.extrapolated_exposure())
                                        : "-"));
    if (baseline) absl::StrAppend(&out, absl::StrFormat(" %9s", Baseline(c)));
    if (calibrated) absl::StrAppend(&out, absl::StrFormat(" %10s", Calibrated(c)));
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, "\nexposure vs insertions (mean exact exposure, bits",
                  baseline ? "; baseline: the same canaries under the baseline model" : "",
                  calibrated ? "; calibrated: reference-calibrated sampled exposure" : "", "):\n");
  for (const v1::ExposureByRepeats& g : x.by_repeats()) {
    absl::StrAppend(&out,
                    absl::StrFormat("  %-8s %6.2f", InsertedLabel(g.repeats()), g.mean_exposure()));
    if (baseline)
      absl::StrAppend(&out, absl::StrFormat("  baseline %6.2f", g.mean_baseline_exposure()));
    if (calibrated) {
      absl::StrAppend(&out, absl::StrFormat("  calibrated %6.2f", g.mean_calibrated_exposure()));
    }
    absl::StrAppend(&out, absl::StrFormat("  (%u canaries)\n", g.canaries()));
  }
  absl::StrAppend(
      &out, absl::StrFormat("control median exposure: %.2f bits\n", x.control_median_exposure()));
  if (baseline) {
    absl::StrAppend(&out,
                    absl::StrFormat("baseline model (no canaries): control median %.2f "
                                    "bits, final loss %.4f nats/char\n",
                                    x.control_median_baseline_exposure(), x.baseline_final_loss()));
  }
  if (calibrated) {
    absl::StrAppend(&out,
                    absl::StrFormat("calibrated against %u reference model(s): control "
                                    "median %.2f bits (ceiling log2|S| = %.2f)\n",
                                    x.reference_models(), x.control_median_calibrated_exposure(),
                                    x.log2_reference_samples()));
  }
  if (x.extraction_attempted()) {
    absl::StrAppend(&out, absl::StrFormat("extraction of the most-inserted canary: %s (got \"%s\", "
                                          "%u queries)\n",
                                          x.extracted() ? "SUCCESS" : "failed", x.extraction(),
                                          x.extraction_queries()));
  }
  return out;
}

// Rows: insertion counts; columns: variants; cells: mean exact exposure.
std::string SweepGrid(const std::vector<v1::ExposureVariantResult>& variants) {
  std::vector<uint32_t> repeats;
  for (const v1::ExposureByRepeats& g : variants[0].results().by_repeats()) {
    repeats.push_back(g.repeats());
  }
  size_t width = 10;
  for (const v1::ExposureVariantResult& v : variants) width = std::max(width, v.name().size() + 2);
  std::string out = absl::StrFormat("%-12s", "inserted");
  for (const v1::ExposureVariantResult& v : variants) {
    absl::StrAppend(&out, absl::StrFormat("%*s", static_cast<int>(width), v.name()));
  }
  absl::StrAppend(&out, "\n");
  auto row = [&](const std::string& label, auto cell) {
    absl::StrAppend(&out, absl::StrFormat("%-12s", label));
    for (const v1::ExposureVariantResult& v : variants) {
      absl::StrAppend(&out, absl::StrFormat("%*s", static_cast<int>(width), cell(v)));
    }
    absl::StrAppend(&out, "\n");
  };
  for (size_t i = 0; i < repeats.size(); ++i) {
    row(InsertedLabel(repeats[i]), [&](const v1::ExposureVariantResult& v) {
      const auto& groups = v.results().by_repeats();
      return i < static_cast<size_t>(groups.size())
                 ? absl::StrFormat("%.2f", groups[static_cast<int>(i)].mean_exposure())
                 : std::string("-");
    });
  }
  if (variants[0].results().baseline_model()) {
    row("baseline x" + absl::StrCat(repeats.empty() ? 0 : repeats.back()),
        [](const v1::ExposureVariantResult& v) {
          const auto& groups = v.results().by_repeats();
          return groups.empty()
                     ? std::string("-")
                     : absl::StrFormat("%.2f", groups.rbegin()->mean_baseline_exposure());
        });
  }
  row("final loss", [](const v1::ExposureVariantResult& v) {
    return absl::StrFormat("%.4f", v.results().final_loss());
  });
  row("DP epsilon", [](const v1::ExposureVariantResult& v) {
    return v.dp_clip_norm() > 0 ? absl::StrFormat("%.3g", v.dp_epsilon()) : std::string("-");
  });
  row("extracted", [](const v1::ExposureVariantResult& v) {
    return std::string(!v.results().extraction_attempted() ? "-"
                       : v.results().extracted()           ? "yes"
                                                           : "no");
  });
  return out;
}

std::string HtmlCanaryTable(const v1::ExposureResults& x) {
  const bool baseline = x.baseline_model(), calibrated = HasCalibration(x);
  std::string html = absl::StrCat(
      "<table><tr><th>secret</th><th>inserted</th><th>Px (bits)</th><th>rank</th>"
      "<th>exposure</th><th>sampled</th><th>extrapolated</th>",
      baseline ? "<th>baseline</th>" : "", calibrated ? "<th>calibrated</th>" : "", "</tr>");
  for (const v1::CanaryResult& c : x.canaries()) {
    absl::StrAppend(&html,
                    absl::StrFormat("<tr><td>%s</td><td>%s</td><td>%.3f</td><td>%s%d</td>"
                                    "<td>%.3f</td><td>%s</td><td>%.3f</td>",
                                    HtmlEscape(c.secret()), InsertedLabel(c.repeats()), c.px_bits(),
                                    c.exact() ? "" : "&ge;", c.rank(), c.exposure(),
                                    HtmlEscape(Sampled(c)), c.extrapolated_exposure()));
    if (baseline) absl::StrAppend(&html, "<td>", HtmlEscape(Baseline(c)), "</td>");
    if (calibrated) absl::StrAppend(&html, "<td>", HtmlEscape(Calibrated(c)), "</td>");
    absl::StrAppend(&html, "</tr>");
  }
  absl::StrAppend(
      &html, "</table>",
      absl::StrFormat("<p>log2|R| = %.3f; |S| = %u; control median exposure %.3f bits; "
                      "extraction: %s (\"%s\", %d queries).",
                      x.log2_space(), x.reference_samples(), x.control_median_exposure(),
                      !x.extraction_attempted() ? "not attempted"
                      : x.extracted()           ? "succeeded"
                                                : "failed",
                      HtmlEscape(x.extraction()), x.extraction_queries()));
  if (baseline) {
    absl::StrAppend(&html, absl::StrFormat(" Baseline model (same recipe and seeds, no canaries): "
                                           "control median %.3f bits; its exposure column is an "
                                           "upper bound where marked &le;.",
                                           x.control_median_baseline_exposure()));
  }
  if (calibrated) {
    absl::StrAppend(&html, absl::StrFormat(" Calibrated: Px minus the mean Px of %u reference "
                                           "model(s) trained without canaries, ranked in S "
                                           "calibrated the same way (ceiling log2|S|).",
                                           x.reference_models()));
  }
  absl::StrAppend(&html, "</p>");
  return html;
}

}  // namespace

std::string ExposureTable(const v1::AuditResults& r) {
  const v1::ExposureResults& x = r.exposure();
  std::string out = absl::StrFormat(
      "audit %s (exposure): %u canaries, log2|R| = %.2f, estimators: %s, %u training steps\n\n",
      r.audit_id(), x.canaries_size(), x.log2_space(), absl::StrJoin(x.estimators(), ", "),
      x.training_steps());
  if (x.variants_size() == 0) {
    absl::StrAppend(&out, CanaryTable(x));
  } else {
    const std::vector<v1::ExposureVariantResult> variants = VariantsOf(x);
    for (const v1::ExposureVariantResult& v : variants) {
      absl::StrAppend(&out, "variant \"", v.name(), "\" (", Recipe(v), "), ",
                      v.results().training_steps(), " training steps\n", CanaryTable(v.results()),
                      "\n");
    }
    absl::StrAppend(&out, "sweep: mean exact exposure by insertions (bits)\n", SweepGrid(variants));
  }
  absl::StrAppend(&out,
                  "\nexposure = log2|R| - log2 rank; rank \">=\" = query budget ran out (exposure "
                  "is then an upper bound); sampled \">=\" = above every reference.\n");
  return out;
}

std::string ExposureHtmlSection(const v1::AuditResults& r) {
  const v1::ExposureResults& x = r.exposure();
  // The plots come from ExposurePlotsHtml (report_plots.h).
  if (x.variants_size() == 0) return absl::StrCat("<h2>Canaries</h2>", HtmlCanaryTable(x));
  std::string html =
      "<h2>Sweep</h2><table><tr><th>variant</th><th>batch</th><th>units</th><th>dropout</th>"
      "<th>DP epsilon</th><th>final loss</th>";
  const std::vector<v1::ExposureVariantResult> variants = VariantsOf(x);
  for (const v1::ExposureByRepeats& g : variants[0].results().by_repeats()) {
    absl::StrAppend(&html, "<th>", InsertedLabel(g.repeats()), "</th>");
  }
  absl::StrAppend(&html, "<th>extracted</th></tr>");
  for (const v1::ExposureVariantResult& v : variants) {
    absl::StrAppend(
        &html,
        absl::StrFormat("<tr><td>%s</td><td>%u</td><td>%u</td><td>%g</td><td>%s</td><td>%.4f</td>",
                        HtmlEscape(v.name()), v.batch_size(), v.units(), v.dropout(),
                        v.dp_clip_norm() > 0
                            ? absl::StrFormat("%.3g (&delta; %g)", v.dp_epsilon(), v.dp_delta())
                            : "&ndash;",
                        v.results().final_loss()));
    for (const v1::ExposureByRepeats& g : v.results().by_repeats()) {
      absl::StrAppend(&html, absl::StrFormat("<td>%.2f</td>", g.mean_exposure()));
    }
    absl::StrAppend(&html, "<td>", v.results().extracted() ? "yes" : "no", "</td></tr>");
  }
  absl::StrAppend(&html,
                  "</table><p>Mean exact exposure (bits) by insertion count; every variant "
                  "scores the same canaries.</p>");
  for (const v1::ExposureVariantResult& v : variants) {
    absl::StrAppend(&html, "<h2>Canaries: ", HtmlEscape(v.name()), "</h2>",
                    HtmlCanaryTable(v.results()));
  }
  return html;
}

absl::Status WriteExposureCsv(const v1::AuditResults& r, const std::string& dir) {
  const v1::ExposureResults& x = r.exposure();
  // New columns go last, so readers of the single-model columns keep working.
  std::string canaries =
      "audit_id,secret,repeats,px_bits,rank,exact,exposure,sampled_exposure,"
      "sampled_lower_bound,extrapolated_exposure,rank_queries,variant,baseline_px_bits,"
      "baseline_rank,baseline_exact,baseline_exposure,calibrated_px_bits,calibrated_exposure,"
      "calibrated_lower_bound\n";
  std::string groups =
      "audit_id,repeats,canaries,mean_exposure,median_exposure,mean_sampled_exposure,"
      "mean_extrapolated_exposure,log2_space,variant,mean_baseline_exposure,"
      "mean_calibrated_exposure\n";
  std::string variants =
      "audit_id,variant,batch_size,units,dropout,dp_noise_multiplier,dp_clip_norm,dp_epsilon,"
      "dp_delta,training_steps,final_loss,baseline_final_loss,control_median_exposure,"
      "extracted\n";
  for (const v1::ExposureVariantResult& v : VariantsOf(x)) {
    const v1::ExposureResults& vx = v.results();
    for (const v1::CanaryResult& c : vx.canaries()) {
      absl::StrAppend(
          &canaries,
          absl::StrFormat("%s,%s,%u,%.17g,%u,%d,%.17g,%.17g,%d,%.17g,%u,%s,%.17g,%u,%d,%.17g,"
                          "%.17g,%.17g,%d\n",
                          r.audit_id(), c.secret(), c.repeats(), c.px_bits(), c.rank(), c.exact(),
                          c.exposure(), c.sampled_exposure(), c.sampled_lower_bound(),
                          c.extrapolated_exposure(), c.rank_queries(), v.name(),
                          c.baseline_px_bits(), c.baseline_rank(), c.baseline_exact(),
                          c.baseline_exposure(), c.calibrated_px_bits(), c.calibrated_exposure(),
                          c.calibrated_lower_bound()));
    }
    for (const v1::ExposureByRepeats& g : vx.by_repeats()) {
      absl::StrAppend(&groups,
                      absl::StrFormat("%s,%u,%u,%.17g,%.17g,%.17g,%.17g,%.17g,%s,%.17g,%.17g\n",
                                      r.audit_id(), g.repeats(), g.canaries(), g.mean_exposure(),
                                      g.median_exposure(), g.mean_sampled_exposure(),
                                      g.mean_extrapolated_exposure(), vx.log2_space(), v.name(),
                                      g.mean_baseline_exposure(), g.mean_calibrated_exposure()));
    }
    absl::StrAppend(
        &variants,
        absl::StrFormat("%s,%s,%u,%u,%.17g,%.17g,%.17g,%.17g,%.17g,%u,%.17g,%.17g,%.17g,%d\n",
                        r.audit_id(), v.name(), v.batch_size(), v.units(), v.dropout(),
                        v.dp_noise_multiplier(), v.dp_clip_norm(), v.dp_epsilon(), v.dp_delta(),
                        vx.training_steps(), vx.final_loss(), vx.baseline_final_loss(),
                        vx.control_median_exposure(), vx.extracted()));
  }
  if (absl::Status s = WriteFile(dir + "/canaries.csv", canaries); !s.ok()) return s;
  // Only a sweep's results carry the resolved recipes.
  if (x.variants_size() > 0) {
    if (absl::Status s = WriteFile(dir + "/exposure_variants.csv", variants); !s.ok()) return s;
  }
  return WriteFile(dir + "/exposure_by_repeats.csv", groups);
}

}  // namespace memaudit::cli
