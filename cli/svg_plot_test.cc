#include "cli/svg_plot.h"

#include <cmath>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::cli::svg {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

int Count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Non-finite numbers as printf writes them ("nan", "-inf"), which a browser
// rejects or drops; not inside words such as "inference".
bool HasBadNumber(const std::string& svg) {
  static const std::regex kBad("(^|[^a-z])-?(nan|inf)([^a-z]|$)", std::regex::icase);
  return std::regex_search(svg, kBad);
}

void ExpectNoBadNumbers(const std::string& svg) { EXPECT_FALSE(HasBadNumber(svg)) << svg; }

TEST(BadNumberTest, CatchesPrintedNonFiniteValuesOnly) {
  EXPECT_TRUE(HasBadNumber("x=\"nan\""));
  EXPECT_TRUE(HasBadNumber("points=\"1,-inf 2,3\""));
  EXPECT_TRUE(HasBadNumber("NaN"));
  EXPECT_FALSE(HasBadNumber("membership inference, financial, nano"));
}

std::vector<std::string> Labels(const std::vector<Tick>& ticks) {
  std::vector<std::string> out;
  for (const Tick& t : ticks) out.push_back(t.label);
  return out;
}

TEST(AxisTest, LinearMapsAndClamps) {
  const Axis x(Scale::kLinear, 0, 10, 100, 200);
  EXPECT_DOUBLE_EQ(x(0), 100);
  EXPECT_DOUBLE_EQ(x(5), 150);
  EXPECT_DOUBLE_EQ(x(10), 200);
  EXPECT_DOUBLE_EQ(x(-5), 100);
  EXPECT_DOUBLE_EQ(x(20), 200);
  EXPECT_DOUBLE_EQ(x(kInf), 200);
  EXPECT_TRUE(std::isnan(x(kNaN)));
  // A y axis runs downward in pixels.
  const Axis y(Scale::kLinear, 0, 1, 300, 20);
  EXPECT_DOUBLE_EQ(y(0), 300);
  EXPECT_DOUBLE_EQ(y(1), 20);
  EXPECT_DOUBLE_EQ(y(0.5), 160);
}

TEST(AxisTest, Log10PutsDecadesEvenlyAndZeroOnTheFloor) {
  const Axis x(Scale::kLog10, 1e-5, 1, 0, 500);
  EXPECT_NEAR(x(1e-5), 0, 1e-9);
  EXPECT_NEAR(x(1e-4), 100, 1e-9);
  EXPECT_NEAR(x(1e-3), 200, 1e-9);
  EXPECT_NEAR(x(1), 500, 1e-9);
  EXPECT_NEAR(x(0), 0, 1e-9);
  EXPECT_NEAR(x(-1), 0, 1e-9);
}

TEST(AxisTest, Log1pKeepsZeroAndSpreadsDecades) {
  const Axis x(Scale::kLog1p, 0, 999, 0, 300);
  EXPECT_DOUBLE_EQ(x(0), 0);
  EXPECT_NEAR(x(9), 100, 1e-9);
  EXPECT_NEAR(x(99), 200, 1e-9);
  EXPECT_NEAR(x(999), 300, 1e-9);
}

TEST(AxisTest, DegenerateRangesStayFinite) {
  for (const Axis& a :
       {Axis(Scale::kLinear, 5, 5, 0, 100), Axis(Scale::kLinear, 0, 0, 0, 100),
        Axis(Scale::kLog10, 0, 0, 0, 100), Axis(Scale::kLog10, -3, -1, 0, 100),
        Axis(Scale::kLog1p, -2, 0, 0, 100), Axis(Scale::kLinear, kNaN, kInf, 0, 100),
        Axis(Scale::kLinear, 10, 1, 0, 100)}) {
    for (double v : {-1.0, 0.0, 1.0, 5.0, 1e9, kInf, -kInf}) {
      const double p = a(v);
      EXPECT_TRUE(std::isfinite(p)) << v;
      EXPECT_GE(p, 0);
      EXPECT_LE(p, 100);
    }
  }
}

TEST(TicksTest, LinearTicksAreRoundNumbers) {
  EXPECT_THAT(Labels(LinearTicks(0, 1, 5)), ElementsAre("0.0", "0.2", "0.4", "0.6", "0.8", "1.0"));
  EXPECT_THAT(Labels(LinearTicks(0, 20)), ElementsAre("0", "5", "10", "15", "20"));
  EXPECT_THAT(Labels(LinearTicks(-0.3, 0.3, 6)),
              ElementsAre("-0.3", "-0.2", "-0.1", "0.0", "0.1", "0.2", "0.3"));
  EXPECT_TRUE(LinearTicks(1, 1).empty());
  EXPECT_TRUE(LinearTicks(kNaN, 1).empty());
}

TEST(TicksTest, NiceRangeWidensToTheTickStep) {
  EXPECT_EQ(NiceRange(0, 19.93), std::make_pair(0.0, 20.0));
  EXPECT_EQ(NiceRange(4.36, 40.2), std::make_pair(0.0, 50.0));
  EXPECT_EQ(NiceRange(3, 3), std::make_pair(2.5, 3.5));
  EXPECT_EQ(NiceRange(kNaN, 1), std::make_pair(0.0, 1.0));
}

