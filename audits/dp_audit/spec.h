// Defaults and validation of a `dp_audit` (Privacy Auditing with One (1)
// Training Run) and its plan: one task per training run.
#ifndef MEMAUDIT_AUDITS_DP_AUDIT_SPEC_H_
#define MEMAUDIT_AUDITS_DP_AUDIT_SPEC_H_

#include <cstdint>
#include <vector>

#include "memaudit/v1/spec.pb.h"
#include "spec/kind_handler.h"
#include "spec/spec_validator.h"

namespace memaudit::spec {

void ApplyDpAuditDefaults(v1::DpAudit* d);
void ValidateDpAudit(const v1::DpAudit& d, std::vector<SpecProblem>* problems);
// Optimizer steps of one run (the training set and the run's included input
// canaries, epochs x batches); at most one batch more than it trains.
uint64_t DpAuditRunSteps(const v1::DpAudit& d);

}  // namespace memaudit::spec

#endif  // MEMAUDIT_AUDITS_DP_AUDIT_SPEC_H_
