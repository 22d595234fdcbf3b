// A membership audit's given target (spec `membership.target`): the task of
// role kTargetRole evaluates the team's TorchScript model on the pool (and
// RMIA's population) and sends its signals as model N, with the member
// signal that says which pool examples it trained on.
#ifndef MEMAUDIT_AUDITS_MEMBERSHIP_WORKER_TARGET_H_
#define MEMAUDIT_AUDITS_MEMBERSHIP_WORKER_TARGET_H_

#include <vector>

#include "absl/status/statusor.h"
#include "memaudit/v1/worker.pb.h"
#include "services/worker/kind_handler.h"

namespace memaudit::worker {

absl::StatusOr<std::vector<v1::Observation>> RunMembershipTarget(const v1::Task& task,
                                                                 const StepCallback& on_steps);

}  // namespace memaudit::worker

#endif  // MEMAUDIT_AUDITS_MEMBERSHIP_WORKER_TARGET_H_