TEST(TicksTest, LogTicks) {
  EXPECT_THAT(Labels(DecadeTicks(1e-5, 1)),
              ElementsAre("1e-5", "1e-4", "1e-3", "1e-2", "1e-1", "1e0"));
  EXPECT_THAT(Labels(Log1pTicks(2000)), ElementsAre("0", "1", "10", "100", "1000"));
  EXPECT_THAT(Labels(Log1pTicks(1e5)), ElementsAre("0", "1", "10", "100", "1000", "1e4", "1e5"));
  EXPECT_THAT(Labels(Log1pTicks(0.5)), ElementsAre("0"));
}

TEST(EscapeTest, EscapesMarkupAndQuotes) {
  EXPECT_EQ(Escape("<a & \"b\" 'c'>"), "&lt;a &amp; &quot;b&quot; &#39;c&#39;&gt;");
  EXPECT_EQ(Escape("plain"), "plain");
}

Plot UnitPlot() {
  const Frame frame;
  return Plot(frame, Plot::XAxisFor(frame, Scale::kLinear, 0, 10),
              Plot::YAxisFor(frame, Scale::kLinear, 0, 1), "a \"test\" plot", "test");
}

TEST(PlotTest, FrameAxesAndTitles) {
  Plot plot = UnitPlot();
  // The plot area is the frame minus its margins: 60..460 by 20..290.
  EXPECT_DOUBLE_EQ(plot.x()(0), 60);
  EXPECT_DOUBLE_EQ(plot.x()(10), 460);
  EXPECT_DOUBLE_EQ(plot.y()(0), 290);
  EXPECT_DOUBLE_EQ(plot.y()(1), 20);
  plot.XTicks(LinearTicks(0, 10), "steps <x>");
  plot.YTicks(LinearTicks(0, 1, 5), "rate");
  const std::string svg = plot.Finish();
  // Sized by its viewBox: as wide as the page allows, never wider than drawn.
  EXPECT_THAT(svg, StartsWith("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 640 340\" "
                              "width=\"100%\" style=\"max-width:640px\" "));
  EXPECT_THAT(svg, HasSubstr("aria-label=\"a &quot;test&quot; plot\" class=\"test\""));
  EXPECT_THAT(svg, HasSubstr(">steps &lt;x&gt;</text>"));
  EXPECT_THAT(svg, HasSubstr(">0.6</text>"));
  EXPECT_THAT(svg, HasSubstr("rotate(-90 14 155.0)\">rate</text>"));
  EXPECT_EQ(svg.substr(svg.size() - 6), "</svg>");
}

TEST(PlotTest, LineSplitsAtNonFinitePointsAndNeverPrintsThem) {
  Plot plot = UnitPlot();
  plot.Line({{0, 0}, {5, 0.5}, {6, kNaN}, {7, 0.7}, {10, 1}}, {"#123456"}, "curve", "series <1>");
  plot.Line({{kNaN, 1}, {2, kInf}}, {}, "gone", "all bad");  // inf clamps: one point left
  const std::string svg = plot.Finish();
  EXPECT_EQ(Count(svg, "<polyline class=\"curve\""), 2);
  EXPECT_THAT(svg, HasSubstr("points=\"60.0,290.0 260.0,155.0\""));
  EXPECT_THAT(svg, HasSubstr("points=\"340.0,101.0 460.0,20.0\""));
  EXPECT_THAT(svg, HasSubstr("<title>series &lt;1&gt;</title>"));
  EXPECT_THAT(svg, HasSubstr("stroke=\"#123456\""));
  ExpectNoBadNumbers(svg);
}

