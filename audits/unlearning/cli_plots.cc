#include "audits/unlearning/cli_plots.h"

#include <algorithm>
#include <map>
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
using svg::Scale;

namespace {

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

}  // namespace

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

}  // namespace memaudit::cli
