// What every kind's report plots share (audits/<kind>/cli_plots.h): the
// page frame, colours and number formats.
#ifndef MEMAUDIT_CLI_REPORT_PLOTS_H_
#define MEMAUDIT_CLI_REPORT_PLOTS_H_

#include <string>
#include <vector>

#include "cli/svg_plot.h"

namespace memaudit::cli {

inline constexpr const char* kGrey = "#888";
inline constexpr const char* kRed = "#d1495b";
inline constexpr const char* kOrange = "#e08e0b";
inline constexpr const char* kDark = "#4a4a4a";

// The report's page is a text column of 70em (about 1,120 px): each plot is
// drawn that wide, its plot area on the left and the legend in the right
// margin, outside the data, and scales down with a narrower page.
svg::Frame PageFrame();

// Numbers in titles and labels: "n/a" rather than "nan" (a dot can be
// finite while its interval is not).
std::string Fixed(double v, int decimals);

// The largest finite value, or `floor` when there is none larger.
double MaxFinite(const std::vector<double>& values, double floor);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_CLI_REPORT_PLOTS_H_
