#include "audits/membership/worker_documents.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "audits/membership/signals.h"
#include "audits/membership/tasks.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "engine/optimizer_spec.h"
#include "services/worker/engine_access.h"
#include "services/worker/lm_tokenizer.h"
#include "services/worker/task_progress.h"
#include "spec/dataset_facts.h"

namespace memaudit::worker {
namespace {

// The audit's documents and recipe; `models` of them to train (none for a
// given target).
absl::StatusOr<engine::LmDocumentsRunSpec> RunSpecOf(const v1::AuditSpec& spec,
                                                     membership::ModelRange models) {
  const v1::MembershipAudit& m = spec.membership();
  const v1::MembershipDocuments& d = m.documents();
  engine::LmDocumentsRunSpec run;
  run.corpus_path = d.corpus().path();
  run.corpus_text = d.corpus().text();
  run.max_corpus_chars = d.corpus().max_chars();
  MEMAUDIT_RETURN_IF_ERROR(SetLanguageModel(d.model(), "membership.documents.model", "\n", &run));
  // The LM recipes carry no momentum field: "momentum" keeps the engine's 0.9.
  auto optimizer =
      engine::OptimizerFromName(d.training().optimizer(), d.training().learning_rate(),
                                engine::OptimizerSpec{}.momentum, d.training().weight_decay());
  if (!optimizer.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("membership.documents.training.optimizer: ", optimizer.status().message()));
  }
  run.optimizer = *optimizer;
  run.batch_size = d.training().batch_size();
  run.epochs = d.training().epochs();
  run.sequence_tokens = d.sequence_tokens();
  run.pool_seed = spec.seed();
  run.pool_size = d.pool_size();
  run.population_size = m.population_size();
  run.threads = spec.resources().threads_per_task();
  // Seeds derive from the model index, as for a dataset's models, so a
  // model's bits do not depend on which task trains it.
  const KeepMatrix keep = BuildKeepMatrix(spec.seed(), m.reference_models(), d.pool_size());
  for (uint32_t i = models.first; i < models.end(); ++i) {
    engine::LmDocumentModel& model = run.models.emplace_back();
    model.init_seed = membership::ModelSeed(spec.seed(), "init", i);
    model.order_seed = membership::ModelSeed(spec.seed(), "order", i);
    model.dropout_seed = membership::ModelSeed(spec.seed(), "dropout", i);
    for (uint32_t j = 0; j < d.pool_size(); ++j) model.in_pool.push_back(keep.in(i, j) ? 1 : 0);
  }
  return run;
}

// A model's observations: phi, loss, the population's loss and the text
// signals, as run `run`.
void AppendObservations(const std::string& audit_id, uint32_t run,
                        const engine::LmDocumentScores& scores, std::vector<v1::Observation>* out) {
  std::vector<double> phi, loss, zlib, min_k, min_k_plus, population;
  for (const engine::LmMembershipScores& s : scores.pool) {
    phi.push_back(s.loss);
    loss.push_back(-s.loss);
    zlib.push_back(s.zlib);
    min_k.push_back(s.min_k);
    min_k_plus.push_back(s.min_k_plus);
  }
  for (const engine::LmMembershipScores& s : scores.population) population.push_back(-s.loss);
  const auto add = [&](const char* signal, const std::vector<double>& values) {
    v1::Observation& o = out->emplace_back();
    o.set_audit_id(audit_id);
    o.set_run(run);
    o.set_point(membership::kFinalPoint);
    o.set_signal(signal);
    o.mutable_values()->Add(values.begin(), values.end());
  };
  add(membership::kPhiSignal, phi);
  add(membership::kLossSignal, loss);
  if (!population.empty()) add(membership::kPopulationLossSignal, population);
  add(membership::kZlibSignal, zlib);
  add(membership::kMinKSignal, min_k);
  add(membership::kMinKPlusSignal, min_k_plus);
}

// The engine's errors name its own fields; the spec's live under documents.
absl::Status InDocuments(const absl::Status& status) {
  if (!absl::IsInvalidArgument(status)) return status;
  return absl::InvalidArgumentError(absl::StrCat("membership.documents.", status.message()));
}

}  // namespace

absl::StatusOr<std::vector<v1::Observation>> RunDocumentModels(const v1::Task& task,
                                                               const StepCallback& on_steps) {
  const v1::AuditSpec& spec = task.spec();
  const membership::ModelRange models = membership::TaskModels(spec, task.index());
  if (models.count == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("task.index: ", task.index(), " is past the audit's models"));
  }
  MEMAUDIT_ASSIGN_OR_RETURN(const engine::LmDocumentsRunSpec run, RunSpecOf(spec, models));
  const uint64_t batch = run.batch_size;
  absl::StatusOr<engine::LmDocumentsRunResult> result = Engine().run_lm_documents(
      run, [&](uint64_t steps) { return on_steps(steps, steps * batch); });
  if (!result.ok()) return InDocuments(result.status());
  std::vector<v1::Observation> out;
  for (size_t k = 0; k < result->models.size(); ++k) {
    AppendObservations(task.audit_id(), models.first + static_cast<uint32_t>(k), result->models[k],
                       &out);
  }
  return out;
}

}  // namespace memaudit::worker

namespace memaudit::worker {

absl::StatusOr<std::vector<v1::Observation>> RunDocumentsTarget(const v1::Task& task,
                                                                const StepCallback& on_steps) {
  const v1::AuditSpec& spec = task.spec();
  const v1::MembershipAudit& m = spec.membership();
  // The files must be the ones Submit hashed: a model or text replaced since
  // would be scored against members it was not trained on.
  v1::TargetModelSpec now = m.target();
  MEMAUDIT_ASSIGN_OR_RETURN(std::string members_text,
                            ResolveDocumentsTarget(&now, "membership.target"));
  if (now.content_hash() != m.target().content_hash()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "membership.target.content_hash: the model or members text changed since the audit was "
        "submitted (",
        m.target().content_hash(), " then, ", now.content_hash(), " now)"));
  }
  MEMAUDIT_ASSIGN_OR_RETURN(engine::LmDocumentsRunSpec run, RunSpecOf(spec, {}));
  run.given_model_path = m.target().torchscript_path();
  run.members_text = std::move(members_text);
  absl::StatusOr<engine::LmDocumentsRunResult> result = Engine().run_lm_documents(run, nullptr);
  if (!result.ok()) return InDocuments(result.status());
  std::vector<v1::Observation> out;
  const uint32_t target = membership::TargetRun(m);
  AppendObservations(task.audit_id(), target, result->models.at(0), &out);
  v1::Observation& members = out.emplace_back();
  members.set_audit_id(task.audit_id());
  members.set_run(target);
  members.set_point(membership::kFinalPoint);
  members.set_signal(membership::kMemberSignal);
  members.mutable_values()->Add(result->members.begin(), result->members.end());
  if (!on_steps(1, 0)) return absl::CancelledError("stopped");
  return out;
}

}  // namespace memaudit::worker
