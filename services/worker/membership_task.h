// Runs a membership audit's task: trains its models (common/membership_tasks.h)
// and returns each model's phi and loss on the pool (and loss on RMIA's
// population) for the scorer.
#ifndef MEMAUDIT_SERVICES_WORKER_MEMBERSHIP_TASK_H_
#define MEMAUDIT_SERVICES_WORKER_MEMBERSHIP_TASK_H_

#include "services/worker/kind_handler.h"

namespace memaudit::worker {

const KindHandler& MembershipHandler();

}  // namespace memaudit::worker

#endif  // MEMAUDIT_SERVICES_WORKER_MEMBERSHIP_TASK_H_
