#include "cli/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

namespace memaudit::cli::svg {
namespace {

constexpr const char* kPalette[] = {"#1b6ca8", "#d1495b", "#2e933c",
                                    "#8e5cc2", "#e08e0b", "#4a4a4a"};
constexpr double kRowHeight = 15;
constexpr double kCharWidth = 6.2;  // font-size 11 sans-serif, roughly

bool Finite(std::initializer_list<double> values) {
  for (double v : values) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

// Pixel coordinates: one decimal is below what a screen shows.
std::string Px(double v) { return absl::StrFormat("%.1f", v); }

std::string TitleElement(absl::string_view title) {
  return title.empty() ? "" : absl::StrCat("<title>", Escape(title), "</title>");
}

std::string ClassAttribute(absl::string_view css_class) {
  return css_class.empty() ? "" : absl::StrCat(" class=\"", Escape(css_class), "\"");
}

std::string DashAttribute(absl::string_view dash) {
  return dash.empty() ? "" : absl::StrCat(" stroke-dasharray=\"", Escape(dash), "\"");
}

// Splits at non-finite points so one NaN does not erase a whole series.
template <typename IsGood>
std::vector<std::pair<size_t, size_t>> FiniteRuns(size_t n, IsGood good) {
  std::vector<std::pair<size_t, size_t>> runs;
  size_t start = 0;
  for (size_t i = 0; i <= n; ++i) {
    if (i == n || !good(i)) {
      if (i > start) runs.push_back({start, i});
      start = i + 1;
    }
  }
  return runs;
}

double TickStep(double lo, double hi, int count) {
  const double raw = (hi - lo) / std::max(count, 1);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

std::string TickLabel(double v, double step) {
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  if (std::abs(v) < step * 1e-6) v = 0;  // k * step can land on -1e-17: no "-0.0"
  return absl::StrFormat("%.*f", decimals, v);
}

}  // namespace

const char* Color(size_t i) { return kPalette[i % (sizeof(kPalette) / sizeof(kPalette[0]))]; }

std::string Escape(absl::string_view text) {
  return absl::StrReplaceAll(
      text, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}, {"'", "&#39;"}});
}

Axis::Axis(Scale scale, double lo, double hi, double from, double to)
    : scale_(scale), lo_(lo), hi_(hi), from_(from), to_(to) {
  if (!std::isfinite(lo_)) lo_ = 0;
  if (!std::isfinite(hi_)) hi_ = lo_ + 1;
  if (hi_ < lo_) std::swap(lo_, hi_);
  if (scale_ == Scale::kLog10) {
    if (hi_ <= 0) hi_ = 1;
    if (lo_ <= 0) lo_ = hi_ * 1e-5;
  }
  if (scale_ == Scale::kLog1p) lo_ = std::max(lo_, 0.0);
  if (hi_ <= lo_) hi_ = lo_ == 0 ? 1 : lo_ + std::abs(lo_) * 0.5;
  if (!std::isfinite(from_)) from_ = 0;
  if (!std::isfinite(to_)) to_ = from_ + 1;
}

double Axis::Transform(double v) const {
  switch (scale_) {
    case Scale::kLog10:
      return std::log10(v);
    case Scale::kLog1p:
      return std::log1p(v);
    case Scale::kLinear:
      break;
  }
  return v;
}

double Axis::operator()(double v) const {
  if (std::isnan(v)) return v;
  const double clamped = std::clamp(v, lo_, hi_);
  const double t = (Transform(clamped) - Transform(lo_)) / (Transform(hi_) - Transform(lo_));
  return from_ + t * (to_ - from_);
}

std::vector<Tick> LinearTicks(double lo, double hi, int count) {
  std::vector<Tick> ticks;
  if (!Finite({lo, hi}) || hi <= lo) return ticks;
  const double step = TickStep(lo, hi, count);
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; ++k) {
    ticks.push_back({k * step, TickLabel(k * step, step)});
  }
  return ticks;
}

std::pair<double, double> NiceRange(double lo, double hi, int count) {
  if (!Finite({lo, hi})) return {0, 1};
  if (hi <= lo) return {lo - 0.5, lo + 0.5};
  const double step = TickStep(lo, hi, count);
  return {std::floor(lo / step + 1e-9) * step, std::ceil(hi / step - 1e-9) * step};
}

