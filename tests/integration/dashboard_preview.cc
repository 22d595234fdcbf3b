#include "tests/integration/dashboard_preview.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <numeric>
#include <regex>
#include <set>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "cli/svg_plot.h"

namespace memaudit::testing {
namespace {

namespace svg = cli::svg;

constexpr double kNull = std::numeric_limits<double>::quiet_NaN();

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
                          const Substitute& substitute, double start, double end, bool range) {
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

// A stat panel whose text mode is "name": the series' names, large.
std::string NamesHtml(const std::vector<Series>& series) {
  std::string html = "<div class=\"names\">";
  for (const Series& s : series) absl::StrAppend(&html, "<div>", svg::Escape(s.label), "</div>");
  return html + "</div>";
}

// The properties a panel's byName overrides set on field `name`.
nlohmann::json OverridesOf(const nlohmann::json& panel, const std::string& name) {
  nlohmann::json props = nlohmann::json::object();
  const nlohmann::json& config = panel.value("fieldConfig", nlohmann::json::object());
  for (const nlohmann::json& o : config.value("overrides", nlohmann::json::array())) {
    if (o["matcher"].value("id", "") != "byName" || o["matcher"].value("options", "") != name) {
      continue;
    }
    for (const nlohmann::json& p : o.value("properties", nlohmann::json::array())) {
      props[p.value("id", "")] = p.value("value", nlohmann::json());
    }
  }
  return props;
}

// A trend panel: its curves over the x field, with the bands, dashes and
// hidden lines its overrides ask for.
std::string TrendSvg(const nlohmann::json& panel, const TrendData& data, double width) {
  const std::string title = panel.value("title", "");
  const nlohmann::json defaults =
      panel.value("fieldConfig", nlohmann::json::object()).value("defaults", nlohmann::json());
  double x_lo = data.x.front(), x_hi = data.x.back();
  double y_lo = std::numeric_limits<double>::infinity(), y_hi = -y_lo;
  for (const auto& [name, ys] : data.curves) {
    for (double y : ys) {
      if (std::isfinite(y)) y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
    }
  }
  if (!std::isfinite(y_lo)) y_lo = 0, y_hi = 1;
  if (defaults.contains("min")) y_lo = std::min(y_lo, defaults["min"].get<double>());
  const auto [lo_y, hi_y] = svg::NiceRange(y_lo, y_hi > y_lo ? y_hi : y_lo + 1);
  const auto [lo_x, hi_x] = svg::NiceRange(x_lo, x_hi > x_lo ? x_hi : x_lo + 1);
  svg::Frame frame{width, 250, 56, 150, 16, 42};
  svg::Plot plot(frame, svg::Plot::XAxisFor(frame, svg::Scale::kLinear, lo_x, hi_x),
                 svg::Plot::YAxisFor(frame, svg::Scale::kLinear, lo_y, hi_y), title, "panel trend");
  plot.XTicks(svg::LinearTicks(lo_x, hi_x, 6), data.x_name);
  plot.YTicks(svg::LinearTicks(lo_y, hi_y, 4),
              defaults.value("custom", nlohmann::json::object()).value("axisLabel", ""));
  const bool fixed = defaults.value("color", nlohmann::json::object()).value("mode", "") == "fixed";
  const auto color_of = [&](size_t i, const nlohmann::json& props) -> std::string {
    if (props.contains("color")) return "#8a8a8a";  // the dashboard's one override: gray
    return svg::Color(fixed ? 0 : i);
  };
  std::map<std::string, const std::vector<double>*> by_name;
  for (const auto& [name, ys] : data.curves) by_name[name] = &ys;
  for (const auto& [upper, lower] : BandsOf(panel)) {
    if (!by_name.count(upper) || !by_name.count(lower)) continue;
    size_t i = 0;
    while (i < data.curves.size() && data.curves[i].first != upper) ++i;
    plot.Band(data.x, *by_name[lower], *by_name[upper], color_of(i, OverridesOf(panel, upper)),
              "band", absl::StrCat(lower, " – ", upper), 0.22);
  }
  std::vector<svg::LegendEntry> legend;
  for (size_t i = 0; i < data.curves.size(); ++i) {
    const auto& [name, ys] = data.curves[i];
    const nlohmann::json props = OverridesOf(panel, name);
    if (props.value("custom.lineWidth", 2.0) == 0) continue;  // a band's edge
    const std::string color = color_of(i, props);
    const bool dashed = props.contains("custom.lineStyle");
    std::vector<svg::Point> points;
    for (size_t k = 0; k < data.x.size(); ++k) points.push_back({data.x[k], ys[k]});
    plot.Line(points, {color, dashed ? 1.2 : 2.0, dashed ? "6,4" : ""}, "series", name);
    for (const svg::Point& p : points) {
      if (std::isfinite(p.y)) plot.Dot(p, color, "point", absl::StrFormat("%s: %g", name, p.y));
    }
    legend.push_back({name, color, svg::LegendEntry::Kind::kLine, dashed ? "6,4" : ""});
  }
  if (!BandsOf(panel).empty()) {
    legend.push_back(
        {"95% interval", color_of(0, nlohmann::json::object()), svg::LegendEntry::Kind::kBox});
  }
  if (legend.size() > 8) legend.resize(8);
  plot.Legend(legend, svg::Corner::kOutsideRight);
  return plot.Finish();
}

// Values of `field` as text (numbers in %g).
std::string TextAt(const PreviewField& field, size_t row) {
  return field.numeric ? absl::StrFormat("%g", field.numbers[row]) : field.text[row];
}

size_t Rows(const PreviewFrame& frame) {
  if (frame.empty()) return 0;
  return frame[0].numeric ? frame[0].numbers.size() : frame[0].text.size();
}

absl::StatusOr<size_t> FieldIndex(const PreviewFrame& frame, const std::string& name) {
  for (size_t i = 0; i < frame.size(); ++i) {
    if (frame[i].name == name) return i;
  }
  return absl::NotFoundError(absl::StrCat("no field \"", name, "\""));
}

absl::StatusOr<PreviewFrame> GroupingToMatrix(const nlohmann::json& options,
                                              const PreviewFrame& frame) {
  const std::string column_name = options.value("columnField", "Time");
  const std::string row_name = options.value("rowField", "Time");
  auto column = FieldIndex(frame, column_name);
  auto row = FieldIndex(frame, row_name);
  auto value = FieldIndex(frame, options.value("valueField", "Value"));
  if (!column.ok() || !row.ok() || !value.ok()) return frame;  // Grafana leaves it as it is
  // Unique values in order of appearance, as Grafana keeps them.
  std::vector<std::string> rows, columns;
  std::map<std::pair<std::string, std::string>, size_t> cell;  // (column, row) -> input row
  for (size_t r = 0; r < Rows(frame); ++r) {
    const std::string c = TextAt(frame[*column], r), k = TextAt(frame[*row], r);
    if (std::find(rows.begin(), rows.end(), k) == rows.end()) rows.push_back(k);
    if (std::find(columns.begin(), columns.end(), c) == columns.end()) columns.push_back(c);
    cell[{c, k}] = r;
  }
  PreviewFrame out;
  out.push_back({absl::StrCat(row_name, "\\", column_name), false, rows, {}});
  for (const std::string& c : columns) {
    PreviewField f{c, frame[*value].numeric, {}, {}};
    for (const std::string& k : rows) {
      auto it = cell.find({c, k});
      if (f.numeric) {
        f.numbers.push_back(it == cell.end() ? kNull : frame[*value].numbers[it->second]);
      } else {
        f.text.push_back(it == cell.end() ? "" : frame[*value].text[it->second]);
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

absl::StatusOr<PreviewFrame> ConvertFieldType(const nlohmann::json& options, PreviewFrame frame) {
  for (const nlohmann::json& c : options.value("conversions", nlohmann::json::array())) {
    if (c.value("destinationType", "") != "number") {
      return absl::UnimplementedError("convertFieldType: only destinationType number is drawn");
    }
    auto i = FieldIndex(frame, c.value("targetField", ""));
    if (!i.ok()) continue;
    PreviewField& f = frame[*i];
    if (f.numeric) continue;
    for (const std::string& t : f.text) {
      char* end = nullptr;
      const double v = std::strtod(t.c_str(), &end);
      f.numbers.push_back(t.empty() || *end != '\0' ? kNull : v);
    }
    f.text.clear();
    f.numeric = true;
  }
  return frame;
}

absl::StatusOr<PreviewFrame> SortBy(const nlohmann::json& options, PreviewFrame frame) {
  const nlohmann::json sort = options.value("sort", nlohmann::json::array());
  if (sort.empty()) return frame;
  auto key = FieldIndex(frame, sort[0].value("field", ""));
  if (!key.ok()) return frame;
  const bool desc = sort[0].value("desc", false);
  const PreviewField& k = frame[*key];
  std::vector<size_t> order(Rows(frame));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const bool less = k.numeric ? k.numbers[a] < k.numbers[b] : k.text[a] < k.text[b];
    const bool more = k.numeric ? k.numbers[b] < k.numbers[a] : k.text[b] < k.text[a];
    return desc ? more : less;
  });
  for (PreviewField& f : frame) {
    PreviewField sorted{f.name, f.numeric, {}, {}};
    for (size_t r : order) {
      if (f.numeric) {
        sorted.numbers.push_back(f.numbers[r]);
      } else {
        sorted.text.push_back(f.text[r]);
      }
    }
    f = std::move(sorted);
  }
  return frame;
}

absl::StatusOr<PreviewFrame> Organize(const nlohmann::json& options, PreviewFrame frame) {
  if (!options.value("indexByName", nlohmann::json::object()).empty()) {
    return absl::UnimplementedError("organize: indexByName is not drawn");
  }
  const nlohmann::json exclude = options.value("excludeByName", nlohmann::json::object());
  const nlohmann::json rename = options.value("renameByName", nlohmann::json::object());
  PreviewFrame out;
  for (PreviewField& f : frame) {
    if (exclude.value(f.name, false)) continue;
    if (rename.contains(f.name)) f.name = rename[f.name].get<std::string>();
    out.push_back(std::move(f));
  }
  return out;
}

std::string Replace(const std::string& text, const std::string& variable,
                    const std::string& value) {
  return absl::StrReplaceAll(text, {{"${" + variable + "}", value}, {"$" + variable, value}});
}

}  // namespace

PreviewFrame TableOf(const nlohmann::json& result) {
  std::set<std::string> labels;
  for (const nlohmann::json& r : result) {
    for (const auto& [name, value] : r["metric"].items()) labels.insert(name);
  }
  PreviewFrame frame;
  frame.push_back({"Time", true, {}, {}});
  for (const std::string& l : labels) frame.push_back({l, false, {}, {}});
  frame.push_back({"Value", true, {}, {}});
  for (const nlohmann::json& r : result) {
    frame.front().numbers.push_back(r["value"][0].get<double>());
    size_t i = 1;
    for (const std::string& l : labels) frame[i++].text.push_back(r["metric"].value(l, ""));
    frame.back().numbers.push_back(ParseValue(r["value"]));
  }
  return frame;
}

absl::StatusOr<PreviewFrame> Transform(const nlohmann::json& panel, PreviewFrame frame) {
  for (const nlohmann::json& t : panel.value("transformations", nlohmann::json::array())) {
    const std::string id = t.value("id", "");
    const nlohmann::json options = t.value("options", nlohmann::json::object());
    absl::StatusOr<PreviewFrame> next = absl::UnimplementedError(
        absl::StrCat("transformation \"", id, "\" is not drawn by the preview"));
    if (id == "groupingToMatrix") {
      next = GroupingToMatrix(options, frame);
    } else if (id == "convertFieldType") {
      next = ConvertFieldType(options, std::move(frame));
    } else if (id == "sortBy") {
      next = SortBy(options, std::move(frame));
    } else if (id == "organize") {
      next = Organize(options, std::move(frame));
    }
    if (!next.ok()) return next.status();
    frame = *std::move(next);
  }
  return frame;
}

absl::StatusOr<TrendData> QueryTrend(const nlohmann::json& panel, PrometheusServer& prometheus,
                                     const Substitute& substitute) {
  const nlohmann::json targets = panel.value("targets", nlohmann::json::array());
  // groupingToMatrix takes one frame: one query, as a table.
  if (targets.size() != 1 || targets[0].value("format", "") != "table" ||
      !targets[0].value("instant", false)) {
    return absl::InvalidArgumentError("a trend panel here has one instant query in table format");
  }
  auto answer = prometheus.Query(substitute(targets[0].value("expr", "")));
  if (!answer.ok()) return answer.status();
  if (answer->value("status", "") != "success") {
    return absl::InvalidArgumentError(absl::StrCat("query failed: ", answer->dump()));
  }
  auto frame = Transform(panel, TableOf((*answer)["data"]["result"]));
  if (!frame.ok()) return frame.status();
  const std::string x_name = panel["options"].value("xField", "");
  auto x = FieldIndex(*frame, x_name);
  if (!x.ok()) return absl::NotFoundError(absl::StrCat("Unable to find field: ", x_name));
  const PreviewField& xf = (*frame)[*x];
  if (!xf.numeric) return absl::InvalidArgumentError(absl::StrCat(x_name, " is not numeric"));
  TrendData data;
  data.x_name = x_name;
  data.x = xf.numbers;
  // Grafana's trend panel refuses an x that does not ascend.
  for (size_t i = 1; i < data.x.size(); ++i) {
    if (!(data.x[i] > data.x[i - 1])) {
      return absl::FailedPreconditionError(absl::StrCat(
          "Values must be in ascending order: ", x_name, " ", data.x[i - 1], " then ", data.x[i]));
    }
  }
  for (size_t i = 0; i < frame->size(); ++i) {
    const PreviewField& f = (*frame)[i];
    if (i == *x || !f.numeric || f.name == "Time") continue;
    data.curves.emplace_back(f.name, f.numbers);
  }
  return data;
}

std::vector<std::pair<std::string, std::string>> BandsOf(const nlohmann::json& panel) {
  std::vector<std::pair<std::string, std::string>> bands;
  const nlohmann::json& config = panel.value("fieldConfig", nlohmann::json::object());
  for (const nlohmann::json& o : config.value("overrides", nlohmann::json::array())) {
    if (o["matcher"].value("id", "") != "byName") continue;
    for (const nlohmann::json& p : o.value("properties", nlohmann::json::array())) {
      if (p.value("id", "") == "custom.fillBelowTo") {
        bands.emplace_back(o["matcher"].value("options", ""), p.value("value", ""));
      }
    }
  }
  return bands;
}

std::vector<nlohmann::json> ExpandRepeats(const nlohmann::json& dashboard,
                                          const nlohmann::json& panel, PrometheusServer& prometheus,
                                          const Substitute& substitute) {
  const std::string variable = panel.value("repeat", "");
  if (variable.empty()) return {panel};
  std::vector<std::string> values;
  int sort = 0;
  for (const nlohmann::json& v : dashboard["templating"]["list"]) {
    if (v.value("name", "") != variable) continue;
    sort = v.value("sort", 0);
    static const std::regex label_values(R"(^label_values\((.*),\s*(\w+)\)$)");
    std::smatch match;
    const std::string definition = v.value("definition", "");
    if (!std::regex_match(definition, match, label_values)) break;
    auto answer = prometheus.LabelValues(match[2], substitute(match[1]));
    if (answer.ok() && answer->value("status", "") == "success") {
      values = (*answer)["data"].get<std::vector<std::string>>();
    }
  }
  if (sort == 3 || sort == 4) {  // numerical, ascending or descending
    std::sort(values.begin(), values.end(), [&](const std::string& a, const std::string& b) {
      const double x = std::strtod(a.c_str(), nullptr), y = std::strtod(b.c_str(), nullptr);
      return sort == 3 ? x < y : y < x;
    });
  }
  if (values.empty()) values.push_back("");  // drawn once, without data
  std::vector<nlohmann::json> out;
  for (const std::string& value : values) {
    nlohmann::json copy = panel;
    copy.erase("repeat");
    copy["title"] = Replace(copy.value("title", ""), variable, value);
    for (nlohmann::json& target : copy["targets"]) {
      target["expr"] = Replace(target.value("expr", ""), variable, value);
    }
    out.push_back(std::move(copy));
  }
  return out;
}

std::string DashboardPreviewHtml(const nlohmann::json& dashboard, PrometheusServer& prometheus,
                                 const Substitute& substitute, double start, double end,
                                 PreviewStats* stats) {
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
      "margin:2px 4px}.names{font-size:22px;padding:24px 8px;text-align:center;"
      "overflow-wrap:anywhere}.error{color:#b00;font-size:12px;padding:8px}"
      "</style></head><body><h1>",
      svg::Escape(dashboard.value("title", "")),
      " — panels from a live Prometheus</h1><div class=\"grid\">");
  const auto draw = [&](const nlohmann::json& p) {
    const std::string title = p.value("title", "");
    const std::string type = p.value("type", "");
    const int w = p["gridPos"].value("w", 8);
    const double width = w * kColumnPx + (w - 1) * 6 - 12;
    std::string body;
    bool has_data = false;
    std::string why;
    if (type == "trend") {
      auto data = QueryTrend(p, prometheus, substitute);
      has_data = data.ok() && !data->x.empty() && !data->curves.empty();
      if (has_data) {
        body = TrendSvg(p, *data, width);
      } else {
        why = data.ok() ? "no data" : std::string(data.status().message());
        body = absl::StrCat("<div class=\"error\">", svg::Escape(why), "</div>");
      }
    } else {
      const bool range = type == "timeseries";
      const std::vector<Series> series = Fetch(p, prometheus, substitute, start, end, range);
      has_data = !series.empty();
      const bool names =
          p.value("options", nlohmann::json::object()).value("textMode", "") == "name";
      body = range   ? TimeSeriesSvg(title, series, width, end - start)
             : names ? NamesHtml(series)
                     : BarsSvg(title, series, width);
    }
    ++stats->panels;
    if (has_data) {
      ++stats->panels_with_data;
    } else {
      absl::StrAppend(&stats->empty, stats->empty.empty() ? "" : "; ", title,
                      why.empty() ? "" : ": ", why);
    }
    absl::StrAppend(&html, "<div class=\"panel\" style=\"grid-column:span ", w, "\"><h3>",
                    svg::Escape(title), "</h3>", body, "</div>");
  };
  std::function<void(const nlohmann::json&)> add = [&](const nlohmann::json& panels) {
    for (const nlohmann::json& p : panels) {
      if (p.value("type", "") == "row") {
        absl::StrAppend(&html, "<div class=\"row\">", svg::Escape(p.value("title", "")), "</div>");
        if (p.contains("panels")) add(p["panels"]);
        continue;
      }
      for (const nlohmann::json& drawn : ExpandRepeats(dashboard, p, prometheus, substitute)) {
        draw(drawn);
      }
    }
  };
  add(dashboard["panels"]);
  return html + "</div></body></html>";
}

}  // namespace memaudit::testing
