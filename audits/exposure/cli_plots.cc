#include "audits/exposure/cli_plots.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "audits/exposure/cli_extractable_render.h"
#include "audits/exposure/cli_render.h"
#include "cli/render.h"
#include "cli/report_plots.h"
#include "cli/svg_plot.h"
#include "scoring/skew_normal.h"

namespace memaudit::cli {

using svg::Corner;
using svg::LegendEntry;
using svg::Plot;
using svg::Point;
using svg::Scale;

namespace {

// A sweep: one mean-exposure line per variant (dotted: its baseline model),
// its canaries as dots in the same colour.
std::string SweepVsInsertionsSvg(const v1::ExposureResults& x) {
  double max_r = 1;
  std::vector<double> heights = {x.log2_space()};
  std::map<uint32_t, bool> repeats;
  for (const v1::ExposureVariantResult& v : x.variants()) {
    for (const v1::ExposureByRepeats& g : v.results().by_repeats()) {
      max_r = std::max<double>(max_r, g.repeats());
      repeats[g.repeats()] = true;
      heights.push_back(g.mean_exposure());
      if (v.results().baseline_model()) heights.push_back(g.mean_baseline_exposure());
    }
    for (const v1::CanaryResult& c : v.results().canaries()) heights.push_back(c.exposure());
  }
  const double y_hi = svg::NiceRange(0, MaxFinite(heights, 1)).second;
  const svg::Frame frame = PageFrame();
  Plot plot(frame, Plot::XAxisFor(frame, Scale::kLog1p, 0, max_r),
            Plot::YAxisFor(frame, Scale::kLinear, 0, y_hi),
            "exposure against insertions by sweep variant", "exposure");
  std::vector<svg::Tick> ticks;
  ticks.reserve(repeats.size());
  for (const auto& [r, unused] : repeats) {
    ticks.push_back({static_cast<double>(r), absl::StrCat(r)});
  }
  plot.XTicks(ticks, "insertions (log scale; 0 = controls)");
  plot.YTicks(svg::LinearTicks(0, y_hi), "exposure (bits)");
  plot.HLine(x.log2_space(), {kRed, 1, "5 4"}, "ceiling",
             absl::StrFormat("log2|R| = %.2f", x.log2_space()));
  std::vector<LegendEntry> legend;
  bool any_baseline = false;
  for (int i = 0; i < x.variants_size(); ++i) {
    const v1::ExposureVariantResult& v = x.variants(i);
    const v1::ExposureResults& r = v.results();
    const std::string color = svg::Color(static_cast<size_t>(i));
    const std::string name = v.dp_clip_norm() > 0 ? absl::StrFormat("%s (DP, eps %s)", v.name(),
                                                                    Fixed(v.dp_epsilon(), 2))
                                                  : v.name();
    std::vector<Point> mean, baseline;
    for (const v1::ExposureByRepeats& g : r.by_repeats()) {
      mean.push_back({static_cast<double>(g.repeats()), g.mean_exposure()});
      baseline.push_back({static_cast<double>(g.repeats()), g.mean_baseline_exposure()});
    }
    // The first variant keeps the class the integration tests look for.
    plot.Line(mean, {color, 1.6, ""}, i == 0 ? "curve" : "curve variant",
              absl::StrCat(name, ": mean exact exposure"));
    if (r.baseline_model()) {
      any_baseline = true;
      plot.Line(baseline, {color, 1.2, "2 3"}, "curve baseline",
                absl::StrCat(name, ": mean exposure under the baseline model"));
    }
    for (const v1::CanaryResult& c : r.canaries()) {
      const std::string title = absl::StrFormat(
          "%s, %s canary %s: exposure %s bits, rank %s%d", v.name(), InsertedLabel(c.repeats()),
          c.secret(), Fixed(c.exposure(), 2), c.exact() ? "" : ">=", c.rank());
      plot.Dot({static_cast<double>(c.repeats()), c.exposure()}, color,
               c.repeats() == 0 ? "canary control" : "canary", title,
               /*hollow=*/c.repeats() == 0);
    }
    legend.push_back({name, color, LegendEntry::Kind::kLine});
  }
  if (any_baseline) {
    legend.push_back({"its baseline model (no canaries)", kGrey, LegendEntry::Kind::kLine, "2 3"});
  }
  legend.push_back({"inserted canary", kDark, LegendEntry::Kind::kDot});
  legend.push_back({"control (never inserted)", kDark, LegendEntry::Kind::kHollowDot});
  legend.push_back({"log2|R| ceiling", kRed, LegendEntry::Kind::kLine, "5 4"});
  plot.Legend(legend, Corner::kOutsideRight);
  return plot.Finish();
}

// A plot's heading; with a sweep it names the variant the plot shows (the
// first, whose numbers are the top level's).
std::string FirstVariantHeading(const v1::ExposureResults& x, const std::string& title) {
  return x.variants_size() > 1 ? absl::StrCat("<h2>", title, " (variant ",
                                              svg::Escape(x.variants(0).name()), ")</h2>")
                               : absl::StrCat("<h2>", title, "</h2>");
}

}  // namespace

std::string ExposureVsInsertionsSvg(const v1::ExposureResults& x) {
  if (x.by_repeats_size() == 0 && x.canaries_size() == 0) return "";
  if (x.variants_size() > 1) return SweepVsInsertionsSvg(x);
  const bool sampled = HasEstimator(x, "sampled"), extrapolated = HasEstimator(x, "extrapolated");
  const bool baseline = x.baseline_model(), calibrated = x.reference_models() > 0;
  double max_r = 1;
  std::vector<double> heights = {x.log2_space()};
  for (const v1::ExposureByRepeats& g : x.by_repeats()) {
    max_r = std::max<double>(max_r, g.repeats());
    if (sampled) heights.push_back(g.mean_sampled_exposure());
    if (extrapolated) heights.push_back(g.mean_extrapolated_exposure());
    if (baseline) heights.push_back(g.mean_baseline_exposure());
    if (calibrated) heights.push_back(g.mean_calibrated_exposure());
  }
  for (const v1::CanaryResult& c : x.canaries()) {
    max_r = std::max<double>(max_r, c.repeats());
    heights.push_back(c.exposure());
  }
  const double y_hi = svg::NiceRange(0, MaxFinite(heights, 1)).second;
  const svg::Frame frame = PageFrame();
  Plot plot(frame, Plot::XAxisFor(frame, Scale::kLog1p, 0, max_r),
            Plot::YAxisFor(frame, Scale::kLinear, 0, y_hi), "exposure against insertions",
            "exposure");
  std::vector<svg::Tick> ticks;
  for (const v1::ExposureByRepeats& g : x.by_repeats()) {
    ticks.push_back({static_cast<double>(g.repeats()), absl::StrCat(g.repeats())});
  }
  plot.XTicks(ticks, "insertions (log scale; 0 = controls)");
  plot.YTicks(svg::LinearTicks(0, y_hi), "exposure (bits)");
  plot.HLine(x.log2_space(), {kRed, 1, "5 4"}, "ceiling",
             absl::StrFormat("log2|R| = %.2f", x.log2_space()));
  if (sampled && x.log2_reference_samples() > 0) {
    plot.HLine(x.log2_reference_samples(), {kOrange, 1, "2 3"}, "sampled-ceiling",
               absl::StrFormat("log2|S| = %.2f", x.log2_reference_samples()),
               /*label_right=*/true);
  }
  plot.HLine(x.control_median_exposure(), {kDark, 1, "1 3"}, "control-median",
             absl::StrFormat("control median %.2f", x.control_median_exposure()),
             /*label_right=*/true);
  struct Series {
    std::string name, dash, color;
    double (v1::ExposureByRepeats::*mean)() const;
  };
  std::vector<Series> series = {
      {"mean exact exposure", "", svg::Color(0), &v1::ExposureByRepeats::mean_exposure}};
  if (sampled) {
    series.push_back({"mean sampled exposure", "6 3", svg::Color(2),
                      &v1::ExposureByRepeats::mean_sampled_exposure});
  }
  if (extrapolated) {
    series.push_back({"mean extrapolated exposure", "2 2", svg::Color(3),
                      &v1::ExposureByRepeats::mean_extrapolated_exposure});
  }
  if (calibrated) {
    series.push_back({"mean calibrated exposure", "8 3 2 3", svg::Color(4),
                      &v1::ExposureByRepeats::mean_calibrated_exposure});
  }
  if (baseline) {
    series.push_back({"mean exposure, baseline model (no canaries)", "1 3", kGrey,
                      &v1::ExposureByRepeats::mean_baseline_exposure});
  }
  std::vector<LegendEntry> legend;
  for (size_t s = 0; s < series.size(); ++s) {
    std::vector<Point> points;
    for (const v1::ExposureByRepeats& g : x.by_repeats()) {
      points.push_back({static_cast<double>(g.repeats()), (g.*series[s].mean)()});
    }
    // The exact series keeps the class the integration tests look for.
    plot.Line(points, {series[s].color, 1.6, series[s].dash}, s == 0 ? "curve" : "curve estimator",
              series[s].name);
    legend.push_back({series[s].name, series[s].color, LegendEntry::Kind::kLine, series[s].dash});
  }
  for (const v1::CanaryResult& c : x.canaries()) {
    const std::string title =
        absl::StrFormat("%s canary %s: exposure %s bits, rank %s%d", InsertedLabel(c.repeats()),
                        c.secret(), Fixed(c.exposure(), 2), c.exact() ? "" : ">=", c.rank());
    if (c.repeats() == 0) {
      plot.Dot({0, c.exposure()}, kDark, "canary control", title, /*hollow=*/true);
    } else {
      plot.Dot({static_cast<double>(c.repeats()), c.exposure()},
               c.exact() ? svg::Color(0) : kOrange, "canary", title);
    }
  }
  legend.push_back({"inserted canary", svg::Color(0), LegendEntry::Kind::kDot});
  if (std::any_of(x.canaries().begin(), x.canaries().end(),
                  [](const v1::CanaryResult& c) { return c.repeats() > 0 && !c.exact(); })) {
    legend.push_back({"rank is a bound", kOrange, LegendEntry::Kind::kDot});
  }
  legend.push_back({"control (never inserted)", kDark, LegendEntry::Kind::kHollowDot});
  legend.push_back({"log2|R| ceiling", kRed, LegendEntry::Kind::kLine, "5 4"});
  if (sampled) legend.push_back({"log2|S| ceiling", kOrange, LegendEntry::Kind::kLine, "2 3"});
  plot.Legend(legend, Corner::kOutsideRight);
  return plot.Finish();
}

std::string ReferencePxSvg(const v1::ExposureResults& x) {
  const v1::PxHistogram& h = x.reference_px_histogram();
  if (h.counts_size() == 0 || !(h.bin_width() > 0) || !std::isfinite(h.low())) return "";
  const double width = h.bin_width();
  const double high = h.low() + width * h.counts_size();
  double total = 0, x_lo = h.low(), x_hi = high;
  std::vector<double> heights;
  for (uint64_t n : h.counts()) {
    total += static_cast<double>(n);
    heights.push_back(static_cast<double>(n));
  }
  for (const v1::CanaryResult& c : x.canaries()) {
    if (std::isfinite(c.px_bits())) {
      x_lo = std::min(x_lo, c.px_bits());
      x_hi = std::max(x_hi, c.px_bits());
    }
  }
  std::tie(x_lo, x_hi) = svg::NiceRange(x_lo, x_hi);
  const scoring::SkewNormalParams fit{x.fit_location(), x.fit_scale(), x.fit_shape()};
  const bool fitted = fit.scale > 0 && std::isfinite(fit.scale) && std::isfinite(fit.location) &&
                      std::isfinite(fit.shape);
  std::vector<Point> density;
  if (fitted) {
    // Expected references per bin under the fit: |S| * bin width * pdf.
    constexpr int kSamples = 240;
    for (int i = 0; i <= kSamples; ++i) {
      const double v = x_lo + (x_hi - x_lo) * i / kSamples;
      density.push_back({v, total * width * std::exp(scoring::SkewNormalLogPdf(v, fit))});
      heights.push_back(density.back().y);
    }
  }
  const double y_hi = svg::NiceRange(0, MaxFinite(heights, 1), 5).second;
  const svg::Frame frame = PageFrame();
  Plot plot(frame, Plot::XAxisFor(frame, Scale::kLinear, x_lo, x_hi),
            Plot::YAxisFor(frame, Scale::kLinear, 0, y_hi),
            "reference Px histogram with the skew-normal fit", "px-histogram");
  plot.XTicks(svg::LinearTicks(x_lo, x_hi), "Px (bits; lower = more likely)");
  plot.YTicks(svg::LinearTicks(0, y_hi, 5), "references per bin");
  for (int i = 0; i < h.counts_size(); ++i) {
    const double a = h.low() + width * i;
    // A sliver of gap keeps neighbouring bins apart.
    plot.Box({a + 0.04 * width, 0}, {a + 0.96 * width, static_cast<double>(h.counts(i))}, "#9dbcd4",
             "bin", absl::StrFormat("Px [%.2f, %.2f): %d references", a, a + width, h.counts(i)));
  }
  std::vector<LegendEntry> legend = {
      {absl::StrFormat("reference Px (|S| = %.0f)", total), "#9dbcd4", LegendEntry::Kind::kBox}};
  if (fitted) {
    plot.Line(density, {kRed, 1.6, ""}, "fit",
              absl::StrFormat("skew-normal fit: location %.3f, scale %.3f, shape %.3f",
                              fit.location, fit.scale, fit.shape));
    legend.push_back({std::isfinite(x.fit_ks_p_value())
                          ? absl::StrFormat("skew-normal fit (KS p %.2g)", x.fit_ks_p_value())
                          : "skew-normal fit",
                      kRed});
  }
  // A rug of canary Px along the bottom: how far into the tail each sits.
  const double rug = y_hi * 0.1;
  for (const v1::CanaryResult& c : x.canaries()) {
    const bool inserted = c.repeats() > 0;
    plot.Line({{c.px_bits(), 0}, {c.px_bits(), rug}},
              {inserted ? svg::Color(0) : kDark, inserted ? 2.0 : 1.0, ""},
              inserted ? "canary" : "canary control",
              absl::StrFormat("%s canary %s: Px %s bits", InsertedLabel(c.repeats()), c.secret(),
                              Fixed(c.px_bits(), 2)));
    if (inserted)
      plot.Label({c.px_bits(), rug}, InsertedLabel(c.repeats()), "middle", svg::Color(0), 0, -3);
  }
  legend.push_back({"inserted canary Px", svg::Color(0)});
  legend.push_back({"control canary Px", kDark});
  plot.Legend(legend, Corner::kOutsideRight);
  return plot.Finish();
}

std::string ExposureCurveSvg(const v1::ExposureResults& x) {
  if (x.curve().empty()) return "";
  const double max_step = std::max<double>(1, static_cast<double>(x.curve().rbegin()->step()));
  const double ceiling = x.log2_space() > 0 ? x.log2_space() : 1;
  const double y_hi = ceiling * 1.05;
  const svg::Frame frame = PageFrame();
  Plot plot(frame, Plot::XAxisFor(frame, Scale::kLinear, 0, max_step),
            Plot::YAxisFor(frame, Scale::kLinear, 0, y_hi), "canary exposure during training",
            "exposure-curve");
  plot.XTicks(svg::LinearTicks(0, max_step, 6), "training steps");
  plot.YTicks(svg::LinearTicks(0, y_hi, 5), "exact exposure (bits)");
  plot.HLine(x.log2_space(), {kRed, 1, "4 4"}, "log2-space", "log2|R|", /*label_right=*/true);
  // One line per insertion count, in the order of the first point's groups.
  std::vector<LegendEntry> legend;
  const auto& groups = x.curve(0).by_repeats();
  for (int gi = 0; gi < groups.size(); ++gi) {
    const uint32_t repeats = groups.Get(gi).repeats();
    const std::string name = InsertedLabel(repeats);
    std::vector<Point> line;
    for (const v1::ExposureCurvePoint& p : x.curve()) {
      for (const v1::ExposureByRepeats& g : p.by_repeats()) {
        if (g.repeats() != repeats) continue;
        const double value = repeats == 0 ? g.median_exposure() : g.mean_exposure();
        line.push_back({static_cast<double>(p.step()), value});
        plot.Dot(line.back(), svg::Color(gi), "",
                 absl::StrFormat("%s at step %d: %s bits", name, p.step(), Fixed(value, 2)),
                 /*hollow=*/repeats == 0, /*radius=*/2.5);
      }
    }
    plot.Line(line, {svg::Color(gi), 1, repeats == 0 ? "2 3" : ""}, "curve", name);
    legend.push_back({repeats == 0 ? "control (median)" : name, svg::Color(gi),
                      LegendEntry::Kind::kLine, repeats == 0 ? "2 3" : ""});
  }
  legend.push_back({"log2|R|", kRed, LegendEntry::Kind::kLine, "4 4"});
  plot.Legend(legend, Corner::kOutsideRight);
  return plot.Finish();
}

std::string ExposurePlotsHtml(const v1::AuditResults& r) {
  const v1::ExposureResults& x = r.exposure();
  std::string html;
  if (std::string plot = ExposureCurveSvg(x); !plot.empty()) {
    absl::StrAppend(
        &html, FirstVariantHeading(x, "Exposure during training"), plot,
        "<p>Exact exposure of the canary model at each evaluation point (spec eval_every_steps "
        "or eval_every_epoch; the last is the final model): the mean over the canaries of each "
        "insertion count, and the controls' median (dotted, hollow). Dashed red: log2|R|.</p>");
  }
  const bool sweep = x.variants_size() > 1;
  if (std::string plot = ExposureVsInsertionsSvg(x); !plot.empty() && sweep) {
    absl::StrAppend(
        &html, "<h2>Exposure against insertions, by sweep variant</h2>", plot,
        "<p>One colour per variant of the sweep, all with the same canaries. Solid: mean exact "
        "exposure per insertion count; dotted: the same canaries under the variant's baseline "
        "model, trained without them; dots: each canary (hollow: controls, never inserted). "
        "Dashed red: log2|R|. Insertions are on a log(1 + r) axis.</p>");
  } else if (!plot.empty()) {
    absl::StrAppend(
        &html, "<h2>Exposure against insertions</h2>", plot,
        "<p>Dots: canaries by insertion count (hollow: controls, never inserted; orange: the "
        "query budget ran out, so the rank is a bound). Lines: mean exposure per insertion count "
        "for each estimator (calibrated: against reference models; baseline: under the model "
        "trained without canaries, where present). Dashed red: log2|R|, the largest exact "
        "exposure; dotted orange: log2|S|, the sampled estimator's ceiling. Insertions are on a "
        "log(1 + r) axis.</p>");
  }
  if (std::string plot = ExtractableSvg(x); !plot.empty()) {
    absl::StrAppend(
        &html, FirstVariantHeading(x, "Extractable memorization"), plot,
        "<p>The fraction of held-out corpus sequences the canary model reproduced exactly from "
        "their prompt, by the times they were inserted (hollow, at 0: never inserted); band: "
        "Clopper&ndash;Pearson 95% interval. Insertions are on a log(1 + d) axis.</p>");
  }
  if (std::string plot = ReferencePxSvg(x); !plot.empty()) {
    absl::StrAppend(
        &html, FirstVariantHeading(x, "Reference Px and the skew-normal fit"), plot,
        "<p>Histogram of the reference sample's Px; red: the fitted skew-normal density, scaled "
        "to references per bin, whose left tail gives the extrapolated exposure. Ticks along the "
        "bottom: each canary's Px (inserted canaries labelled).</p>");
  }
  return html;
}

}  // namespace memaudit::cli
