#include "audits/exposure/cli_render.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "audits/exposure/cli_extractable_render.h"
#include "audits/exposure/cli_plots.h"
#include "audits/exposure/cli_replicates_render.h"
#include "cli/render.h"
#include "common/base/status_macros.h"
#include "spec/spec_rules.h"

namespace memaudit::cli {

bool HasEstimator(const v1::ExposureResults& x, const std::string& estimator) {
  return std::find(x.estimators().begin(), x.estimators().end(), estimator) != x.estimators().end();
}
namespace {

std::string Sampled(const v1::CanaryResult& c) {
  return absl::StrFormat("%s%.2f", c.sampled_lower_bound() ? ">=" : "", c.sampled_exposure());
}

// The sampled estimate's 95% interval (Clopper-Pearson through -log2).
std::string SampledInterval(const v1::CanaryResult& c) {
  return absl::StrFormat("[%.2f, %.2f]", c.sampled_exposure_low(), c.sampled_exposure_high());
}

// Under the baseline model a budget-bounded rank makes the exposure an upper
// bound.
std::string Baseline(const v1::CanaryResult& c) {
  return absl::StrFormat("%s%.2f", c.baseline_exact() ? "" : "<=", c.baseline_exposure());
}

std::string Calibrated(const v1::CanaryResult& c) {
  return absl::StrFormat("%s%.2f", c.calibrated_lower_bound() ? ">=" : "", c.calibrated_exposure());
}

std::string BaselineSampled(const v1::CanaryResult& c) {
  return absl::StrFormat("%s%.2f", c.baseline_sampled_lower_bound() ? ">=" : "",
                         c.baseline_sampled_exposure());
}

// The baseline's sampled / extrapolated columns: where the spec asks for
// those estimators.
bool BaselineSampledColumn(const v1::ExposureResults& x) {
  return x.baseline_model() && HasEstimator(x, "sampled");
}
bool BaselineExtrapolatedColumn(const v1::ExposureResults& x) {
  return x.baseline_model() && HasEstimator(x, "extrapolated");
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
      absl::StrFormat("batch %u, units %u, dropout %g, epochs %u, lr %g", v.batch_size(), v.units(),
                      v.dropout(), v.epochs(), v.learning_rate());
  if (v.dp_clip_norm() > 0) {
    absl::StrAppend(&out, absl::StrFormat(", DP-SGD sigma %g clip %g: epsilon %.3g at delta %g",
                                          v.dp_noise_multiplier(), v.dp_clip_norm(), v.dp_epsilon(),
                                          v.dp_delta()));
  }
  return out;
}

// Exposure during training (spec eval_every_*): rows the evaluation steps,
// columns the insertion counts (mean exact exposure) and the controls'
// median. Empty without evaluation points.
std::string CurveTable(const v1::ExposureResults& x) {
  if (x.curve().empty()) return "";
  std::string out =
      "\nexposure during training (mean exact exposure by insertions, bits; "
      "control: median; the last step is the final model):\n";
  std::string header = absl::StrFormat("  %8s", "step");
  for (const v1::ExposureByRepeats& g : x.curve(0).by_repeats()) {
    if (g.repeats() > 0)
      absl::StrAppend(&header, absl::StrFormat(" %8s", InsertedLabel(g.repeats())));
  }
  absl::StrAppend(&header, absl::StrFormat(" %8s", "control"));
  absl::StrAppend(&out, header, "\n");
  for (const v1::ExposureCurvePoint& p : x.curve()) {
    absl::StrAppend(&out, absl::StrFormat("  %8u", p.step()));
    bool controls = false;
    for (const v1::ExposureByRepeats& g : p.by_repeats()) {
      if (g.repeats() == 0) {
        controls = true;
        continue;
      }
      absl::StrAppend(&out, absl::StrFormat(" %8.2f", g.mean_exposure()));
    }
    absl::StrAppend(&out,
                    controls ? absl::StrFormat(" %8.2f", p.control_median_exposure())
                             : absl::StrFormat(" %8s", "-"),
                    "\n");
  }
  return out;
}

// One model's canary table, exposure by insertions, controls and extraction.
std::string CanaryTable(const v1::ExposureResults& x) {
  const bool baseline = x.baseline_model(), calibrated = HasCalibration(x);
  const bool sampled = HasEstimator(x, "sampled");
  std::string header = absl::StrFormat(
      "%-20s %8s %9s %12s %9s %10s %s%12s", "secret", "inserted", "Px bits", "rank", "exposure",
      "sampled", sampled ? absl::StrFormat("%16s ", "sampled 95% CI") : "", "extrapolated");
  const bool b_sampled = BaselineSampledColumn(x), b_extrapolated = BaselineExtrapolatedColumn(x);
  const bool calibrated_exact = x.calibrated_exact();
  if (baseline) absl::StrAppend(&header, absl::StrFormat(" %9s", "baseline"));
  if (b_sampled) absl::StrAppend(&header, absl::StrFormat(" %9s", "b.sampled"));
  if (b_extrapolated) absl::StrAppend(&header, absl::StrFormat(" %9s", "b.extrap"));
  if (calibrated) absl::StrAppend(&header, absl::StrFormat(" %10s", "calibrated"));
  if (calibrated_exact) absl::StrAppend(&header, absl::StrFormat(" %9s", "cal.exact"));
  std::string out = absl::StrCat(header, "\n", std::string(header.size(), '-'), "\n");
  for (const v1::CanaryResult& c : x.canaries()) {
    absl::StrAppend(
        &out,
        absl::StrFormat(
            "%-20s %8s %9.2f %12s %9.2f %10s %s%12s", c.secret(), InsertedLabel(c.repeats()),
            c.px_bits(), absl::StrCat(c.exact() ? "" : ">=", c.rank()), c.exposure(),
            sampled ? Sampled(c) : "-", sampled ? absl::StrFormat("%16s ", SampledInterval(c)) : "",
            HasEstimator(x, "extrapolated") ? absl::StrFormat("%.2f", c.extrapolated_exposure())
                                            : "-"));
    if (baseline) absl::StrAppend(&out, absl::StrFormat(" %9s", Baseline(c)));
    if (b_sampled) absl::StrAppend(&out, absl::StrFormat(" %9s", BaselineSampled(c)));
    if (b_extrapolated) {
      absl::StrAppend(&out, absl::StrFormat(" %9.2f", c.baseline_extrapolated_exposure()));
    }
    if (calibrated) absl::StrAppend(&out, absl::StrFormat(" %10s", Calibrated(c)));
    if (calibrated_exact) {
      absl::StrAppend(&out, absl::StrFormat(" %9.2f", c.calibrated_exact_exposure()));
    }
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, "\nexposure vs insertions (mean exact exposure, bits",
                  baseline ? "; baseline: the same canaries under the baseline model" : "",
                  calibrated ? "; calibrated: reference-calibrated sampled exposure" : "",
                  calibrated_exact ? "; cal.exact: reference-calibrated exact exposure" : "",
                  "):\n");
  for (const v1::ExposureByRepeats& g : x.by_repeats()) {
    absl::StrAppend(&out,
                    absl::StrFormat("  %-8s %6.2f", InsertedLabel(g.repeats()), g.mean_exposure()));
    if (baseline)
      absl::StrAppend(&out, absl::StrFormat("  baseline %6.2f", g.mean_baseline_exposure()));
    if (calibrated) {
      absl::StrAppend(&out, absl::StrFormat("  calibrated %6.2f", g.mean_calibrated_exposure()));
    }
    if (calibrated_exact) {
      absl::StrAppend(&out,
                      absl::StrFormat("  cal.exact %6.2f", g.mean_calibrated_exact_exposure()));
    }
    absl::StrAppend(&out, absl::StrFormat("  (%u canaries)\n", g.canaries()));
  }
  absl::StrAppend(&out, ReplicatesText(x));
  absl::StrAppend(
      &out, absl::StrFormat("control median exposure: %.2f bits\n", x.control_median_exposure()));
  if (baseline) {
    absl::StrAppend(&out,
                    absl::StrFormat("baseline model (no canaries): control median %.2f "
                                    "bits, final loss %.4f nats/char\n",
                                    x.control_median_baseline_exposure(), x.baseline_final_loss()));
    if (b_sampled || b_extrapolated) {
      absl::StrAppend(
          &out,
          absl::StrFormat(
              "baseline model, sampled / extrapolated against its own Px of S: "
              "control median %s / %s bits\n",
              b_sampled ? absl::StrFormat("%.2f", x.control_median_baseline_sampled_exposure())
                        : "-",
              b_extrapolated
                  ? absl::StrFormat("%.2f", x.control_median_baseline_extrapolated_exposure())
                  : "-"));
    }
  }
  if (calibrated) {
    absl::StrAppend(&out,
                    absl::StrFormat("calibrated against %u reference model(s): control "
                                    "median %.2f bits (ceiling log2|S| = %.2f)\n",
                                    x.reference_models(), x.control_median_calibrated_exposure(),
                                    x.log2_reference_samples()));
    if (calibrated_exact) {
      absl::StrAppend(
          &out, absl::StrFormat("calibrated exact (every candidate of R calibrated): "
                                "control median %.2f bits (ceiling log2|R| = %.2f)\n",
                                x.control_median_calibrated_exact_exposure(), x.log2_space()));
    }
  }
  if (x.extraction_attempted()) {
    absl::StrAppend(&out, absl::StrFormat("extraction of the most-inserted canary: %s (got \"%s\", "
                                          "%u queries)\n",
                                          x.extracted() ? "SUCCESS" : "failed", x.extraction(),
                                          x.extraction_queries()));
  }
  absl::StrAppend(&out, ExtractableText(x), CurveTable(x));
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
  const bool b_sampled = BaselineSampledColumn(x), b_extrapolated = BaselineExtrapolatedColumn(x);
  const bool calibrated_exact = x.calibrated_exact();
  std::string html = absl::StrCat(
      "<table><tr><th>secret</th><th>inserted</th><th>Px (bits)</th><th>rank</th>"
      "<th>exposure</th><th>sampled</th><th>extrapolated</th>",
      baseline ? "<th>baseline</th>" : "", b_sampled ? "<th>baseline sampled</th>" : "",
      b_extrapolated ? "<th>baseline extrapolated</th>" : "",
      calibrated ? "<th>calibrated</th>" : "",
      calibrated_exact ? "<th>calibrated rank</th><th>calibrated exact</th>" : "", "</tr>");
  for (const v1::CanaryResult& c : x.canaries()) {
    absl::StrAppend(
        &html, absl::StrFormat("<tr><td>%s</td><td>%s</td><td>%.3f</td><td>%s%d</td>"
                               "<td>%.3f</td><td>%s</td><td>%.3f</td>",
                               HtmlEscape(c.secret()), InsertedLabel(c.repeats()), c.px_bits(),
                               c.exact() ? "" : "&ge;", c.rank(), c.exposure(),
                               HtmlEscape(HasEstimator(x, "sampled")
                                              ? absl::StrCat(Sampled(c), " ", SampledInterval(c))
                                              : Sampled(c)),
                               c.extrapolated_exposure()));
    if (baseline) absl::StrAppend(&html, "<td>", HtmlEscape(Baseline(c)), "</td>");
    if (b_sampled) absl::StrAppend(&html, "<td>", HtmlEscape(BaselineSampled(c)), "</td>");
    if (b_extrapolated) {
      absl::StrAppend(&html, absl::StrFormat("<td>%.3f</td>", c.baseline_extrapolated_exposure()));
    }
    if (calibrated) absl::StrAppend(&html, "<td>", HtmlEscape(Calibrated(c)), "</td>");
    if (calibrated_exact) {
      absl::StrAppend(&html, absl::StrFormat("<td>%d</td><td>%.3f</td>", c.calibrated_rank(),
                                             c.calibrated_exact_exposure()));
    }
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
    if (calibrated_exact) {
      absl::StrAppend(&html, absl::StrFormat(" Calibrated exact: the calibrated Px ranked among "
                                             "all of R calibrated the same way (ceiling "
                                             "log2|R|); control median %.3f bits.",
                                             x.control_median_calibrated_exact_exposure()));
    }
  }
  if (b_sampled || b_extrapolated) {
    absl::StrAppend(&html,
                    " Baseline sampled / extrapolated: the baseline model's Px against its "
                    "own Px of S (the same S).");
  }
  absl::StrAppend(&html, "</p>", ReplicatesHtml(x), ExtractableHtml(x));
  return html;
}

}  // namespace

std::string ExposureTable(const v1::AuditResults& r) {
  const v1::ExposureResults& x = r.exposure();
  std::string out = absl::StrFormat(
      "audit %s (exposure): %u canaries, log2|R| = %.2f, estimators: %s, %u training steps\n\n",
      r.audit_id(), x.canaries_size(), x.log2_space(), absl::StrJoin(x.estimators(), ", "),
      x.training_steps());
  const v1::TokenizerSpec& tokens = r.spec().exposure().model().tokenizer();
  if (tokens.kind() == spec::kSentencePieceTokens) {
    out.insert(out.size() - 1,
               tokens.model_path().empty()
                   ? absl::StrFormat("tokens: SentencePiece %s, up to %u trained on the corpus "
                                     "(digits split)\n",
                                     tokens.model_type(), tokens.vocab_size())
                   : absl::StrFormat("tokens: SentencePiece model %s (%s)\n", tokens.model_path(),
                                     tokens.content_hash()));
  }
  if (r.spec().exposure().has_target()) {
    // Nothing trained: the canaries are the team's, in the team's model.
    const v1::ExposureTarget& t = r.spec().exposure().target();
    out.insert(out.size() - 1, absl::StrFormat("target: %s (%s), trained outside memaudit\n",
                                               t.torchscript_path(), t.content_hash()));
  }
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
  // The plots come from ExposurePlotsHtml (cli_plots.h).
  if (x.variants_size() == 0) return absl::StrCat("<h2>Canaries</h2>", HtmlCanaryTable(x));
  std::string html =
      "<h2>Sweep</h2><table><tr><th>variant</th><th>batch</th><th>units</th><th>dropout</th>"
      "<th>epochs</th><th>learning rate</th><th>DP epsilon</th><th>final loss</th>";
  const std::vector<v1::ExposureVariantResult> variants = VariantsOf(x);
  for (const v1::ExposureByRepeats& g : variants[0].results().by_repeats()) {
    absl::StrAppend(&html, "<th>", InsertedLabel(g.repeats()), "</th>");
  }
  absl::StrAppend(&html, "<th>extracted</th></tr>");
  for (const v1::ExposureVariantResult& v : variants) {
    absl::StrAppend(
        &html,
        absl::StrFormat("<tr><td>%s</td><td>%u</td><td>%u</td><td>%g</td><td>%u</td><td>%g</td>"
                        "<td>%s</td><td>%.4f</td>",
                        HtmlEscape(v.name()), v.batch_size(), v.units(), v.dropout(), v.epochs(),
                        v.learning_rate(),
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
      "calibrated_lower_bound,baseline_sampled_exposure,baseline_sampled_lower_bound,"
      "baseline_extrapolated_exposure,calibrated_rank,calibrated_exact_exposure,"
      "sampled_exposure_low,sampled_exposure_high,baseline_sampled_exposure_low,"
      "baseline_sampled_exposure_high,calibrated_exposure_low,calibrated_exposure_high\n";
  std::string groups =
      "audit_id,repeats,canaries,mean_exposure,median_exposure,mean_sampled_exposure,"
      "mean_extrapolated_exposure,log2_space,variant,mean_baseline_exposure,"
      "mean_calibrated_exposure,mean_baseline_sampled_exposure,"
      "mean_baseline_extrapolated_exposure,mean_calibrated_exact_exposure\n";
  std::string variants =
      "audit_id,variant,batch_size,units,dropout,dp_noise_multiplier,dp_clip_norm,dp_epsilon,"
      "dp_delta,training_steps,final_loss,baseline_final_loss,control_median_exposure,"
      "extracted,epochs,learning_rate\n";
  // Exposure during training: one row per evaluation point and canary.
  std::string curve = "audit_id,variant,step,secret,repeats,px_bits,rank,exact,exposure\n";
  bool has_curve = false;
  for (const v1::ExposureVariantResult& v : VariantsOf(x)) {
    const v1::ExposureResults& vx = v.results();
    for (const v1::ExposureCurvePoint& p : vx.curve()) {
      has_curve = true;
      for (int i = 0; i < p.exposure_size() && i < vx.canaries_size(); ++i) {
        absl::StrAppend(
            &curve, absl::StrFormat("%s,%s,%u,%s,%u,%.17g,%u,%d,%.17g\n", r.audit_id(), v.name(),
                                    p.step(), vx.canaries(i).secret(), vx.canaries(i).repeats(),
                                    p.px_bits(i), p.rank(i), p.exact(i), p.exposure(i)));
      }
    }
    for (const v1::CanaryResult& c : vx.canaries()) {
      absl::StrAppend(
          &canaries,
          absl::StrFormat("%s,%s,%u,%.17g,%u,%d,%.17g,%.17g,%d,%.17g,%u,%s,%.17g,%u,%d,%.17g,"
                          "%.17g,%.17g,%d,%.17g,%d,%.17g,%u,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,"
                          "%.17g\n",
                          r.audit_id(), c.secret(), c.repeats(), c.px_bits(), c.rank(), c.exact(),
                          c.exposure(), c.sampled_exposure(), c.sampled_lower_bound(),
                          c.extrapolated_exposure(), c.rank_queries(), v.name(),
                          c.baseline_px_bits(), c.baseline_rank(), c.baseline_exact(),
                          c.baseline_exposure(), c.calibrated_px_bits(), c.calibrated_exposure(),
                          c.calibrated_lower_bound(), c.baseline_sampled_exposure(),
                          c.baseline_sampled_lower_bound(), c.baseline_extrapolated_exposure(),
                          c.calibrated_rank(), c.calibrated_exact_exposure(),
                          c.sampled_exposure_low(), c.sampled_exposure_high(),
                          c.baseline_sampled_exposure_low(), c.baseline_sampled_exposure_high(),
                          c.calibrated_exposure_low(), c.calibrated_exposure_high()));
    }
    for (const v1::ExposureByRepeats& g : vx.by_repeats()) {
      absl::StrAppend(&groups,
                      absl::StrFormat("%s,%u,%u,%.17g,%.17g,%.17g,%.17g,%.17g,%s,%.17g,%.17g,%.17g,"
                                      "%.17g,%.17g\n",
                                      r.audit_id(), g.repeats(), g.canaries(), g.mean_exposure(),
                                      g.median_exposure(), g.mean_sampled_exposure(),
                                      g.mean_extrapolated_exposure(), vx.log2_space(), v.name(),
                                      g.mean_baseline_exposure(), g.mean_calibrated_exposure(),
                                      g.mean_baseline_sampled_exposure(),
                                      g.mean_baseline_extrapolated_exposure(),
                                      g.mean_calibrated_exact_exposure()));
    }
    absl::StrAppend(
        &variants,
        absl::StrFormat(
            "%s,%s,%u,%u,%.17g,%.17g,%.17g,%.17g,%.17g,%u,%.17g,%.17g,%.17g,%d,%u,%.17g\n",
            r.audit_id(), v.name(), v.batch_size(), v.units(), v.dropout(), v.dp_noise_multiplier(),
            v.dp_clip_norm(), v.dp_epsilon(), v.dp_delta(), vx.training_steps(), vx.final_loss(),
            vx.baseline_final_loss(), vx.control_median_exposure(), vx.extracted(), v.epochs(),
            v.learning_rate()));
  }
  MEMAUDIT_RETURN_IF_ERROR(WriteFile(dir + "/canaries.csv", canaries));
  if (has_curve) {
    MEMAUDIT_RETURN_IF_ERROR(WriteFile(dir + "/exposure_curve.csv", curve));
  }
  // Only a sweep's results carry the resolved recipes.
  if (x.variants_size() > 0) {
    MEMAUDIT_RETURN_IF_ERROR(WriteFile(dir + "/exposure_variants.csv", variants));
  }
  MEMAUDIT_RETURN_IF_ERROR(WriteReplicatesCsv(r.audit_id(), VariantsOf(x), dir));
  MEMAUDIT_RETURN_IF_ERROR(WriteExtractableCsv(r.audit_id(), VariantsOf(x), dir));
  return WriteFile(dir + "/exposure_by_repeats.csv", groups);
}

namespace {

class Exposure final : public KindHandler {
 public:
  std::string Table(const v1::AuditResults& results) const override {
    return ExposureTable(results);
  }

  absl::Status WriteCsv(const v1::AuditResults& results, const std::string& dir) const override {
    return WriteExposureCsv(results, dir);
  }

  std::string HtmlSections(const v1::AuditResults& results) const override {
    return absl::StrCat(ExposurePlotsHtml(results), ExposureHtmlSection(results));
  }

  std::string HtmlSizeRows(const v1::AuditResults& results) const override {
    return absl::StrFormat("<tr><th>models &times; canaries</th><td>%u &times; %u</td></tr>",
                           results.models(), results.examples());
  }
};

}  // namespace

}  // namespace memaudit::cli

namespace memaudit {

template <>
const cli::KindHandler& HandlerOfKind<cli::KindHandler, v1::AuditSpec::kExposure>() {
  static const cli::Exposure handler;
  return handler;
}

}  // namespace memaudit
