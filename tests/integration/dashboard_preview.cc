#include "tests/integration/dashboard_preview.h"

#include <algorithm>
#include <cmath>
#include <regex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/svg_plot.h"

namespace memaudit::testing {
namespace {

namespace svg = cli::svg;

struct Series {
  std::string label;
  std::vector<svg::Point> points;  // (seconds since start, value)
};

// Grafana's legend templates: "{{attack}} @ FPR {{fpr}}".
std::string Legend(const std::string& format, const nlohmann::json& metric) {
  if (format.empty()) return metric.dump();
  static const std::regex placeholder(R"(\{\{\s*(\w+)\s*\}\})");
  std::string out;
  auto begin = std::sregex_iterator(format.begin(), format.end(), placeholder);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    out += format.substr(last, it->position() - last);
    out += metric.value((*it)[1].str(), "");
    last = it->position() + it->length();
  }
  return out + format.substr(last);
}

double ParseValue(const nlohmann::json& pair) {
  return std::strtod(pair[1].get<std::string>().c_str(), nullptr);
}

std::vector<Series> Fetch(const nlohmann::json& panel, PrometheusServer& prometheus,
                          const std::function<std::string(const std::string&)>& substitute,
                          double start, double end, bool range) {
  std::vector<Series> out;
  for (const nlohmann::json& target : panel.value("targets", nlohmann::json::array())) {
    const std::string expr = substitute(target.value("expr", ""));
    auto answer = range ? prometheus.QueryRange(expr, start, end, 1) : prometheus.Query(expr);
    if (!answer.ok() || answer->value("status", "") != "success") continue;
    for (const nlohmann::json& r : (*answer)["data"]["result"]) {
      Series s;
      s.label = Legend(target.value("legendFormat", ""), r["metric"]);
      if (range) {
        for (const nlohmann::json& v : r["values"]) {
          s.points.push_back({v[0].get<double>() - start, ParseValue(v)});
        }
      } else {
        s.points.push_back({0, ParseValue(r["value"])});
      }
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::string TimeSeriesSvg(const std::string& title, const std::vector<Series>& series, double width,
                          double seconds) {
  double hi = 0;
  for (const Series& s : series) {
    for (const svg::Point& p : s.points) {
      if (std::isfinite(p.y)) hi = std::max(hi, p.y);
    }
  }
  svg::Frame frame{width, 240, 56, 200, 16, 40};
  const auto [lo_y, hi_y] = svg::NiceRange(0, hi > 0 ? hi : 1);
  svg::Plot plot(frame, svg::Plot::XAxisFor(frame, svg::Scale::kLinear, 0, seconds),
                 svg::Plot::YAxisFor(frame, svg::Scale::kLinear, lo_y, hi_y), title, "panel");
  plot.XTicks(svg::LinearTicks(0, seconds, 5), "seconds");
  plot.YTicks(svg::LinearTicks(lo_y, hi_y, 4), "");
  std::vector<svg::LegendEntry> legend;
  for (size_t i = 0; i < series.size(); ++i) {
    plot.Line(series[i].points, {svg::Color(i), 1.6, ""}, "series", series[i].label);
    if (legend.size() < 8) legend.push_back({series[i].label, svg::Color(i)});
  }
  plot.Legend(legend, svg::Corner::kOutsideRight);
  return plot.Finish();
}

// Current values as horizontal bars, the way bar gauges and stats show them.
std::string BarsSvg(const std::string& title, std::vector<Series> series, double width) {
  std::sort(series.begin(), series.end(),
            [](const Series& a, const Series& b) { return a.label < b.label; });
  constexpr size_t kMaxBars = 14;
  if (series.size() > kMaxBars) series.resize(kMaxBars);
  double hi = 0;
  for (const Series& s : series) hi = std::max(hi, std::abs(s.points[0].y));
  const double row_h = 26;  // a label line above each bar
  svg::Frame frame{width, 36 + row_h * std::max<size_t>(series.size(), 1), 12, 16, 8, 28};
  const auto [lo_x, hi_x] = svg::NiceRange(0, hi > 0 ? hi : 1);
  svg::Plot plot(frame, svg::Plot::XAxisFor(frame, svg::Scale::kLinear, lo_x, hi_x),
                 svg::Plot::YAxisFor(frame, svg::Scale::kLinear, 0,
                                     static_cast<double>(std::max<size_t>(series.size(), 1))),
                 title, "panel");
  plot.XTicks(svg::LinearTicks(lo_x, hi_x, 5), "");
  for (size_t i = 0; i < series.size(); ++i) {
    const double top = static_cast<double>(series.size() - i);
    const double v = series[i].points[0].y;
    plot.Label({lo_x, top - 0.38}, absl::StrFormat("%s  %.4g", series[i].label, v), "start", "#222",
               2, 0);
    plot.Box({0, top - 0.5}, {v, top - 0.9}, svg::Color(i), "series",
             absl::StrFormat("%s: %g", series[i].label, v));
  }
  return plot.Finish();
}

}  // namespace

std::string DashboardPreviewHtml(const nlohmann::json& dashboard, PrometheusServer& prometheus,
                                 const std::function<std::string(const std::string&)>& substitute,
                                 double start, double end, PreviewStats* stats) {
  constexpr double kColumnPx = 54;  // 24 columns and gaps: about 1430 px
  std::string html = absl::StrCat(
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>",
      svg::Escape(dashboard.value("title", "")),
      "</title><style>body{font-family:sans-serif;margin:16px;background:#f4f5f5}"
      ".grid{display:grid;grid-template-columns:repeat(24,",
      kColumnPx,
      "px);gap:6px}.row{grid-column:1/25;font-weight:bold;font-size:18px;margin-top:10px}"
      ".panel{background:#fff;border:1px solid #ddd;padding:4px;overflow:hidden}"
      ".panel svg{max-width:100%;height:auto}.panel h3{font-size:13px;"
      "margin:2px 4px}</style></head><body><h1>",
      svg::Escape(dashboard.value("title", "")),
      " — panels from a live Prometheus</h1><div class=\"grid\">");
  std::function<void(const nlohmann::json&)> add = [&](const nlohmann::json& panels) {
    for (const nlohmann::json& p : panels) {
      const std::string title = p.value("title", "");
      if (p.value("type", "") == "row") {
        absl::StrAppend(&html, "<div class=\"row\">", svg::Escape(title), "</div>");
        if (p.contains("panels")) add(p["panels"]);
        continue;
      }
      const int w = p["gridPos"].value("w", 8);
      const bool range = p.value("type", "") == "timeseries";
      const std::vector<Series> series = Fetch(p, prometheus, substitute, start, end, range);
      ++stats->panels;
      if (series.empty()) {
        absl::StrAppend(&stats->empty, stats->empty.empty() ? "" : "; ", title);
      } else {
        ++stats->panels_with_data;
      }
      const double width = w * kColumnPx + (w - 1) * 6 - 12;
      absl::StrAppend(
          &html, "<div class=\"panel\" style=\"grid-column:span ", w, "\"><h3>", svg::Escape(title),
          "</h3>",
          range ? TimeSeriesSvg(title, series, width, end - start) : BarsSvg(title, series, width),
          "</div>");
    }
  };
  add(dashboard["panels"]);
  return html + "</div></body></html>";
}

}  // namespace memaudit::testing
