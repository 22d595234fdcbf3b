// Inline-SVG plotting primitives shared by the HTML report's plots: axes on
// linear, log10 and log(1 + x) scales, ticks, lines, bands, dots, bars, a
// legend. Every element goes through checks that drop it when one of its
// coordinates is not finite, so a NaN in the results costs a point, never a
// broken page.
#ifndef MEMAUDIT_CLI_SVG_PLOT_H_
#define MEMAUDIT_CLI_SVG_PLOT_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace memaudit::cli::svg {

// Series colours, in order; Color(i) wraps around.
const char* Color(size_t i);

// Escapes text for SVG/HTML content and attribute values.
std::string Escape(absl::string_view text);

enum class Scale {
  kLinear,
  // log10; values at or below the axis' low end sit on it (a rate of 0 on a
  // 1e-5..1 axis is drawn at 1e-5).
  kLog10,
  // log(1 + x): counts such as training steps, where 0 must stay on the axis
  // and 1, 10 and 10^4 must all be readable.
  kLog1p,
};

// Maps data values in [lo, hi] to pixels in [from, to] (to < from for a y
// axis, whose pixels grow downward).
class Axis {
 public:
  // A degenerate or non-finite range is widened, and a log10 range made
  // positive, so the mapping is always finite.
  Axis(Scale scale, double lo, double hi, double from, double to);

  // The pixel of `v`, clamped to the axis' ends; NaN for NaN.
  double operator()(double v) const;

  Scale scale() const { return scale_; }
  double lo() const { return lo_; }
  double hi() const { return hi_; }
  double from() const { return from_; }
  double to() const { return to_; }

 private:
  double Transform(double v) const;

  Scale scale_;
  double lo_, hi_, from_, to_;
};

struct Tick {
  double value;
  std::string label;
};

// About `count` ticks at 1, 2 or 5 times a power of ten, within [lo, hi].
std::vector<Tick> LinearTicks(double lo, double hi, int count = 6);
// [lo, hi] widened outward to the tick step LinearTicks would use.
std::pair<double, double> NiceRange(double lo, double hi, int count = 6);
// Powers of ten in [lo, hi], labelled "1e-5" ... "1e0".
std::vector<Tick> DecadeTicks(double lo, double hi);
// 0, then powers of ten up to hi: the ticks of a log(1 + x) axis.
std::vector<Tick> Log1pTicks(double hi);

struct Stroke {
  std::string color = "#1b6ca8";
  double width = 1.6;
  std::string dash = {};  // stroke-dasharray; "" = solid
};

struct LegendEntry {
  enum class Kind { kLine, kBox, kDot, kHollowDot };
  std::string label;
  std::string color;
  Kind kind = Kind::kLine;
  std::string dash = {};  // for kLine
};

// Where a legend goes: always outside the plot area, so it never hides data.
// kOutsideRight starts at the top of the frame's right margin; the picture
// grows wider or taller when the legend needs more room than the margin.
enum class Corner { kOutsideRight };

// Size of the whole picture and the margins around the plot area, in SVG
// user units: pixels when the page shows the picture at its drawn size.
struct Frame {
  double width = 640, height = 340;
  double left = 60, right = 180, top = 20, bottom = 50;
};

struct Point {
  double x, y;
};

// One plot: a framed area with an x and a y axis. Calls append elements in
// drawing order; Finish() closes the <svg>.
class Plot {
 public:
  // `label` is the accessible name; `css_class` names the plot (tests find
  // plots by it).
  Plot(const Frame& frame, const Axis& x, const Axis& y, absl::string_view label,
       absl::string_view css_class);
  // The axes for a frame's plot area: x left to right, y bottom to top.
  static Axis XAxisFor(const Frame& frame, Scale scale, double lo, double hi);
  static Axis YAxisFor(const Frame& frame, Scale scale, double lo, double hi);

  const Axis& x() const { return x_; }
  const Axis& y() const { return y_; }

  // Tick labels (and light grid lines when `grid`) plus the axis title.
  void XTicks(const std::vector<Tick>& ticks, absl::string_view title, bool grid = true);
  void YTicks(const std::vector<Tick>& ticks, absl::string_view title, bool grid = true);

  // A polyline; a non-finite point ends one piece and starts the next.
  // `css_class` and `title` (a tooltip) name the series.
  void Line(const std::vector<Point>& points, const Stroke& stroke, absl::string_view css_class,
            absl::string_view title);
  // The area between `low` and `high` at each x (a confidence band), split
  // like Line at non-finite values.
  void Band(const std::vector<double>& xs, const std::vector<double>& low,
            const std::vector<double>& high, absl::string_view color, absl::string_view css_class,
            absl::string_view title, double opacity = 0.18);
  void Dot(Point p, absl::string_view color, absl::string_view css_class, absl::string_view title,
           bool hollow = false, double radius = 3.5);
  // A rectangle between two data corners (a bar or a histogram bin).
  void Box(Point a, Point b, absl::string_view fill, absl::string_view css_class,
           absl::string_view title);
  // Full-width horizontal / full-height vertical reference lines; `label`
  // (if any) is written just above the horizontal line's left or right end.
  void HLine(double y, const Stroke& stroke, absl::string_view css_class,
             absl::string_view label = "", bool label_right = false);
  void VLine(double x, const Stroke& stroke, absl::string_view css_class);
  // Text at a data point, shifted by (dx, dy) pixels.
  void Label(Point at, absl::string_view text, absl::string_view anchor = "middle",
             absl::string_view color = "#222", double dx = 0, double dy = 0);
  void Legend(const std::vector<LegendEntry>& entries, Corner corner);

  // The finished <svg> element (larger than the frame if the legend needs
  // it). It scales with the page: a viewBox of its drawn size, width 100% of
  // its container and at most its drawn width (text is never enlarged), the
  // height following from the viewBox.
  std::string Finish();

 private:
  Frame frame_;
  Axis x_, y_;
  std::string label_, css_class_;
  double width_, height_;  // the frame's, or larger for the legend
  std::string svg_;        // the elements; Finish() wraps them in <svg>
};

}  // namespace memaudit::cli::svg

#endif  // MEMAUDIT_CLI_SVG_PLOT_H_
