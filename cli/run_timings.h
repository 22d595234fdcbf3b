// `memaudit run --timings`: where the time of a run went, from the CLI's own
// clock and the audit's events (their unix_ms, stamped by the coordinator on
// the same machine), printed as one machine-readable line.
#ifndef MEMAUDIT_CLI_RUN_TIMINGS_H_
#define MEMAUDIT_CLI_RUN_TIMINGS_H_

#include <string>

#include "absl/time/time.h"
#include "memaudit/v1/audit.pb.h"

namespace memaudit::cli {

// The moments of a run; InfinitePast() for one that did not happen (no task
// was leased when every model was reused).
struct RunTimings {
  absl::Time start = absl::InfinitePast();        // `memaudit run` began
  absl::Time ready = absl::InfinitePast();        // scorer and coordinator serve
  absl::Time submitted = absl::InfinitePast();    // Submit answered
  absl::Time first_lease = absl::InfinitePast();  // the first task_leased event
  // The last task_succeeded, task_failed, task_retried or task_released event.
  absl::Time last_task_end = absl::InfinitePast();
  absl::Time results = absl::InfinitePast();  // the scored results are in the CLI
  absl::Time report = absl::InfinitePast();   // table printed, results and report written
  absl::Time stopped = absl::InfinitePast();  // every process of the cluster has exited

  // Records what `event` (of the audit's Watch stream) tells.
  void Observe(const v1::AuditEvent& event);

  // "timings: start_s=... submit_s=... first_lease_s=... tasks_s=...
  // scoring_s=... report_s=... shutdown_s=... overhead_s=... total_s=...":
  // seconds with millisecond precision, "nan" where a moment is missing.
  //   start_s        start -> ready
  //   submit_s       ready -> submitted
  //   first_lease_s  start -> first_lease (from the start, not from submit)
  //   tasks_s        first_lease -> last_task_end
  //   scoring_s      last_task_end -> results
  //   report_s       results -> report
  //   shutdown_s     report -> stopped
  //   overhead_s     first_lease_s + (results -> stopped): the fixed cost
  //   total_s        start -> stopped
  std::string Line() const;
};

}  // namespace memaudit::cli

#endif  // MEMAUDIT_CLI_RUN_TIMINGS_H_
