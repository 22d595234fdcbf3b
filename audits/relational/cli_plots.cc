#include "audits/relational/cli_plots.h"

#include <algorithm>
#include <string>
#include <utility>
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

namespace {

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
