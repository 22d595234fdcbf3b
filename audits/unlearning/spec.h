// Defaults, validation and the step count of an `unlearning` audit ("When
// Machine Unlearning Jeopardizes Privacy"), kept apart from spec_validator.cc
// so each audit kind stays small.
#ifndef MEMAUDIT_AUDITS_UNLEARNING_SPEC_H_
#define MEMAUDIT_AUDITS_UNLEARNING_SPEC_H_

#include <cstdint>
#include <vector>

#include "memaudit/v1/spec.pb.h"
#include "spec/kind_handler.h"
#include "spec/spec_validator.h"

namespace memaudit::spec {

void ApplyUnlearningDefaults(v1::UnlearningAudit* u);
void ValidateUnlearning(const v1::UnlearningAudit& u, std::vector<SpecProblem>* problems);

// Optimizer steps of task (side, original i): the original and all its
// unlearned children (SISA: every shard, then each affected shard's retrain
// from its slice checkpoint). Exact: the worker reports the same count.
uint64_t UnlearningTaskSteps(const v1::AuditSpec& spec, bool target, uint32_t i);

}  // namespace memaudit::spec

#endif  // MEMAUDIT_AUDITS_UNLEARNING_SPEC_H_
