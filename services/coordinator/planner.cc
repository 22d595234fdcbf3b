#include "services/coordinator/planner.h"

#include "common/status_macros.h"
#include "services/coordinator/kind_handler.h"
#include "services/coordinator/spec_validator.h"

namespace memaudit::coordinator {

absl::StatusOr<Plan> PlanAudit(const v1::AuditSpec& spec) {
  MEMAUDIT_RETURN_IF_ERROR(ValidateSpec(spec));
  Plan plan;
  plan.tasks = HandlerFor(spec.kind_case())->Plan(spec);  // A valid spec has a kind.
  return plan;
}

}  // namespace memaudit::coordinator