std::vector<Tick> DecadeTicks(double lo, double hi) {
  std::vector<Tick> ticks;
  if (!Finite({lo, hi}) || lo <= 0 || hi < lo) return ticks;
  for (int e = static_cast<int>(std::ceil(std::log10(lo) - 1e-9));
       e <= static_cast<int>(std::floor(std::log10(hi) + 1e-9)); ++e) {
    ticks.push_back({std::pow(10.0, e), absl::StrCat("1e", e)});
  }
  return ticks;
}

std::vector<Tick> Log1pTicks(double hi) {
  std::vector<Tick> ticks = {{0, "0"}};
  if (!std::isfinite(hi)) return ticks;
  for (int e = 0; std::pow(10.0, e) <= hi * (1 + 1e-9); ++e) {
    const double v = std::pow(10.0, e);
    ticks.push_back({v, e < 4 ? absl::StrFormat("%.0f", v) : absl::StrCat("1e", e)});
  }
  return ticks;
}

Plot::Plot(const Frame& frame, const Axis& x, const Axis& y, absl::string_view label,
           absl::string_view css_class)
    : frame_(frame),
      x_(x),
      y_(y),
      label_(label),
      css_class_(css_class),
      width_(frame.width),
      height_(frame.height) {
  svg_ = absl::StrFormat("<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"#fff\"/>",
                         frame_.left, frame_.top, frame_.width - frame_.left - frame_.right,
                         frame_.height - frame_.top - frame_.bottom);
}

Axis Plot::XAxisFor(const Frame& f, Scale scale, double lo, double hi) {
  return Axis(scale, lo, hi, f.left, f.width - f.right);
}

Axis Plot::YAxisFor(const Frame& f, Scale scale, double lo, double hi) {
  return Axis(scale, lo, hi, f.height - f.bottom, f.top);
}

void Plot::XTicks(const std::vector<Tick>& ticks, absl::string_view title, bool grid) {
  const double bottom = frame_.height - frame_.bottom;
  for (const Tick& t : ticks) {
    const double px = x_(t.value);
    if (!Finite({px})) continue;
    if (grid) {
      absl::StrAppend(&svg_, "<line x1=\"", Px(px), "\" y1=\"", Px(frame_.top), "\" x2=\"", Px(px),
                      "\" y2=\"", Px(bottom), "\" stroke=\"#eee\"/>");
    }
    absl::StrAppend(&svg_, "<text x=\"", Px(px), "\" y=\"", Px(bottom + 15),
                    "\" font-size=\"11\" text-anchor=\"middle\">", Escape(t.label), "</text>");
  }
  absl::StrAppend(&svg_, "<text x=\"", Px((x_.from() + x_.to()) / 2), "\" y=\"", Px(bottom + 35),
                  "\" font-size=\"12\" text-anchor=\"middle\">", Escape(title), "</text>");
}

void Plot::YTicks(const std::vector<Tick>& ticks, absl::string_view title, bool grid) {
  const double right = frame_.width - frame_.right;
  for (const Tick& t : ticks) {
    const double py = y_(t.value);
    if (!Finite({py})) continue;
    if (grid) {
      absl::StrAppend(&svg_, "<line x1=\"", Px(frame_.left), "\" y1=\"", Px(py), "\" x2=\"",
                      Px(right), "\" y2=\"", Px(py), "\" stroke=\"#eee\"/>");
    }
    absl::StrAppend(&svg_, "<text x=\"", Px(frame_.left - 5), "\" y=\"", Px(py + 4),
                    "\" font-size=\"11\" text-anchor=\"end\">", Escape(t.label), "</text>");
  }
  const std::string mid = Px((y_.from() + y_.to()) / 2);
  absl::StrAppend(&svg_, "<text x=\"14\" y=\"", mid,
                  "\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 14 ", mid,
                  ")\">", Escape(title), "</text>");
}

