// The membership audit's spec: defaults, validation and plan (one task per
// resources.models_per_task models, common/membership_tasks.h).
#ifndef MEMAUDIT_SERVICES_COORDINATOR_MEMBERSHIP_SPEC_H_
#define MEMAUDIT_SERVICES_COORDINATOR_MEMBERSHIP_SPEC_H_

#include <string>
#include <vector>

#include "services/coordinator/kind_handler.h"

namespace memaudit::coordinator {

// The attacks a spec that names none gets, in order.
const std::vector<std::string>& DefaultMembershipAttacks();
// The attacks a membership spec may name: the defaults, then the reference
// code's variants (named to compare with published numbers).
const std::vector<std::string>& KnownMembershipAttacks();

const KindHandler& MembershipHandler();

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_MEMBERSHIP_SPEC_H_
