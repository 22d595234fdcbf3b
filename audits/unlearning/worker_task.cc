#include "audits/unlearning/worker_task.h"

#include "absl/strings/str_cat.h"
#include "audits/unlearning/signals.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "services/worker/classifier_model.h"
#include "services/worker/engine_access.h"
#include "spec/dataset_facts.h"

namespace memaudit::worker {
namespace {

bool IsTarget(const v1::Task& task) { return task.role() == unlearning::kTargetRole; }

engine::UnlearningSeeds ToEngine(const unlearning::TrainingSeeds& s) {
  return {s.init, s.order, s.noise, s.dropout, s.sisa};
}

absl::StatusOr<engine::ReleasePolicy> ReleaseFor(const std::string& defense) {
  engine::ReleasePolicy p;
  if (defense == "none") {
    p.kind = engine::ReleaseKind::kFull;
  } else if (defense == "label_only") {
    p.kind = engine::ReleaseKind::kLabelOnly;
  } else if (defense == "temperature") {
    p.kind = engine::ReleaseKind::kTemperature;
  } else if (const uint32_t k = unlearning::TopK(defense); k > 0) {
    p.kind = engine::ReleaseKind::kTopK;
    p.top_k = k;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unlearning.defenses: unknown \"", defense, "\""));
  }
  return p;
}

}  // namespace

bool IsUnlearningTask(const v1::Task& task) {
  return task.spec().has_unlearning() &&
         (task.role() == unlearning::kShadowRole || task.role() == unlearning::kTargetRole);
}

absl::StatusOr<engine::UnlearningRunSpec> UnlearningRunSpecFor(const v1::Task& task,
                                                               const data::LabeledExamples& data) {
  const v1::AuditSpec& spec = task.spec();
  const v1::UnlearningAudit& u = spec.unlearning();
  if (u.dataset().pool_size() > data.count) {
    return absl::InvalidArgumentError(
        absl::StrCat("unlearning.dataset.pool_size: ", u.dataset().pool_size(), " exceeds the ",
                     data.count, " examples"));
  }
  const bool target = IsTarget(task);
  const v1::UnlearningSide& side = unlearning::SideSpec(u, target);
  if (task.index() >= side.originals()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "task.index: ", task.index(), " is outside the side's ", side.originals(), " originals"));
  }
  const std::vector<uint32_t> pool =
      AuditPool(DeriveSeed(spec.seed(), "unlearning/pool", 0), data.count, u.dataset().pool_size());
  auto rows = [&](const std::vector<uint32_t>& positions) {
    std::vector<uint32_t> out;
    out.reserve(positions.size());
    for (uint32_t p : positions) out.push_back(pool[p]);
    return out;
  };
  const unlearning::TaskPlan plan = unlearning::PlanTask(spec, target, task.index());

  engine::UnlearningRunSpec run;
  MEMAUDIT_ASSIGN_OR_RETURN(
      run.model, ClassifierModelOf(u.model(), u.dataset(), "unlearning.model.architecture"));

  const v1::UnlearningTraining& t = u.training();
  auto optimizer =
      engine::OptimizerFromName(t.optimizer(), t.learning_rate(), t.momentum(), t.weight_decay());
  if (!optimizer.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unlearning.training.optimizer: ", optimizer.status().message()));
  }
  run.optimizer = *optimizer;
  run.epochs = t.epochs();
  run.batch_size = t.batch_size();
  if (u.method() == "sisa") {
    run.method = engine::UnlearningMethod::kSisa;
    run.shards = u.sisa().shards();
    run.slices = u.sisa().slices();
  }
  if (u.has_dp_sgd()) {
    run.dp = true;
    run.noise_multiplier = u.dp_sgd().noise_multiplier();
    run.clip_norm = u.dp_sgd().clip_norm();
    run.dp_delta = u.dp_sgd().delta();
    run.target_epsilon = u.dp_sgd().target_epsilon();
  }
  for (const std::string& d : u.defenses()) {
    MEMAUDIT_ASSIGN_OR_RETURN(engine::ReleasePolicy p, ReleaseFor(d));
    run.releases.push_back(p);
  }
  run.train_rows = rows(plan.train);
  run.validation_rows = rows(plan.validation);
  run.seeds = ToEngine(unlearning::OriginalSeeds(spec.seed(), target, task.index()));
  const bool shared = u.seed_policy() != "independent";
  for (uint32_t j = 0; j < plan.children.size(); ++j) {
    const unlearning::ChildPlan& c = plan.children[j];
    engine::UnlearningChildSpec& child = run.children.emplace_back();
    child.removed = rows(c.removed);
    child.added = rows(c.added);
    child.queries = rows(c.positives);
    const std::vector<uint32_t> negatives = rows(c.negatives);
    child.queries.insert(child.queries.end(), negatives.begin(), negatives.end());
    child.validation = rows(c.validation);
    child.seeds = ToEngine(unlearning::ChildSeeds(spec, target, task.index(), j));
    child.shared_order = shared;
  }
  run.threads = spec.resources().threads_per_task();
  return run;
}