TEST(PlotTest, BandDotBoxAndReferenceLinesSkipBadNumbers) {
  Plot plot = UnitPlot();
  plot.Band({0, 1, 2, 3, 4}, {0.1, 0.2, kNaN, 0.2, 0.3}, {0.3, 0.4, 0.5, 0.6, 0.7}, "#abc", "band",
            "interval");
  plot.Dot({5, 0.5}, "#f00", "dot", "a dot");
  plot.Dot({kNaN, 0.5}, "#f00", "dot", "no dot");
  plot.Dot({1, 0.5}, "#0f0", "hollow", "", /*hollow=*/true);
  plot.Box({1, 0}, {2, 0.5}, "#00f", "bar", "bar 1");
  plot.Box({1, 0}, {2, kNaN}, "#00f", "bar", "bar 2");
  plot.HLine(0.5, {"#888", 1, "4 4"}, "chance", "chance");
  plot.HLine(kNaN, {"#888"}, "missing", "missing");
  plot.VLine(5, {"#c33", 1, "2 3"}, "marker");
  plot.Label({5, 0.5}, "x64", "middle", "#222", 0, -3);
  const std::string svg = plot.Finish();
  // Two finite runs: points 0-1 and 3-4.
  EXPECT_EQ(Count(svg, "<polygon class=\"band\""), 2);
  EXPECT_THAT(svg, HasSubstr("<polygon class=\"band\" points=\"60.0,209.0 100.0,182.0 "
                             "100.0,236.0 60.0,263.0\" fill=\"#abc\" fill-opacity=\"0.18\""));
  EXPECT_EQ(Count(svg, "<circle class=\"dot\""), 1);
  EXPECT_THAT(svg, HasSubstr("<circle class=\"hollow\" cx=\"100.0\" cy=\"155.0\" r=\"3.5\" "
                             "fill=\"#fff\" stroke=\"#0f0\">"));
  EXPECT_EQ(Count(svg, "<rect class=\"bar\""), 1);
  EXPECT_THAT(svg, HasSubstr("<rect class=\"bar\" x=\"100.0\" y=\"155.0\" width=\"40.0\" "
                             "height=\"135.0\" fill=\"#00f\"><title>bar 1</title></rect>"));
  EXPECT_THAT(svg, HasSubstr("<line class=\"chance\" x1=\"60.0\" y1=\"155.0\" x2=\"460.0\" "
                             "y2=\"155.0\" stroke=\"#888\" stroke-width=\"1\" "
                             "stroke-dasharray=\"4 4\"/>"));
  EXPECT_THAT(svg, Not(HasSubstr("missing")));
  EXPECT_THAT(svg, HasSubstr("<line class=\"marker\" x1=\"260.0\" y1=\"20.0\" x2=\"260.0\" "
                             "y2=\"290.0\""));
  EXPECT_THAT(svg, HasSubstr("<text x=\"260.0\" y=\"152.0\" font-size=\"11\" "
                             "text-anchor=\"middle\" fill=\"#222\">x64</text>"));
  ExpectNoBadNumbers(svg);
}

TEST(PlotTest, LegendListsEveryEntryEscaped) {
  Plot plot = UnitPlot();
  plot.Legend({{"line & more", "#111"},
               {"box", "#222", LegendEntry::Kind::kBox},
               {"dot", "#333", LegendEntry::Kind::kDot},
               {"hollow", "#444", LegendEntry::Kind::kHollowDot},
               {"dashed", "#555", LegendEntry::Kind::kLine, "4 4"}},
              Corner::kOutsideRight);
  const std::string svg = plot.Finish();
  EXPECT_THAT(svg, HasSubstr(">line &amp; more</text>"));
  EXPECT_THAT(svg, HasSubstr(">hollow</text>"));
  EXPECT_THAT(svg, HasSubstr("stroke=\"#555\" stroke-width=\"2\" stroke-dasharray=\"4 4\""));
  EXPECT_EQ(Count(svg, "<g class=\"legend\">"), 1);
  ExpectNoBadNumbers(svg);
  Plot empty = UnitPlot();
  empty.Legend({}, Corner::kOutsideRight);
  EXPECT_THAT(empty.Finish(), Not(HasSubstr("legend")));
}

// Every x coordinate the legend draws at (swatches and text starts).
std::vector<double> LegendXs(const std::string& svg) {
  const size_t begin = svg.find("<g class=\"legend\">");
  const std::string legend = svg.substr(begin, svg.find("</g>", begin) - begin);
  static const std::regex kX(" (x|x1|x2|cx)=\"([0-9.]+)\"");
  std::vector<double> xs;
  for (std::sregex_iterator it(legend.begin(), legend.end(), kX), end; it != end; ++it) {
    xs.push_back(std::stod((*it)[2]));
  }
  return xs;
}

TEST(PlotTest, LegendStaysOutsideThePlotAreaAndThePictureGrowsToHoldIt) {
  // The plot area ends at x = 460; the legend starts 10 px right of it.
  Plot plot = UnitPlot();
  plot.Legend({{"a", "#111"}, {"b", "#222", LegendEntry::Kind::kBox}}, Corner::kOutsideRight);
  const std::string svg = plot.Finish();
  for (double x : LegendXs(svg)) EXPECT_GE(x, 470) << svg;
  // No backdrop: nothing behind it to hide.
  EXPECT_THAT(svg, Not(HasSubstr("fill-opacity=\"0.85\"")));
  EXPECT_THAT(svg, HasSubstr("viewBox=\"0 0 640 340\""));

  // A label longer than the right margin widens the picture.
  Plot wide = UnitPlot();
  wide.Legend({{std::string(60, 'w'), "#111"}}, Corner::kOutsideRight);
  EXPECT_THAT(wide.Finish(), HasSubstr("viewBox=\"0 0 872 340\" width=\"100%\" "
                                       "style=\"max-width:872px\""));
  // More entries than the frame is tall makes it taller: 30 rows of 15 px
  // from y = 20, plus 6 px of padding.
  Plot tall = UnitPlot();
  tall.Legend(std::vector<LegendEntry>(30, {"row", "#111"}), Corner::kOutsideRight);
  EXPECT_THAT(tall.Finish(), HasSubstr("viewBox=\"0 0 640 476\""));
}

TEST(PlotTest, ColorsCycle) {
  EXPECT_STREQ(Color(0), "#1b6ca8");
  EXPECT_STREQ(Color(6), Color(0));
  EXPECT_STRNE(Color(1), Color(0));
}

}  // namespace
}  // namespace memaudit::cli::svg
