// Defaults and validation of a `relational` audit (Differential Relational
// Privacy: RM_norm = s_train - s_val), kept apart from spec_validator.cc so
// each audit kind stays small.
#ifndef MEMAUDIT_AUDITS_RELATIONAL_SPEC_H_
#define MEMAUDIT_AUDITS_RELATIONAL_SPEC_H_

#include <vector>

#include "memaudit/v1/spec.pb.h"
#include "spec/kind_handler.h"
#include "spec/spec_validator.h"

namespace memaudit::spec {

// With neither model set, the phone book is chosen (the audit's main model).
void ApplyRelationalDefaults(v1::RelationalAudit* r);
void ValidateRelational(const v1::RelationalAudit& r, std::vector<SpecProblem>* problems);

}  // namespace memaudit::spec

#endif  // MEMAUDIT_AUDITS_RELATIONAL_SPEC_H_
