// The membership audit's spec: defaults, validation and plan (one task per
// resources.models_per_task models, common/membership_tasks.h).
#ifndef MEMAUDIT_SERVICES_COORDINATOR_MEMBERSHIP_SPEC_H_
#define MEMAUDIT_SERVICES_COORDINATOR_MEMBERSHIP_SPEC_H_

#include <string>
#include <vector>

#include "services/coordinator/kind_handler.h"

namespace memaudit::coordinator {

// The attacks a membership spec may name, in the order the defaults list them.
const std::vector<std::string>& KnownMembershipAttacks();

const KindHandler& MembershipHandler();

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_MEMBERSHIP_SPEC_H_