void Plot::Line(const std::vector<Point>& points, const Stroke& stroke, absl::string_view css_class,
                absl::string_view title) {
  auto good = [&](size_t i) { return Finite({x_(points[i].x), y_(points[i].y)}); };
  for (const auto& [begin, end] : FiniteRuns(points.size(), good)) {
    std::string coords;
    for (size_t i = begin; i < end; ++i) {
      absl::StrAppend(&coords, i > begin ? " " : "", Px(x_(points[i].x)), ",", Px(y_(points[i].y)));
    }
    absl::StrAppend(&svg_, "<polyline", ClassAttribute(css_class), " points=\"", coords,
                    "\" fill=\"none\" stroke=\"", Escape(stroke.color), "\" stroke-width=\"",
                    absl::StrFormat("%g", stroke.width), "\"", DashAttribute(stroke.dash), ">",
                    TitleElement(title), "</polyline>");
  }
}

void Plot::Band(const std::vector<double>& xs, const std::vector<double>& low,
                const std::vector<double>& high, absl::string_view color,
                absl::string_view css_class, absl::string_view title, double opacity) {
  const size_t n = std::min({xs.size(), low.size(), high.size()});
  auto good = [&](size_t i) { return Finite({x_(xs[i]), y_(low[i]), y_(high[i])}); };
  for (const auto& [begin, end] : FiniteRuns(n, good)) {
    std::string coords;
    for (size_t i = begin; i < end; ++i) {
      absl::StrAppend(&coords, Px(x_(xs[i])), ",", Px(y_(high[i])), " ");
    }
    for (size_t i = end; i-- > begin;) {
      absl::StrAppend(&coords, Px(x_(xs[i])), ",", Px(y_(low[i])), i > begin ? " " : "");
    }
    absl::StrAppend(&svg_, "<polygon", ClassAttribute(css_class), " points=\"", coords,
                    "\" fill=\"", Escape(color), "\" fill-opacity=\"",
                    absl::StrFormat("%g", opacity), "\" stroke=\"none\">", TitleElement(title),
                    "</polygon>");
  }
}

void Plot::Dot(Point p, absl::string_view color, absl::string_view css_class,
               absl::string_view title, bool hollow, double radius) {
  const double cx = x_(p.x), cy = y_(p.y);
  if (!Finite({cx, cy, radius})) return;
  absl::StrAppend(&svg_, "<circle", ClassAttribute(css_class), " cx=\"", Px(cx), "\" cy=\"", Px(cy),
                  "\" r=\"", absl::StrFormat("%g", radius), "\"",
                  hollow ? absl::StrCat(" fill=\"#fff\" stroke=\"", Escape(color), "\"")
                         : absl::StrCat(" fill=\"", Escape(color), "\""),
                  ">", TitleElement(title), "</circle>");
}

void Plot::Box(Point a, Point b, absl::string_view fill, absl::string_view css_class,
               absl::string_view title) {
  const double x0 = x_(a.x), x1 = x_(b.x), y0 = y_(a.y), y1 = y_(b.y);
  if (!Finite({x0, x1, y0, y1})) return;
  absl::StrAppend(&svg_, "<rect", ClassAttribute(css_class), " x=\"", Px(std::min(x0, x1)),
                  "\" y=\"", Px(std::min(y0, y1)), "\" width=\"", Px(std::abs(x1 - x0)),
                  "\" height=\"", Px(std::abs(y1 - y0)), "\" fill=\"", Escape(fill), "\">",
                  TitleElement(title), "</rect>");
}

void Plot::HLine(double y, const Stroke& stroke, absl::string_view css_class,
                 absl::string_view label, bool label_right) {
  const double py = y_(y);
  if (!Finite({py})) return;
  absl::StrAppend(&svg_, "<line", ClassAttribute(css_class), " x1=\"", Px(x_.from()), "\" y1=\"",
                  Px(py), "\" x2=\"", Px(x_.to()), "\" y2=\"", Px(py), "\" stroke=\"",
                  Escape(stroke.color), "\" stroke-width=\"", absl::StrFormat("%g", stroke.width),
                  "\"", DashAttribute(stroke.dash), "/>");
  if (!label.empty()) {
    absl::StrAppend(&svg_, "<text x=\"", Px(label_right ? x_.to() - 5 : x_.from() + 5), "\" y=\"",
                    Px(py - 4), "\" font-size=\"11\" fill=\"", Escape(stroke.color),
                    "\" text-anchor=\"", label_right ? "end" : "start", "\">", Escape(label),
                    "</text>");
  }
}

