// The membership audit's spec: defaults, validation and plan (one task per
// resources.models_per_task models, common/membership_tasks.h).
#ifndef MEMAUDIT_SPEC_MEMBERSHIP_SPEC_H_
#define MEMAUDIT_SPEC_MEMBERSHIP_SPEC_H_

#include "spec/kind_handler.h"

namespace memaudit::spec {

const KindHandler& MembershipHandler();

}  // namespace memaudit::spec

#endif  // MEMAUDIT_SPEC_MEMBERSHIP_SPEC_H_
