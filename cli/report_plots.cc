#include "cli/report_plots.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace memaudit::cli {

svg::Frame PageFrame() { return svg::Frame{1100, 410, 64, 300, 20, 50}; }

std::string Fixed(double v, int decimals) {
  return std::isfinite(v) ? absl::StrFormat("%.*f", decimals, v) : "n/a";
}

double MaxFinite(const std::vector<double>& values, double floor) {
  for (double v : values) {
    if (std::isfinite(v)) floor = std::max(floor, v);
  }
  return floor;
}

}  // namespace memaudit::cli
