#include "audits/membership/worker_target.h"

#include "absl/strings/str_cat.h"
#include "audits/membership/signals.h"
#include "audits/membership/tasks.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "engine/classifier_eval.h"
#include "services/worker/engine_access.h"
#include "spec/dataset_facts.h"

namespace memaudit::worker {

absl::StatusOr<std::vector<v1::Observation>> RunMembershipTarget(const v1::Task& task,
                                                                 const StepCallback& on_steps) {
  const v1::AuditSpec& spec = task.spec();
  const v1::MembershipAudit& m = spec.membership();
  MEMAUDIT_ASSIGN_OR_RETURN(const data::LabeledExamples* data,
                            LoadAuditDataset(m.dataset(), "membership.dataset"));
  // The files must be the ones Submit hashed: a target replaced since then
  // would be scored against members it was not trained on.
  v1::TargetModelSpec now = m.target();
  MEMAUDIT_RETURN_IF_ERROR(ResolveTarget(&now, data->count, "membership.target"));
  if (now.content_hash() != m.target().content_hash()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "membership.target.content_hash: the model or members file changed since the audit was "
        "submitted (",
        m.target().content_hash(), " then, ", now.content_hash(), " now)"));
  }
  MEMAUDIT_ASSIGN_OR_RETURN(
      const std::vector<uint32_t> members,
      ReadMemberRows(m.target().members_path(), data->count, "membership.target.members_path"));

  const std::vector<uint32_t> pool = AuditPool(spec.seed(), data->count, m.dataset().pool_size());
  const std::vector<uint32_t> population =
      AuditPopulation(spec.seed(), data->count, pool.size(), m.population_size());
  std::vector<uint32_t> rows = pool;
  rows.insert(rows.end(), population.begin(), population.end());
  MEMAUDIT_ASSIGN_OR_RETURN(
      engine::ClassifierSignals signals,
      Engine().evaluate_torchscript_classifier(*data, m.target().torchscript_path(), rows,
                                               spec.resources().threads_per_task(),
                                               "membership.target.torchscript_path"));
  if (!on_steps(1, rows.size())) return absl::CancelledError("stopped");

  std::vector<bool> is_member(data->count, false);
  for (uint32_t r : members) is_member[r] = true;
  const auto pool_end = static_cast<std::ptrdiff_t>(pool.size());
  std::vector<v1::Observation> out(population.empty() ? 3 : 4);
  for (v1::Observation& o : out) {
    o.set_audit_id(task.audit_id());
    o.set_run(membership::TargetRun(m));
    o.set_point(membership::kFinalPoint);
  }
  out[0].set_signal(membership::kPhiSignal);
  out[0].mutable_values()->Add(signals.phi.begin(), signals.phi.begin() + pool_end);
  out[1].set_signal(membership::kLossSignal);
  out[1].mutable_values()->Add(signals.loss.begin(), signals.loss.begin() + pool_end);
  out[2].set_signal(membership::kMemberSignal);
  for (uint32_t row : pool) out[2].add_values(is_member[row] ? 1.0 : 0.0);
  if (!population.empty()) {
    out[3].set_signal(membership::kPopulationLossSignal);
    out[3].mutable_values()->Add(signals.loss.begin() + pool_end, signals.loss.end());
  }
  return out;
}

}  // namespace memaudit::worker
