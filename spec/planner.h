// Turns a validated spec into the tasks that train its models. A plan is a
// pure function of the spec: the same spec always yields the same tasks, and
// each task's data and seeds derive from (seed, role, index).
#ifndef MEMAUDIT_SPEC_PLANNER_H_
#define MEMAUDIT_SPEC_PLANNER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit::spec {

struct PlannedTask {
  std::string role;
  uint32_t index = 0;
  uint64_t steps_total = 0;
  // Membership: the models [first_model, first_model + models) it trains
  // (audits/membership/tasks.h); other kinds leave the defaults.
  uint32_t first_model = 0;
  uint32_t models = 1;
};

struct Plan {
  std::vector<PlannedTask> tasks;
};

absl::StatusOr<Plan> PlanAudit(const v1::AuditSpec& spec);

}  // namespace memaudit::spec

#endif  // MEMAUDIT_SPEC_PLANNER_H_
