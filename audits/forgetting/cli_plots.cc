#include "audits/forgetting/cli_plots.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/render.h"
#include "cli/report_plots.h"
#include "cli/svg_plot.h"

namespace memaudit::cli {

using svg::Corner;
using svg::LegendEntry;
using svg::Plot;
using svg::Point;
using svg::Scale;

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

// Extractable memorization: the fraction of each group's held-out sequences
// extracted against steps since injection, injected arm solid, baseline
// dotted.
std::string ForgettingExtractableSvg(const v1::ForgettingResults& f) {
  double max_step = 1;
  bool any = false;
  for (const v1::ForgettingExtractableCurve& c : f.extractable_curves()) {
    for (const v1::ForgettingExtractablePoint& p : c.points()) {
      any = true;
      max_step = std::max(max_step, static_cast<double>(p.steps_since_injection()));
    }
  }
  if (!any) return "";
  const svg::Frame frame = PageFrame();
  Plot plot(frame, Plot::XAxisFor(frame, Scale::kLog1p, 0, max_step),
            Plot::YAxisFor(frame, Scale::kLinear, 0, 1.05),
            "extractable memorization against steps since injection", "forgetting-extractable");
  plot.XTicks(svg::Log1pTicks(max_step), "steps since injection (log scale, 0 kept)");
  plot.YTicks(svg::LinearTicks(0, 1, 5), "fraction extracted");
  std::vector<LegendEntry> legend;
  for (int i = 0; i < f.extractable_curves_size(); ++i) {
    const v1::ForgettingExtractableCurve& c = f.extractable_curves(i);
    const std::string name = InsertedLabel(c.duplicates());
    std::vector<double> steps, low, high;
    std::vector<Point> injected, baseline;
    for (const v1::ForgettingExtractablePoint& p : c.points()) {
      const double k = static_cast<double>(p.steps_since_injection());
      steps.push_back(k);
      low.push_back(std::clamp(p.fraction().rerun_low(), 0.0, 1.0));
      high.push_back(std::clamp(p.fraction().rerun_high(), 0.0, 1.0));
      injected.push_back({k, p.fraction().mean()});
      baseline.push_back({k, p.baseline_fraction().mean()});
    }
    plot.Band(steps, low, high, svg::Color(i), "band", absl::StrCat(name, ", 95% re-run interval"),
              /*opacity=*/0.12);
    plot.Line(injected, {svg::Color(i)}, "curve injected", absl::StrCat(name, ", injected arm"));
    plot.Line(baseline, {svg::Color(i), 1, "2 3"}, "curve baseline",
              absl::StrCat(name, ", baseline arm"));
    legend.push_back({name, svg::Color(i)});
  }
  legend.push_back({"baseline arm", kGrey, LegendEntry::Kind::kLine, "2 3"});
  plot.Legend(legend, Corner::kOutsideRight);
  return plot.Finish();
}

std::string ForgettingPlotsHtml(const v1::AuditResults& r) {
  const v1::ForgettingResults& f = r.forgetting();
  if (const std::string exposure = ForgettingExposureSvg(f); !exposure.empty()) {
    std::string extractable = ForgettingExtractableSvg(f);
    if (!extractable.empty()) {
      extractable = absl::StrCat(
          "<h2>Extractable memorization over steps since injection</h2>", extractable,
          absl::StrFormat("<p>Fraction of the held-out sequences of each group (xN: inserted N "
                          "times in the canary batch; control: never) that greedy decoding "
                          "continues exactly from their prefix, under the injected arm, mean "
                          "across %u trials; shaded: the 95%% re-run interval; dotted: the "
                          "baseline arm.</p>",
                          f.trials()));
    }
    return absl::StrCat(
        "<h2>Canary exposure over steps since injection</h2>", exposure,
        absl::StrFormat(
            "<p>Mean exposure of the canaries of each insertion count (xN: N copies in the "
            "canary batch; control: never inserted) under the injected arm, mean across %u "
            "trials; shaded: the 95%% interval across trials; dotted: the same canaries under "
            "the baseline arm. Dashed red: log2|R|, the largest exposure (bands are cut to "
            "[0, log2|R|]). Steps are on a log(1 + steps) axis.</p>",
            f.trials()),
        extractable);
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

}  // namespace memaudit::cli