std::vector<v1::Observation> UnlearningObservations(const v1::Task& task,
                                                    const engine::UnlearningRunResult& result) {
  const v1::UnlearningAudit& u = task.spec().unlearning();
  const std::string side = IsTarget(task) ? unlearning::kTarget : unlearning::kShadow;
  std::vector<v1::Observation> out;
  auto add = [&](const std::string& point, const std::string& signal) -> v1::Observation& {
    v1::Observation& o = out.emplace_back();
    o.set_audit_id(task.audit_id());
    o.set_run(task.index());
    o.set_point(point);
    o.set_signal(signal);
    return o;
  };
  v1::Observation& summary = add(side, unlearning::kSummarySignal);
  summary.mutable_values()->Resize(unlearning::kSummaryValues, 0);
  summary.set_values(unlearning::kTrainAccuracy, result.train_accuracy);
  summary.set_values(unlearning::kTestAccuracy, result.test_accuracy);
  summary.set_values(unlearning::kModelsTrained, static_cast<double>(result.models_trained));
  summary.set_values(unlearning::kDpEpsilon, result.dp_epsilon);
  for (uint32_t j = 0; j < result.children.size(); ++j) {
    const engine::UnlearningChildResult& c = result.children[j];
    for (int d = 0; d < u.defenses_size() && d < static_cast<int>(c.original.size()); ++d) {
      v1::Observation& o =
          add(unlearning::ChildPoint(side, j), unlearning::PosteriorsSignal(u.defenses(d)));
      o.mutable_values()->Add(c.original[d].begin(), c.original[d].end());
      o.mutable_values()->Add(c.unlearned[d].begin(), c.unlearned[d].end());
    }
  }
  return out;
}

absl::StatusOr<std::vector<v1::Observation>> RunUnlearningTask(
    const v1::Task& task, const std::function<bool(uint64_t, uint64_t)>& on_steps) {
  const v1::UnlearningAudit& u = task.spec().unlearning();
  MEMAUDIT_ASSIGN_OR_RETURN(auto data, LoadAuditDataset(u.dataset(), "unlearning.dataset"));
  // An MNIST-layout directory's test split measures the original's test
  // accuracy; other sources have none (test_accuracy stays 0).
  const data::LabeledExamples* test = nullptr;
  const std::string& format = u.dataset().format();
  if (format.empty() || format == "fashion_mnist" || format == "idx") {
    const std::string dir =
        u.dataset().path().empty() ? data::kFashionMnistDir : u.dataset().path();
    absl::StatusOr<const data::LabeledExamples*> split = data::LoadMnistLayout(dir, "t10k");
    if (split.ok()) test = *split;
  }
  MEMAUDIT_ASSIGN_OR_RETURN(engine::UnlearningRunSpec run, UnlearningRunSpecFor(task, *data));
  const uint64_t batch = run.batch_size;
  MEMAUDIT_ASSIGN_OR_RETURN(auto result,
                            Engine().run_unlearning(*data, test, run, [&](uint64_t steps) {
                              // Examples seen, counting every step as a full batch (an upper
                              // bound).
                              return on_steps(steps, steps * batch);
                            }));
  return UnlearningObservations(task, result);
}

namespace {

class Unlearning final : public KindHandler {
 public:
  absl::StatusOr<std::vector<v1::Observation>> Run(const v1::Task& task,
                                                   const StepCallback& on_steps,
                                                   const ObservationSink&) const override {
    if (!IsUnlearningTask(task)) return UnknownRole(task);
    return RunUnlearningTask(task, on_steps);
  }
};

}  // namespace

}  // namespace memaudit::worker

namespace memaudit {

template <>
const worker::KindHandler& HandlerOfKind<worker::KindHandler, v1::AuditSpec::kUnlearning>() {
  static const worker::Unlearning handler;
  return handler;
}

}  // namespace memaudit
