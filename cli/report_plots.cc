#include "cli/report_plots.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "audits/membership/attacks.h"
#include "cli/exposure_render.h"
#include "cli/svg_plot.h"
#include "scoring/skew_normal.h"

namespace memaudit::cli {
namespace {

using svg::Corner;
using svg::LegendEntry;
using svg::Plot;
using svg::Point;
using svg::Scale;
using svg::Stroke;

constexpr const char* kGrey = "#888";
constexpr const char* kRed = "#d1495b";
constexpr const char* kOrange = "#e08e0b";
constexpr const char* kDark = "#4a4a4a";

// The report's page is a text column of 70em (about 1,120 px): each plot is
// drawn that wide, its plot area on the left and the legend in the right
// margin, outside the data, and scales down with a narrower page.
svg::Frame PageFrame() { return svg::Frame{1100, 410, 64, 300, 20, 50}; }

// Numbers in titles and labels: "n/a" rather than "nan" (a dot can be
// finite while its interval is not).
std::string Fixed(double v, int decimals) {
  return std::isfinite(v) ? absl::StrFormat("%.*f", decimals, v) : "n/a";
}

// The largest finite value, or `floor` when there is none larger.
double MaxFinite(const std::vector<double>& values, double floor) {
  for (double v : values) {
    if (std::isfinite(v)) floor = std::max(floor, v);
  }
  return floor;
}

// Unlearning results as a (defense x feature) grid for one classifier, in the
// order the results list them, the baseline first among the features.
struct UnlearningGrid {
  std::string classifier;
  std::vector<std::string> defenses;
  std::vector<std::string> features;
  std::map<std::pair<std::string, std::string>, const v1::UnlearningAttackResult*> cells;
};

UnlearningGrid GridOf(const v1::UnlearningResults& u) {
  UnlearningGrid grid;
  if (u.attacks_size() == 0) return grid;
  grid.classifier = u.attacks(0).classifier();
  auto add = [](std::vector<std::string>* list, const std::string& name) {
    if (std::find(list->begin(), list->end(), name) == list->end()) list->push_back(name);
  };
  for (const v1::UnlearningAttackResult& a : u.attacks()) {
    if (a.classifier() != grid.classifier) continue;
    add(&grid.defenses, a.defense());
    add(&grid.features, a.feature());
    grid.cells[{a.defense(), a.feature()}] = &a;
  }
  std::stable_partition(grid.features.begin(), grid.features.end(),
                        [](const std::string& f) { return f == "baseline"; });
  return grid;
}

// Bars of `value` per (defense, feature) cell, grouped by defense.
std::string GroupedBars(const UnlearningGrid& grid, const std::vector<std::string>& features,
                        double (v1::UnlearningAttackResult::*value)() const,
                        const std::string& value_name, double y_hi, double reference,
                        const std::string& reference_label, const std::string& css_class) {
  if (grid.defenses.empty() || features.empty()) return "";
  svg::Frame frame = PageFrame();
  // Wide enough for about 14 px per bar.
  const double plot_w =
      std::max(frame.width - frame.left - frame.right,
               14.0 * static_cast<double>(grid.defenses.size() * (features.size() + 1)));
  frame.width = frame.left + plot_w + frame.right;
  const double groups = static_cast<double>(grid.defenses.size());
  Plot plot(frame, Plot::XAxisFor(frame, Scale::kLinear, 0, groups),
            Plot::YAxisFor(frame, Scale::kLinear, 0, y_hi),
            absl::StrCat(value_name, " per feature and defense, ", grid.classifier), css_class);
  std::vector<svg::Tick> group_ticks;
  for (size_t d = 0; d < grid.defenses.size(); ++d) {
    group_ticks.push_back({static_cast<double>(d) + 0.5, grid.defenses[d]});
  }
  plot.XTicks(group_ticks, "defense (release policy)", /*grid=*/false);
  plot.YTicks(svg::LinearTicks(0, y_hi, 5), value_name);
  plot.HLine(reference, {kGrey, 1, "4 4"}, "reference", reference_label, /*label_right=*/true);
  const double bar = 0.8 / static_cast<double>(features.size());
  for (size_t d = 0; d < grid.defenses.size(); ++d) {
    for (size_t f = 0; f < features.size(); ++f) {
      auto cell = grid.cells.find({grid.defenses[d], features[f]});
      if (cell == grid.cells.end()) continue;
      const double v = (cell->second->*value)();
      const double x0 = static_cast<double>(d) + 0.1 + bar * static_cast<double>(f);
      plot.Box({x0, 0}, {x0 + bar * 0.9, v}, svg::Color(f), "bar",
               absl::StrFormat("%s / %s: %s %s", grid.defenses[d], features[f], value_name,
                               Fixed(v, 4)));
    }
  }
  std::vector<LegendEntry> legend;
  for (size_t f = 0; f < features.size(); ++f) {
    legend.push_back({features[f], svg::Color(f), LegendEntry::Kind::kBox});
  }
  plot.Legend(legend, Corner::kOutsideRight);
  return plot.Finish();
}

std::vector<std::string> MetricsOf(const v1::RelationalResults& r) {
  std::vector<std::string> metrics(r.metrics().begin(), r.metrics().end());
  for (const v1::RelationalCurve& c : r.curves()) {
    for (const v1::RelationalPoint& p : c.points()) {
      if (std::find(metrics.begin(), metrics.end(), p.metric()) == metrics.end()) {
        metrics.push_back(p.metric());
      }
    }
  }
  return metrics;
}

// The points of each curve for one metric, in step order.
std::vector<std::vector<const v1::RelationalPoint*>> PointsFor(const v1::RelationalResults& r,
                                                               const std::string& metric) {
  std::vector<std::vector<const v1::RelationalPoint*>> out;
  for (const v1::RelationalCurve& c : r.curves()) {
    std::vector<const v1::RelationalPoint*> points;
    for (const v1::RelationalPoint& p : c.points()) {
      if (p.metric() == metric) points.push_back(&p);
    }
    std::stable_sort(points.begin(), points.end(),
                     [](const auto* a, const auto* b) { return a->step() < b->step(); });
    out.push_back(std::move(points));
  }
  return out;
}

std::string StepTitle(const v1::RelationalResults& r) {
  return r.model() == "linear" ? "gradient steps" : "epochs";
}

double MaxStep(const std::vector<std::vector<const v1::RelationalPoint*>>& curves) {
  double max_step = 1;
  for (const auto& points : curves) {
    for (const v1::RelationalPoint* p : points) {
      max_step = std::max(max_step, static_cast<double>(p->step()));
    }
  }
  return max_step;
}

bool AnyPoints(const std::vector<std::vector<const v1::RelationalPoint*>>& curves) {
  for (const auto& points : curves) {
    if (!points.empty()) return true;
  }
  return false;
}

}  // namespace

std::string RocSvg(const v1::AuditResults& r) {
  // A square plot area, 112 px per decade on both axes, so the low-FPR region
  // (1e-4 to 1e-2) is 224 px wide; the legend to its right.
  const svg::Frame frame{920, 640, 70, 290, 20, 60};
  Plot plot(frame, Plot::XAxisFor(frame, Scale::kLog10, 1e-5, 1),
            Plot::YAxisFor(frame, Scale::kLog10, 1e-5, 1), "ROC curves, log-log", "roc");
  plot.XTicks(svg::DecadeTicks(1e-5, 1), "false positive rate");
  plot.YTicks(svg::DecadeTicks(1e-5, 1), "true positive rate");
  plot.Line({{1e-5, 1e-5}, {1, 1}}, {"#aaa", 1, "4 4"}, "chance", "chance: TPR = FPR");
  if (r.attacks_size() > 0) {
    for (const v1::OperatingPoint& p : r.attacks(0).operating_points()) {
      plot.VLine(p.fpr_target(), {"#c33", 1, "2 3"}, "operating-point");
    }
  }
  std::vector<LegendEntry> legend;
  for (int i = 0; i < r.attacks_size(); ++i) {
    const v1::AttackResult& a = r.attacks(i);
    std::vector<Point> points;
    for (const v1::RocPoint& p : a.roc()) {
      // Zero rates have no place on log axes.
      if (p.fpr() > 0 && p.tpr() > 0) points.push_back({p.fpr(), p.tpr()});
    }
    plot.Line(points, {svg::Color(i), 1.6, ""}, "curve", membership::AttackName(a.attack()));
    legend.push_back(
        {absl::StrFormat("%s (AUC %s)", membership::AttackName(a.attack()), Fixed(a.auc(), 3)),
         svg::Color(i)});
  }
  plot.Legend(legend, Corner::kOutsideRight);
  return plot.Finish();
}

std::string ForgettingCurvesSvg(const v1::ForgettingResults& f) {
  if (f.curve_size() == 0) return "";
  double max_step = 1;
  for (const v1::ForgettingCurvePoint& p : f.curve()) {
    max_step = std::max(max_step, static_cast<double>(p.steps_since_injection()));
  }
  const svg::Frame frame = PageFrame();
  Plot plot(frame, Plot::XAxisFor(frame, Scale::kLog1p, 0, max_step),
            Plot::YAxisFor(frame, Scale::kLinear, 0, 1),
            "membership inference against steps since injection", "forgetting");
  plot.XTicks(svg::Log1pTicks(max_step), "steps since injection (log scale, 0 kept)");
  plot.YTicks(svg::LinearTicks(0, 1, 5), "mean across trials");
  // Labels on the left: forgetting curves fall toward chance on the right.
  plot.HLine(0.5, {kGrey, 1, "4 4"}, "chance", "chance (accuracy, AUC)");
  const std::string tpr_name = absl::StrFormat("TPR at FPR %g", f.fpr_target());
  struct Series {
    std::string name, css;
    const v1::TrialMean& (v1::ForgettingCurvePoint::*metric)() const;
  };
  const std::vector<Series> series = {
      {"MI accuracy", "accuracy", &v1::ForgettingCurvePoint::accuracy},
      {"AUC", "auc", &v1::ForgettingCurvePoint::auc},
      {tpr_name, "tpr", &v1::ForgettingCurvePoint::tpr}};
  if (f.fpr_target() > 0) {
    plot.HLine(f.fpr_target(), {svg::Color(2), 1, "2 3"}, "chance-tpr", "chance TPR (= FPR)");
  }
  std::vector<double> steps;
  for (const v1::ForgettingCurvePoint& p : f.curve()) {
    steps.push_back(static_cast<double>(p.steps_since_injection()));
  }
  // Bands first so no line is drawn under another series' band.
  for (size_t s = 0; s < series.size(); ++s) {
    std::vector<double> low, high;
    for (const v1::ForgettingCurvePoint& p : f.curve()) {
      low.push_back((p.*series[s].metric)().low());
      high.push_back((p.*series[s].metric)().high());
    }
    // Light: with few trials the t-intervals are wide and overlap.
    plot.Band(steps, low, high, svg::Color(s), absl::StrCat("band ", series[s].css),
              absl::StrCat(series[s].name, ", 95% interval across trials"), /*opacity=*/0.12);
  }
  std::vector<LegendEntry> legend;
  for (size_t s = 0; s < series.size(); ++s) {
    std::vector<Point> points;
    for (const v1::ForgettingCurvePoint& p : f.curve()) {
      points.push_back(
          {static_cast<double>(p.steps_since_injection()), (p.*series[s].metric)().mean()});
    }
    plot.Line(points, {svg::Color(s)}, absl::StrCat("curve ", series[s].css), series[s].name);
    for (const v1::ForgettingCurvePoint& p : f.curve()) {
      const v1::TrialMean& m = (p.*series[s].metric)();
      plot.Dot(
          {static_cast<double>(p.steps_since_injection()), m.mean()}, svg::Color(s), "",
          absl::StrFormat("%s at %d steps: %s [%s, %s]", series[s].name, p.steps_since_injection(),
                          Fixed(m.mean(), 3), Fixed(m.low(), 3), Fixed(m.high(), 3)),
          /*hollow=*/false, /*radius=*/2.5);
    }
    legend.push_back({series[s].name, svg::Color(s)});
  }
  legend.push_back(
      {absl::StrFormat("95%% interval, %u trial%s", f.trials(), f.trials() == 1 ? "" : "s"),
       "#c9d6e3", LegendEntry::Kind::kBox});
  legend.push_back({"chance", kGrey, LegendEntry::Kind::kLine, "4 4"});
  plot.Legend(legend, Corner::kOutsideRight);
  return plot.Finish();
}

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

std::string UnlearningAucSvg(const v1::UnlearningResults& u) {
  const UnlearningGrid grid = GridOf(u);
  return GroupedBars(grid, grid.features, &v1::UnlearningAttackResult::auc, "attack AUC", 1, 0.5,
                     "chance", "unlearning-auc");
}

std::string UnlearningDegCountSvg(const v1::UnlearningResults& u) {
  const UnlearningGrid grid = GridOf(u);
  // The baseline's DegCount is against itself (0): not a bar.
  std::vector<std::string> features;
  for (const std::string& f : grid.features) {
    if (f != "baseline") features.push_back(f);
  }
  return GroupedBars(grid, features, &v1::UnlearningAttackResult::deg_count, "DegCount", 1, 0.5,
                     "0.5", "unlearning-degcount");
}

std::string RelationalRmNormSvg(const v1::RelationalResults& r, const std::string& metric) {
  const auto curves = PointsFor(r, metric);
  if (!AnyPoints(curves)) return "";
  std::vector<double> values = {0};
  double lo = 0;
  for (const auto& points : curves) {
    for (const v1::RelationalPoint* p : points) {
      values.push_back(p->rm_norm());
      if (std::isfinite(p->rm_norm())) lo = std::min(lo, p->rm_norm());
    }
  }
  const auto [y_lo, y_hi] = svg::NiceRange(lo, MaxFinite(values, 0.1), 5);
  const double max_step = MaxStep(curves);
  const svg::Frame frame = PageFrame();
  Plot plot(frame, Plot::XAxisFor(frame, Scale::kLog1p, 0, max_step),
            Plot::YAxisFor(frame, Scale::kLinear, y_lo, y_hi),
            absl::StrCat("RM_norm over training, ", metric), "relational-rm");
  plot.XTicks(svg::Log1pTicks(max_step), absl::StrCat(StepTitle(r), " (log scale)"));
  plot.YTicks(svg::LinearTicks(y_lo, y_hi, 5), absl::StrCat("RM_norm (", metric, ")"));
  plot.HLine(0, {kGrey, 1, "4 4"}, "zero");
  std::vector<LegendEntry> legend;
  for (size_t c = 0; c < curves.size(); ++c) {
    const std::string& variant = r.curves(static_cast<int>(c)).variant();
    std::vector<Point> points;
    for (const v1::RelationalPoint* p : curves[c]) {
      points.push_back({static_cast<double>(p->step()), p->rm_norm()});
    }
    plot.Line(points, {svg::Color(c)}, "curve rm-norm", absl::StrCat(variant, " RM_norm"));
    for (const v1::RelationalPoint* p : curves[c]) {
      plot.Dot({static_cast<double>(p->step()), p->rm_norm()}, svg::Color(c), "",
               absl::StrFormat("%s at %d: RM_norm %s (train %s, held-out %s)", variant, p->step(),
                               Fixed(p->rm_norm(), 3), Fixed(p->success_train(), 3),
                               Fixed(p->success_val(), 3)),
               /*hollow=*/false, /*radius=*/2.5);
    }
    legend.push_back({variant, svg::Color(c)});
  }
  plot.Legend(legend, Corner::kOutsideRight);
  return plot.Finish();
}

std::string RelationalSuccessSvg(const v1::RelationalResults& r, const std::string& metric) {
  const auto curves = PointsFor(r, metric);
  if (!AnyPoints(curves)) return "";
  const double max_step = MaxStep(curves);
  const svg::Frame frame = PageFrame();
  Plot plot(frame, Plot::XAxisFor(frame, Scale::kLog1p, 0, max_step),
            Plot::YAxisFor(frame, Scale::kLinear, 0, 1),
            absl::StrCat("reconstruction success over training, ", metric), "relational-success");
  plot.XTicks(svg::Log1pTicks(max_step), absl::StrCat(StepTitle(r), " (log scale)"));
  plot.YTicks(svg::LinearTicks(0, 1, 5), absl::StrCat("success (", metric, ")"));
  std::vector<LegendEntry> legend;
  for (size_t c = 0; c < curves.size(); ++c) {
    const std::string& variant = r.curves(static_cast<int>(c)).variant();
    std::vector<Point> train, val;
    for (const v1::RelationalPoint* p : curves[c]) {
      train.push_back({static_cast<double>(p->step()), p->success_train()});
      val.push_back({static_cast<double>(p->step()), p->success_val()});
    }
    plot.Line(train, {svg::Color(c)}, "curve success-train",
              absl::StrCat(variant, " success, training records"));
    plot.Line(val, {svg::Color(c), 1.6, "5 3"}, "curve success-val",
              absl::StrCat(variant, " success, held-out records"));
    legend.push_back({variant, svg::Color(c)});
  }
  legend.push_back({"training records", kDark});
  legend.push_back({"held-out records", kDark, LegendEntry::Kind::kLine, "5 3"});
  plot.Legend(legend, Corner::kOutsideRight);
  return plot.Finish();
}

std::string ForgettingExposureSvg(const v1::ForgettingResults& f) {
  double max_step = 1;
  bool any = false;
  for (const v1::ForgettingExposureCurve& c : f.exposure_curves()) {
    for (const v1::ForgettingExposurePoint& p : c.points()) {
      any = true;
      max_step = std::max(max_step, static_cast<double>(p.steps_since_injection()));
    }
  }
  if (!any) return "";
  // Exposure lies in [0, log2|R|]; a t-interval over 2 or 3 trials does not,
  // so the bands are cut to that range rather than stretching the axis.
  const double ceiling = f.log2_space() > 0 ? f.log2_space() : 1;
  const double y_hi = ceiling * 1.05;
  auto clamp = [&](double v) { return std::isfinite(v) ? std::clamp(v, 0.0, ceiling) : v; };
  const svg::Frame frame = PageFrame();
  Plot plot(frame, Plot::XAxisFor(frame, Scale::kLog1p, 0, max_step),
            Plot::YAxisFor(frame, Scale::kLinear, 0, y_hi),
            "canary exposure against steps since injection", "forgetting-exposure");
  plot.XTicks(svg::Log1pTicks(max_step), "steps since injection (log scale, 0 kept)");
  plot.YTicks(svg::LinearTicks(0, y_hi, 5), "mean exposure (bits)");
  plot.HLine(f.log2_space(), {kRed, 1, "4 4"}, "log2-space", "log2|R|", /*label_right=*/true);
  std::vector<LegendEntry> legend;
  for (int i = 0; i < f.exposure_curves_size(); ++i) {
    const v1::ForgettingExposureCurve& c = f.exposure_curves(i);
    const std::string name = InsertedLabel(c.repeats());
    std::vector<double> steps, low, high;
    std::vector<Point> injected, baseline;
    for (const v1::ForgettingExposurePoint& p : c.points()) {
      const double k = static_cast<double>(p.steps_since_injection());
      steps.push_back(k);
      low.push_back(clamp(p.exposure().low()));
      high.push_back(clamp(p.exposure().high()));
      injected.push_back({k, p.exposure().mean()});
      baseline.push_back({k, p.baseline_exposure().mean()});
    }
    plot.Band(steps, low, high, svg::Color(i), "band",
              absl::StrCat(name, ", 95% interval across trials"), /*opacity=*/0.12);
    plot.Line(injected, {svg::Color(i)}, "curve injected", absl::StrCat(name, ", injected arm"));
    plot.Line(baseline, {svg::Color(i), 1, "2 3"}, "curve baseline",
              absl::StrCat(name, ", baseline arm"));
    for (const v1::ForgettingExposurePoint& p : c.points()) {
      plot.Dot({static_cast<double>(p.steps_since_injection()), p.exposure().mean()}, svg::Color(i),
               "",
               absl::StrFormat("%s at %d steps: %s bits [%s, %s]", name, p.steps_since_injection(),
                               Fixed(p.exposure().mean(), 2), Fixed(p.exposure().low(), 2),
                               Fixed(p.exposure().high(), 2)),
               /*hollow=*/c.repeats() == 0, /*radius=*/2.5);
    }
    legend.push_back({name, svg::Color(i)});
  }
  legend.push_back({"baseline arm", kGrey, LegendEntry::Kind::kLine, "2 3"});
  legend.push_back({"log2|R|", kRed, LegendEntry::Kind::kLine, "4 4"});
  plot.Legend(legend, Corner::kOutsideRight);
  return plot.Finish();
}

std::string ForgettingPlotsHtml(const v1::AuditResults& r) {
  const v1::ForgettingResults& f = r.forgetting();
  if (const std::string exposure = ForgettingExposureSvg(f); !exposure.empty()) {
    return absl::StrCat(
        "<h2>Canary exposure over steps since injection</h2>", exposure,
        absl::StrFormat(
            "<p>Mean exposure of the canaries of each insertion count (xN: N copies in the "
            "canary batch; control: never inserted) under the injected arm, mean across %u "
            "trials; shaded: the 95%% interval across trials; dotted: the same canaries under "
            "the baseline arm. Dashed red: log2|R|, the largest exposure (bands are cut to "
            "[0, log2|R|]). Steps are on a log(1 + steps) axis.</p>",
            f.trials()));
  }
  const std::string curves = ForgettingCurvesSvg(f);
  if (curves.empty()) return "";
  return absl::StrCat(
      "<h2>Membership inference over steps since injection</h2>", curves,
      absl::StrFormat(
          "<p>Membership inference of the injected examples (injected arm against the baseline "
          "arm), mean across %u trials; shaded: the 95%% interval across trials. Dashed grey: "
          "chance for MI accuracy and AUC (0.5); dotted green: chance for the TPR at FPR %g "
          "(TPR = FPR). Steps are on a log(1 + steps) axis, so step 0 stays on it.</p>",
          f.trials(), f.fpr_target()));
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
        &html,
        x.variants_size() > 1 ? absl::StrCat("<h2>Exposure during training (variant ",
                                             svg::Escape(x.variants(0).name()), ")</h2>")
                              : "<h2>Exposure during training</h2>",
        plot,
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
  if (std::string plot = ReferencePxSvg(x); !plot.empty()) {
    absl::StrAppend(
        &html,
        sweep ? absl::StrCat("<h2>Reference Px and the skew-normal fit (variant ",
                             svg::Escape(x.variants(0).name()), ")</h2>")
              : "<h2>Reference Px and the skew-normal fit</h2>",
        plot,
        "<p>Histogram of the reference sample's Px; red: the fitted skew-normal density, scaled "
        "to references per bin, whose left tail gives the extrapolated exposure. Ticks along the "
        "bottom: each canary's Px (inserted canaries labelled).</p>");
  }
  return html;
}

std::string UnlearningPlotsHtml(const v1::AuditResults& r) {
  const v1::UnlearningResults& u = r.unlearning();
  const std::string auc = UnlearningAucSvg(u);
  if (auc.empty()) return "";
  const std::string classifier = svg::Escape(u.attacks(0).classifier());
  std::string html = absl::StrCat(
      "<h2>Attack AUC per feature and defense</h2>", auc,
      absl::StrFormat("<p>Classifier %s (the first in the results). baseline: classical "
                      "membership inference on the original model alone; the other features: the "
                      "unlearning attack, which sees the model before and after the deletion. "
                      "Dashed: chance (0.5).</p>",
                      classifier));
  if (std::string deg = UnlearningDegCountSvg(u); !deg.empty()) {
    absl::StrAppend(
        &html, "<h2>DegCount against the baseline</h2>", deg,
        absl::StrFormat("<p>Classifier %s. DegCount: the share of target samples whose true "
                        "status the unlearning attack is more confident about than the classical "
                        "attack with the same defense; above 0.5 the deletion leaks more than "
                        "the original model alone.</p>",
                        classifier));
  }
  return html;
}

std::string RelationalPlotsHtml(const v1::AuditResults& r) {
  const v1::RelationalResults& rel = r.relational();
  std::string plots;
  for (const std::string& metric : MetricsOf(rel)) {
    const std::string rm = RelationalRmNormSvg(rel, metric);
    if (rm.empty()) continue;
    absl::StrAppend(&plots, "<h3>", svg::Escape(metric), "</h3>", rm,
                    RelationalSuccessSvg(rel, metric));
  }
  if (plots.empty()) return "";
  return absl::StrCat(
      "<h2>Relational memorization over training</h2>", plots,
      absl::StrFormat("<p>RM_norm = success at recovering the private part of a corrupted record "
                      "on training records minus on held-out records; one line per variant. "
                      "Second plot of each metric: the two success rates (solid: training, "
                      "dashed: held-out). %s on a log(1 + x) axis.</p>",
                      rel.model() == "linear" ? "Gradient steps" : "Epochs"));
}

}  // namespace memaudit::cli
