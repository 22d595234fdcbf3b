// Defaults and rules of a forgetting audit's `construction` (the closed-form
// learners of Measuring Forgetting's Section 5): every field of the
// trained-model audit is unused, and says so when set.
#ifndef MEMAUDIT_AUDITS_FORGETTING_SPEC_CONSTRUCTION_H_
#define MEMAUDIT_AUDITS_FORGETTING_SPEC_CONSTRUCTION_H_

#include "memaudit/v1/spec.pb.h"
#include "spec/spec_rules.h"

namespace memaudit::spec {

void ApplyConstructionDefaults(v1::ForgettingAudit* f);
// Whether `c` names a construction; if not, says so under construction.name.
bool KnownConstruction(const v1::ForgettingConstruction& c, const AddProblem& add);
// Fields are named under "forgetting." by `add`'s caller.
void ValidateConstruction(const v1::ForgettingAudit& f, const AddProblem& add);

}  // namespace memaudit::spec

#endif  // MEMAUDIT_AUDITS_FORGETTING_SPEC_CONSTRUCTION_H_
