#include <algorithm>

#include "absl/strings/str_cat.h"
#include "audits/membership/signals.h"
#include "audits/membership/tasks.h"
#include "audits/membership/worker_documents.h"
#include "audits/membership/worker_target.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "engine/classifier_run.h"
#include "services/worker/classifier_model.h"
#include "services/worker/engine_access.h"
#include "services/worker/kind_handler.h"
#include "services/worker/task_progress.h"
#include "spec/dataset_facts.h"

namespace memaudit::worker {
namespace {

// The spec's model and training as the engine's run recipe (seeds and rows
// are set per model). Logistic regression and MLPs train as ensembles; other
// models one after another.
absl::StatusOr<engine::ClassifierRunSpec> RecipeOf(const v1::MembershipAudit& m) {
  MEMAUDIT_ASSIGN_OR_RETURN(
      engine::ModelSpec model,
      ClassifierModelOf(m.model(), m.dataset(), "membership.model.architecture"));
  engine::ClassifierRunSpec recipe;
  recipe.hidden = model.hidden;
  if (model.kind != engine::ModelKind::kLogReg && model.kind != engine::ModelKind::kMlp) {
    recipe.model = std::move(model);
  }
  return recipe;
}

// Trains the task's models (audits/membership/tasks.h) in ensembles of
// equal-size training sets: with an odd pool, even and odd models' halves
// differ by one row, and only unpadded members are exact. Each model's
// observations have run = its index, whatever the packing.
absl::StatusOr<std::vector<v1::Observation>> RunMembershipModels(const v1::Task& task,
                                                                 const StepCallback& on_steps) {
  const v1::AuditSpec& spec = task.spec();
  const v1::MembershipAudit& m = spec.membership();
  MEMAUDIT_ASSIGN_OR_RETURN(const data::LabeledExamples* data,
                            LoadAuditDataset(m.dataset(), "membership.dataset"));

  const std::vector<uint32_t> pool = AuditPool(spec.seed(), data->count, m.dataset().pool_size());
  const std::vector<uint32_t> population =
      AuditPopulation(spec.seed(), data->count, pool.size(), m.population_size());
  if (pool.size() + population.size() != m.dataset().pool_size() + m.population_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "membership.dataset.pool_size: ", m.dataset().pool_size(), " + population_size ",
        m.population_size(), " exceeds the dataset's ", data->count, " examples"));
  }
  const membership::ModelRange models = membership::TaskModels(spec, task.index());
  if (models.count == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("task.index: ", task.index(), " is past the audit's models"));
  }
  const KeepMatrix keep = BuildKeepMatrix(spec.seed(), m.reference_models(), pool.size());
  MEMAUDIT_ASSIGN_OR_RETURN(engine::ClassifierRunSpec recipe, RecipeOf(m));
  recipe.learning_rate = m.training().learning_rate();
  recipe.momentum = m.training().momentum();
  recipe.weight_decay = m.training().weight_decay();
  recipe.epochs = m.training().epochs();
  recipe.batch_size = m.training().batch_size();
  recipe.threads = spec.resources().threads_per_task();
  // Pool first, then RMIA's population: one pass measures both.
  recipe.eval_indices = pool;
  recipe.eval_indices.insert(recipe.eval_indices.end(), population.begin(), population.end());

  // Seeds derive from the model index (role "reference_model"), as when each
  // model was its own task, so packing leaves every model's seeds alone.
  std::vector<std::vector<engine::ClassifierRunSpec>> groups;
  std::vector<std::vector<uint32_t>> group_models;
  for (uint32_t i = models.first; i < models.end(); ++i) {
    engine::ClassifierRunSpec run = recipe;
    run.init_seed = membership::ModelSeed(spec.seed(), "init", i);
    run.order_seed = membership::ModelSeed(spec.seed(), "order", i);
    for (uint32_t j = 0; j < pool.size(); ++j) {
      if (keep.in(i, j)) run.train_indices.push_back(pool[j]);
    }
    size_t g = 0;
    while (g < groups.size() && groups[g][0].train_indices.size() != run.train_indices.size()) ++g;
    if (g == groups.size()) {
      groups.emplace_back();
      group_models.emplace_back();
    }
    groups[g].push_back(std::move(run));
    group_models[g].push_back(i);
  }

  // Progress counts model steps, as the planner does: an ensemble step of K
  // models is K steps and K batches of examples.
  std::vector<v1::Observation> out;
  TrainingProgress before;
  for (size_t g = 0; g < groups.size(); ++g) {
    const uint64_t members = groups[g].size();
    const uint64_t train_size = groups[g][0].train_indices.size();
    // An ensemble reports ensemble steps (each advances every member);
    // models trained one after another report their steps summed.
    const uint64_t per_step = recipe.model.has_value() ? 1 : members;
    MEMAUDIT_ASSIGN_OR_RETURN(
        auto results, Engine().run_classifiers(*data, groups[g], [&](uint64_t steps) {
          return on_steps(
              before.steps + steps * per_step,
              before.examples + ExamplesAfter(steps, train_size, recipe.batch_size) * per_step);
        }));
    const uint64_t steps = results.front().steps;
    before.steps += steps * members;
    before.examples += ExamplesAfter(steps, train_size, recipe.batch_size) * members;
    for (size_t k = 0; k < results.size(); ++k) {
      const engine::ClassifierRunResult& result = results[k];
      const size_t first = out.size();
      out.resize(first + (population.empty() ? 2 : 3));
      for (size_t o = first; o < out.size(); ++o) {
        out[o].set_audit_id(task.audit_id());
        out[o].set_run(group_models[g][k]);
        out[o].set_point(membership::kFinalPoint);
      }
      const auto pool_end = static_cast<std::ptrdiff_t>(pool.size());
      out[first].set_signal(membership::kPhiSignal);
      out[first].mutable_values()->Add(result.phi.begin(), result.phi.begin() + pool_end);
      out[first + 1].set_signal(membership::kLossSignal);
      out[first + 1].mutable_values()->Add(result.loss.begin(), result.loss.begin() + pool_end);
      if (!population.empty()) {
        out[first + 2].set_signal(membership::kPopulationLossSignal);
        out[first + 2].mutable_values()->Add(result.loss.begin() + pool_end, result.loss.end());
      }
    }
  }
  return out;
}

class Membership final : public KindHandler {
 public:
  absl::StatusOr<std::vector<v1::Observation>> Run(const v1::Task& task,
                                                   const StepCallback& on_steps,
                                                   const ObservationSink&) const override {
    const bool documents = task.spec().membership().has_documents();
    if (task.role() == membership::kTargetRole) {
      return documents ? RunDocumentsTarget(task, on_steps) : RunMembershipTarget(task, on_steps);
    }
    if (task.role() != membership::kModelRole) return UnknownRole(task);
    if (documents) return RunDocumentModels(task, on_steps);
    return RunMembershipModels(task, on_steps);
  }
};

}  // namespace

}  // namespace memaudit::worker

namespace memaudit {

template <>
const worker::KindHandler& HandlerOfKind<worker::KindHandler, v1::AuditSpec::kMembership>() {
  static const worker::Membership handler;
  return handler;
}

}  // namespace memaudit
