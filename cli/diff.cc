#include "cli/diff.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace memaudit::cli {
namespace {

std::string Reading(const std::optional<spec::MetricReading>& r) {
  if (!r.has_value()) return "-";
  return absl::StrFormat("%.4g [%.4g, %.4g]", r->value, r->low, r->high);
}

}  // namespace

std::string DiffTable(const std::vector<spec::MetricChange>& changes, const std::string& old_name,
                      const std::string& new_name) {
  std::string out =
      absl::StrFormat("old: %s\nnew: %s\n%-40s %-28s %-28s %s\n", old_name, new_name, "metric",
                      "old [95% interval]", "new [95% interval]", "new - old [95% interval]");
  size_t significant = 0, worse = 0;
  for (const spec::MetricChange& c : changes) {
    std::string change = "-";
    if (c.difference.has_value()) {
      change = absl::StrFormat("%+.4g [%+.4g, %+.4g]%s", c.difference->value, c.difference->low,
                               c.difference->high,
                               c.worse ? "  WORSE" : (c.significant ? "  better" : ""));
    } else if (c.old_reading && c.new_reading) {
      change = absl::StrFormat("%+.4g (no interval)", c.new_reading->value - c.old_reading->value);
    }
    significant += c.significant;
    worse += c.worse;
    absl::StrAppend(&out, absl::StrFormat("%-40s %-28s %-28s %s\n", c.metric,
                                          Reading(c.old_reading), Reading(c.new_reading), change));
  }
  absl::StrAppend(
      &out, absl::StrFormat("%u of %u metrics changed significantly (%u worse); each at 95%%, "
                            "not corrected for the number of metrics\n",
                            significant, changes.size(), worse));
  return out;
}

}  // namespace memaudit::cli
