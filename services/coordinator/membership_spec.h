// The membership audit's spec: defaults, validation and plan (one task per
// resources.models_per_task models, common/membership_tasks.h).
#ifndef MEMAUDIT_SERVICES_COORDINATOR_MEMBERSHIP_SPEC_H_
#define MEMAUDIT_SERVICES_COORDINATOR_MEMBERSHIP_SPEC_H_

#include "services/coordinator/kind_handler.h"

namespace memaudit::coordinator {

const KindHandler& MembershipHandler();

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_MEMBERSHIP_SPEC_H_