void Plot::VLine(double x, const Stroke& stroke, absl::string_view css_class) {
  const double px = x_(x);
  if (!Finite({px})) return;
  absl::StrAppend(&svg_, "<line", ClassAttribute(css_class), " x1=\"", Px(px), "\" y1=\"",
                  Px(y_.to()), "\" x2=\"", Px(px), "\" y2=\"", Px(y_.from()), "\" stroke=\"",
                  Escape(stroke.color), "\" stroke-width=\"", absl::StrFormat("%g", stroke.width),
                  "\"", DashAttribute(stroke.dash), "/>");
}

void Plot::Label(Point at, absl::string_view text, absl::string_view anchor,
                 absl::string_view color, double dx, double dy) {
  const double px = x_(at.x) + dx, py = y_(at.y) + dy;
  if (!Finite({px, py})) return;
  absl::StrAppend(&svg_, "<text x=\"", Px(px), "\" y=\"", Px(py),
                  "\" font-size=\"11\" text-anchor=\"", Escape(anchor), "\" fill=\"", Escape(color),
                  "\">", Escape(text), "</text>");
}

void Plot::Legend(const std::vector<LegendEntry>& entries, Corner corner) {
  if (entries.empty()) return;
  size_t chars = 0;
  for (const LegendEntry& e : entries) chars = std::max(chars, e.label.size());
  const double box_w = 30 + kCharWidth * static_cast<double>(chars);
  const double box_h = 6 + kRowHeight * static_cast<double>(entries.size());
  double x0 = 0, y0 = 0;
  switch (corner) {
    case Corner::kOutsideRight:
      x0 = frame_.width - frame_.right + 10;
      y0 = frame_.top;
      break;
  }
  // Long labels or many entries enlarge the picture rather than run off it.
  width_ = std::max(width_, std::ceil(x0 + box_w));
  height_ = std::max(height_, std::ceil(y0 + box_h));
  absl::StrAppend(&svg_, "<g class=\"legend\">");
  for (size_t i = 0; i < entries.size(); ++i) {
    const LegendEntry& e = entries[i];
    const double cy = y0 + 10 + kRowHeight * static_cast<double>(i);
    const std::string color = Escape(e.color);
    switch (e.kind) {
      case LegendEntry::Kind::kLine:
        absl::StrAppend(&svg_, "<line x1=\"", Px(x0 + 4), "\" y1=\"", Px(cy), "\" x2=\"",
                        Px(x0 + 20), "\" y2=\"", Px(cy), "\" stroke=\"", color,
                        "\" stroke-width=\"2\"", DashAttribute(e.dash), "/>");
        break;
      case LegendEntry::Kind::kBox:
        absl::StrAppend(&svg_, "<rect x=\"", Px(x0 + 5), "\" y=\"", Px(cy - 5),
                        "\" width=\"14\" height=\"10\" fill=\"", color, "\"/>");
        break;
      case LegendEntry::Kind::kDot:
      case LegendEntry::Kind::kHollowDot:
        absl::StrAppend(&svg_, "<circle cx=\"", Px(x0 + 12), "\" cy=\"", Px(cy), "\" r=\"3.5\"",
                        e.kind == LegendEntry::Kind::kDot
                            ? absl::StrCat(" fill=\"", color, "\"")
                            : absl::StrCat(" fill=\"#fff\" stroke=\"", color, "\""),
                        "/>");
        break;
    }
    absl::StrAppend(&svg_, "<text x=\"", Px(x0 + 26), "\" y=\"", Px(cy + 4), "\" font-size=\"11\">",
                    Escape(e.label), "</text>");
  }
  absl::StrAppend(&svg_, "</g>");
}

std::string Plot::Finish() {
  // The border last, so bars and bands do not paint over it.
  return absl::StrCat(
      absl::StrFormat("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %g %g\" "
                      "width=\"100%%\" style=\"max-width:%gpx\" role=\"img\" "
                      "aria-label=\"%s\"%s>",
                      width_, height_, width_, Escape(label_), ClassAttribute(css_class_)),
      svg_, "<rect x=\"", Px(frame_.left), "\" y=\"", Px(frame_.top), "\" width=\"",
      Px(frame_.width - frame_.left - frame_.right), "\" height=\"",
      Px(frame_.height - frame_.top - frame_.bottom), "\" fill=\"none\" stroke=\"#999\"/></svg>");
}

}  // namespace memaudit::cli::svg
