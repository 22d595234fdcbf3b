// The coordinator -> worker contract of a `membership` audit: which models a
// task trains. Task t covers models [t * P, min(N, (t + 1) * P)) with P =
// resources.models_per_task: ranges aligned to multiples of P, so growing N
// leaves the earlier tasks' ranges as they were and stored models can stand
// in for whole tasks. Observations keep run = model index whatever P is.
// With a `target` (a model trained outside memaudit), one more task of role
// kTargetRole evaluates it as model N = reference_models, and adds the
// signal kMemberSignal: which pool examples it trained on.
// Header-only and torch-free so planner, scheduler and worker agree.
#ifndef MEMAUDIT_AUDITS_MEMBERSHIP_TASKS_H_
#define MEMAUDIT_AUDITS_MEMBERSHIP_TASKS_H_

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/base/seeding.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit::membership {

inline constexpr char kModelRole[] = "reference_model";
// Seed `what` ("init", "order", "dropout") of model `model`: from the model
// index alone, so packing, the task that trains it and the data's form
// (dataset rows or documents) leave each model's bits as they are.
inline uint64_t ModelSeed(uint64_t audit_seed, absl::string_view what, uint32_t model) {
  return DeriveSeed(audit_seed, absl::StrCat(kModelRole, "/", what), model);
}
inline constexpr char kTargetRole[] = "target_model";
// Per pool example of the target: 1 when the target trained on it, else 0.
inline constexpr char kMemberSignal[] = "member";
inline constexpr uint32_t kMaxModelsPerTask = 64;

struct ModelRange {
  uint32_t first = 0;
  uint32_t count = 0;
  uint32_t end() const { return first + count; }
};

// The models whose signals the scorer reads: the reference models, then the
// given target as model N.
inline uint32_t MembershipModels(const v1::MembershipAudit& m) {
  return m.reference_models() + (m.has_target() ? 1 : 0);
}

// The examples every model is scored on: a dataset's pool rows, or
// documents' pool sequences.
inline uint32_t PoolSize(const v1::MembershipAudit& m) {
  return m.has_documents() ? m.documents().pool_size() : m.dataset().pool_size();
}

// The recipe's batch size and epochs, for either kind of example.
inline uint32_t BatchSize(const v1::MembershipAudit& m) {
  return m.has_documents() ? m.documents().training().batch_size() : m.training().batch_size();
}
inline uint32_t Epochs(const v1::MembershipAudit& m) {
  return m.has_documents() ? m.documents().training().epochs() : m.training().epochs();
}

// The given target's model index (its observations' run).
inline uint32_t TargetRun(const v1::MembershipAudit& m) { return m.reference_models(); }

// Whether the audit scores one target (a chosen reference model, or a team's
// own) rather than every model in turn.
inline bool ScoresOneTarget(const v1::MembershipAudit& m) {
  return m.has_target_model() || m.has_target();
}

// 0 (unset) means 1.
inline uint32_t ModelsPerTask(const v1::AuditSpec& spec) {
  return std::max<uint32_t>(1, spec.resources().models_per_task());
}

inline uint32_t TaskCount(const v1::AuditSpec& spec) {
  const uint32_t per = ModelsPerTask(spec);
  return (spec.membership().reference_models() + per - 1) / per;
}

inline ModelRange TaskModels(const v1::AuditSpec& spec, uint32_t task) {
  const uint32_t per = ModelsPerTask(spec);
  const uint32_t n = spec.membership().reference_models();
  ModelRange r;
  r.first = static_cast<uint32_t>(std::min<uint64_t>(uint64_t{task} * per, n));
  r.count = std::min(n - r.first, per);
  return r;
}

}  // namespace memaudit::membership

#endif  // MEMAUDIT_AUDITS_MEMBERSHIP_TASKS_H_
