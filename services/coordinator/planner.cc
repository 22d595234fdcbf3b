#include "services/coordinator/planner.h"

#include "common/exposure_signals.h"
#include "common/membership_tasks.h"
#include "common/relational_signals.h"
#include "common/seeding.h"
#include "services/coordinator/exposure_spec.h"
#include "services/coordinator/forgetting_spec.h"
#include "services/coordinator/spec_validator.h"
#include "services/coordinator/unlearning_spec.h"

namespace memaudit::coordinator {

absl::StatusOr<Plan> PlanAudit(const v1::AuditSpec& spec) {
  if (absl::Status s = ValidateSpec(spec); !s.ok()) return s;
  Plan plan;
  if (spec.has_exposure()) {
    // A canary model per variant first (the headline numbers), then the
    // canary-free baselines and reference models (common/exposure_signals.h).
    const v1::ExposureAudit& e = spec.exposure();
    const uint32_t variants = exposure::VariantCount(e);
    for (uint32_t v = 0; v < variants; ++v) {
      plan.tasks.push_back({exposure::kCanaryRole, v, ExposureTaskSteps(e, v, true)});
    }
    for (uint32_t v = 0; v < variants; ++v) {
      const uint64_t steps = ExposureTaskSteps(e, v, false);
      if (e.baseline()) plan.tasks.push_back({exposure::kBaselineRole, v, steps});
      for (uint32_t j = 0; j < e.reference_models(); ++j) {
        plan.tasks.push_back({exposure::kReferenceRole, v * e.reference_models() + j, steps});
      }
    }
    return plan;
  }
  if (spec.has_forgetting()) {
    // One task per trial; each trains its own prefix and both arms.
    const uint64_t steps = ForgettingTrialSteps(spec.forgetting());
    for (uint32_t t = 0; t < spec.forgetting().trials(); ++t) {
      plan.tasks.push_back({"forgetting_trial", t, steps});
    }
    return plan;
  }
  if (spec.has_unlearning()) {
    // One task per original model and side; it trains the original, then its
    // unlearned children from it (common/unlearning_signals.h).
    for (const bool target : {false, true}) {
      const v1::UnlearningSide& side =
          target ? spec.unlearning().target() : spec.unlearning().shadow();
      for (uint32_t i = 0; i < side.originals(); ++i) {
        plan.tasks.push_back({target ? "target_original" : "shadow_original", i,
                              UnlearningTaskSteps(spec, target, i)});
      }
    }
    return plan;
  }
  if (spec.has_relational()) {
    // One task per variant (phone-book width or linear d_x), so variants run
    // in parallel and each streams its own curve.
    const uint64_t steps = relational::TaskSteps(spec.relational());
    const size_t variants = relational::Variants(spec.relational()).size();
    for (uint32_t i = 0; i < variants; ++i) {
      plan.tasks.push_back({relational::kTaskRole, i, steps});
    }
    return plan;
  }
  const v1::MembershipAudit& m = spec.membership();
  // The keep-matrix is rebuilt here only to count each model's training set
  // exactly, so progress totals match the steps workers report. A task's
  // steps are its models' steps summed (a packed step of K models counts K),
  // so the audit's total does not depend on models_per_task.
  const KeepMatrix keep =
      BuildKeepMatrix(spec.seed(), m.reference_models(), m.dataset().pool_size());
  const uint64_t batch = m.training().batch_size();
  for (uint32_t t = 0; t < membership::TaskCount(spec); ++t) {
    const membership::ModelRange models = membership::TaskModels(spec, t);
    PlannedTask task{membership::kModelRole, t, 0, models.first, models.count};
    for (uint32_t i = models.first; i < models.end(); ++i) {
      uint64_t train_size = 0;
      for (uint32_t j = 0; j < keep.examples; ++j) train_size += keep.in(i, j);
      task.steps_total += (train_size + batch - 1) / batch * m.training().epochs();
    }
    plan.tasks.push_back(std::move(task));
  }
  return plan;
}

}  // namespace memaudit::coordinator
