#include "cli/run_timings.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace memaudit::cli {
namespace {

bool Known(absl::Time t) { return t != absl::InfinitePast(); }

// Seconds from `from` to `to`; NaN unless both happened.
double Seconds(absl::Time from, absl::Time to) {
  if (!Known(from) || !Known(to)) return std::numeric_limits<double>::quiet_NaN();
  return absl::ToDoubleSeconds(to - from);
}

std::string Field(const char* name, double seconds) {
  if (std::isnan(seconds)) return absl::StrCat(name, "=nan");
  return absl::StrFormat("%s=%.3f", name, seconds);
}

}  // namespace

void RunTimings::Observe(const v1::AuditEvent& event) {
  const v1::EventType type = event.type();
  const absl::Time at = absl::FromUnixMillis(event.unix_ms());
  if (type == v1::TASK_LEASED) {
    if (!Known(first_lease) || at < first_lease) first_lease = at;
  } else if (type == v1::TASK_SUCCEEDED || type == v1::TASK_FAILED || type == v1::TASK_RETRIED ||
             type == v1::TASK_RELEASED) {
    if (!Known(last_task_end) || at > last_task_end) last_task_end = at;
  }
}

std::string RunTimings::Line() const {
  const double first_lease_s = Seconds(start, first_lease);
  return absl::StrCat("timings: ", Field("start_s", Seconds(start, ready)), " ",
                      Field("submit_s", Seconds(ready, submitted)), " ",
                      Field("first_lease_s", first_lease_s), " ",
                      Field("tasks_s", Seconds(first_lease, last_task_end)), " ",
                      Field("scoring_s", Seconds(last_task_end, results)), " ",
                      Field("report_s", Seconds(results, report)), " ",
                      Field("shutdown_s", Seconds(report, stopped)), " ",
                      Field("overhead_s", first_lease_s + Seconds(results, stopped)), " ",
                      Field("total_s", Seconds(start, stopped)));
}

}  // namespace memaudit::cli
