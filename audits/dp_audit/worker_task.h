// Runs one `dp_audit` task (role "dp_audit_run", index = the run): maps the
// spec onto engine::RunDpAudit and its scores onto observations.
#ifndef MEMAUDIT_AUDITS_DP_AUDIT_WORKER_TASK_H_
#define MEMAUDIT_AUDITS_DP_AUDIT_WORKER_TASK_H_

#include <vector>

#include "absl/status/statusor.h"
#include "data/labeled_examples.h"
#include "engine/dp_audit_run.h"
#include "memaudit/v1/scorer.pb.h"
#include "memaudit/v1/worker.pb.h"
#include "services/worker/kind_handler.h"

namespace memaudit::worker {

// The engine run of `task` on `data`; INVALID_ARGUMENT names a bad field.
absl::StatusOr<engine::DpAuditRunSpec> DpAuditRunSpecFor(const v1::Task& task,
                                                         const data::LabeledExamples& data);

// The scores and the summary at point "final" (audits/dp_audit/signals.h).
std::vector<v1::Observation> DpAuditObservations(const v1::Task& task,
                                                 const engine::DpAuditRunResult& result);

}  // namespace memaudit::worker

#endif  // MEMAUDIT_AUDITS_DP_AUDIT_WORKER_TASK_H_
