#include "services/worker/task_runner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/seeding.h"
#include "engine/labeled_images.h"
#include "services/worker/exposure_task.h"
#include "services/worker/forgetting_task.h"
#include "services/worker/relational_task.h"
#include "services/worker/unlearning_task.h"

namespace memaudit::worker {
namespace {

// Examples seen after `steps` steps of minibatch SGD over `train_size`
// examples in batches of `batch_size`, the last batch of each epoch short.
uint64_t ExamplesAfter(uint64_t steps, uint64_t train_size, uint32_t batch_size) {
  const uint64_t per_epoch = engine::StepsPerEpoch(train_size, batch_size);
  if (per_epoch == 0) return 0;
  return steps / per_epoch * train_size +
         std::min<uint64_t>(steps % per_epoch * batch_size, train_size);
}

absl::StatusOr<std::vector<v1::Observation>> RunMembershipModel(
    const v1::Task& task, const ProgressCallback& on_progress) {
  const v1::AuditSpec& spec = task.spec();
  const v1::MembershipAudit& m = spec.membership();
  const std::string dir =
      m.dataset().path().empty() ? engine::kFashionMnistDir : m.dataset().path();
  auto data = engine::LoadMnistLayout(dir, "train");
  if (!data.ok()) return data.status();

  const std::vector<uint32_t> pool =
      AuditPool(spec.seed(), (*data)->count, m.dataset().pool_size());
  const std::vector<uint32_t> population =
      AuditPopulation(spec.seed(), (*data)->count, pool.size(), m.population_size());
  if (pool.size() + population.size() != m.dataset().pool_size() + m.population_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "membership.dataset.pool_size: ", m.dataset().pool_size(), " + population_size ",
        m.population_size(), " exceeds the ", (*data)->count, " examples in ", dir));
  }
  const KeepMatrix keep = BuildKeepMatrix(spec.seed(), m.reference_models(), pool.size());
  engine::ClassifierRunSpec run;
  run.hidden.assign(m.model().hidden().begin(), m.model().hidden().end());
  run.learning_rate = m.training().learning_rate();
  run.momentum = m.training().momentum();
  run.weight_decay = m.training().weight_decay();
  run.epochs = m.training().epochs();
  run.batch_size = m.training().batch_size();
  run.threads = spec.resources().threads_per_task();
  run.init_seed = DeriveSeed(spec.seed(), task.role() + "/init", task.index());
  run.order_seed = DeriveSeed(spec.seed(), task.role() + "/order", task.index());
  for (uint32_t j = 0; j < pool.size(); ++j) {
    if (keep.in(task.index(), j)) run.train_indices.push_back(pool[j]);
  }
  // Pool first, then RMIA's population: one pass measures both.
  run.eval_indices = pool;
  run.eval_indices.insert(run.eval_indices.end(), population.begin(), population.end());

  const uint64_t train_size = run.train_indices.size();
  auto result = engine::RunClassifier(**data, run, [&](uint64_t steps) {
    return on_progress({steps, ExamplesAfter(steps, train_size, run.batch_size)});
  });
  if (!result.ok()) return result.status();
  std::vector<v1::Observation> out(population.empty() ? 2 : 3);
  for (v1::Observation& o : out) {
    o.set_audit_id(task.audit_id());
    o.set_run(task.index());
    o.set_point("final");
  }
  const auto pool_end = static_cast<std::ptrdiff_t>(pool.size());
  out[0].set_signal("phi");
  out[0].mutable_values()->Add(result->phi.begin(), result->phi.begin() + pool_end);
  out[1].set_signal("loss");
  out[1].mutable_values()->Add(result->loss.begin(), result->loss.begin() + pool_end);
  if (!population.empty()) {
    out[2].set_signal("loss_population");
    out[2].mutable_values()->Add(result->loss.begin() + pool_end, result->loss.end());
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<v1::Observation>> RunTask(const v1::Task& task,
                                                     const ProgressCallback& on_progress,
                                                     const ObservationSink& send_early) {
  if (task.spec().has_membership() && task.role() == "reference_model") {
    return RunMembershipModel(task, on_progress);
  }
  if (task.spec().has_exposure()) {  // canary, baseline and reference models
    return RunExposureModel(task, [&](uint64_t steps, uint64_t examples) {
      return on_progress({steps, examples});
    });
  }
  if (task.spec().has_forgetting() && task.role() == "forgetting_trial") {
    return RunForgettingTrial(
        task,
        [&](uint64_t steps, uint64_t examples) {
          return on_progress({steps, examples});
        },
        send_early);
  }
  if (task.spec().has_relational() && task.role() == relational::kTaskRole) {
    return RunRelationalVariant(
        task,
        [&](uint64_t steps, uint64_t examples) {
          return on_progress({steps, examples});
        },
        send_early);
  }
  if (IsUnlearningTask(task)) {
    return RunUnlearningTask(task, [&](uint64_t steps, uint64_t examples) {
      return on_progress({steps, examples});
    });
  }
  return absl::UnimplementedError(
      absl::StrCat("this worker cannot run role \"", task.role(), "\" of this audit kind"));
}

bool Retryable(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kFailedPrecondition:
      return false;
    default:
      return true;
  }
}

}  // namespace memaudit::worker
