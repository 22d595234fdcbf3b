#include "spec/planner.h"

#include "common/base/status_macros.h"
#include "spec/kind_handler.h"
#include "spec/spec_validator.h"

namespace memaudit::spec {

absl::StatusOr<Plan> PlanAudit(const v1::AuditSpec& spec) {
  MEMAUDIT_RETURN_IF_ERROR(ValidateSpec(spec));
  Plan plan;
  plan.tasks = HandlerFor(spec.kind_case())->Plan(spec);  // A valid spec has a kind.
  return plan;
}

}  // namespace memaudit::spec
