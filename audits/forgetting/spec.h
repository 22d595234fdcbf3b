// Defaults, validation and the step count of a `forgetting` audit ("Measuring
// Forgetting of Memorized Training Examples"), kept apart from
// spec_validator.cc so each audit kind stays small.
#ifndef MEMAUDIT_AUDITS_FORGETTING_SPEC_H_
#define MEMAUDIT_AUDITS_FORGETTING_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "memaudit/v1/spec.pb.h"
#include "spec/kind_handler.h"
#include "spec/spec_rules.h"
#include "spec/spec_validator.h"

namespace memaudit::spec {

void ApplyForgettingDefaults(v1::ForgettingAudit* f);
void ValidateForgetting(const v1::ForgettingAudit& f, std::vector<SpecProblem>* problems);

// 0, 1, 2, 5, 10, 20, 50, ... up to and including `steps_after`.
std::vector<uint64_t> DefaultForgettingEvalPoints(uint64_t steps_after);

// Optimizer steps of one trial, both arms: Inject T_I + injection steps + 2 x
// the last evaluation point; Poison 2 x T_I + 2 x the last evaluation point;
// the deterministic_replay attack's replay and each LiRA OUT reference model
// add a baseline run, each lira_online IN reference an injected-arm run
// (injection steps included), selection by loss its reference model's
// steps. Matches engine::ForgettingTrialSteps (LM canaries:
// ForgettingLmTrialSteps) exactly.
uint64_t ForgettingTrialSteps(const v1::ForgettingAudit& f);

// eval_points strictly ascending, none past training.steps_after_injection;
// fields named as `add` prefixes them.
void CheckForgettingEvalPoints(const v1::ForgettingAudit& f, const AddProblem& add);

}  // namespace memaudit::spec

#endif  // MEMAUDIT_AUDITS_FORGETTING_SPEC_H_
