// resources.models_per_task: auto. How many of a membership audit's models
// one task trains as a batched ensemble when the spec leaves it to memaudit:
// a cost model measured with bench/ensemble_bench on CPU (docs/performance.md,
// "models_per_task: auto"). Packing never changes a number, only the speed,
// so the choice is free to follow the measurements.
#ifndef MEMAUDIT_AUDITS_MEMBERSHIP_SPEC_PACKING_H_
#define MEMAUDIT_AUDITS_MEMBERSHIP_SPEC_PACKING_H_

#include <cstdint>

#include "memaudit/v1/spec.pb.h"

namespace memaudit::spec {

// Most members per packed task: past it the gain is flat and fewer, longer
// tasks only cost parallelism across workers.
inline constexpr uint32_t kAutoPackMembers = 16;
// A member's multiply-adds per training step (batch x parameters) above
// which packing is left off: there each member's GEMMs already run near the
// core's peak and stacking gains under 10% at best, or loses.
inline constexpr double kAutoPackMaxStepMacs = 4e6;
// Most rows one packed step holds (members x batch): past it the stacked
// activations leave the caches and a 16-member ensemble of batch 256 lost
// to one model at a time where 4 members still won.
inline constexpr uint32_t kAutoPackMaxRows = 1024;
// Most bytes of the members' weights, gradients and momenta together (12
// bytes a parameter): past it they no longer stay in the caches between
// steps; 16 members of 784-256-10 at batch 16 ran at 0.65x, 4 at 1.1x.
inline constexpr double kAutoPackMaxStateBytes = 10 * 1024 * 1024;

// The bounds above are one thread's, measured at threads_per_task 1; a task
// of T threads scales each by T (more cores want wider steps, and bring
// their own caches): on 16 threads 16 members of 784-256-10 at batch 128
// ran 6.4x one at a time, 64 of 784-1024-10 at batch 256 0.93x.
//
// The models per task for `spec` (a membership audit with its other
// defaults applied): on CPU, as many as every bound allows (at most the
// audit's models) when a member's step costs at most T x
// kAutoPackMaxStepMacs, else 1; on a GPU, min(kAutoPackMembers, models). A
// pure function of the spec, so a plan (and a resent Submit) never varies.
uint32_t AutoModelsPerTask(const v1::AuditSpec& spec);

}  // namespace memaudit::spec

#endif  // MEMAUDIT_AUDITS_MEMBERSHIP_SPEC_PACKING_H_
