#include "audits/membership/cli_plots.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "audits/membership/attacks.h"
#include "cli/render.h"
#include "cli/report_plots.h"
#include "cli/svg_plot.h"

namespace memaudit::cli {

using svg::Corner;
using svg::LegendEntry;
using svg::Plot;
using svg::Point;
using svg::Scale;

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

}  // namespace memaudit::cli
