#include "services/worker/forgetting_task.h"

#include "absl/strings/str_cat.h"
#include "common/forgetting_signals.h"
#include "common/seeding.h"

namespace memaudit::worker {

absl::StatusOr<ForgettingData> ForgettingDataFor(const v1::AuditSpec& spec,
                                                 const engine::LabeledImages& data) {
  const v1::ForgettingAudit& f = spec.forgetting();
  const uint64_t drawn = static_cast<uint64_t>(f.dataset().pool_size()) + f.injected().size();
  if (drawn > data.count) {
    return absl::InvalidArgumentError(
        absl::StrCat("forgetting.dataset.pool_size: ", f.dataset().pool_size(), " + ",
                     f.injected().size(), " injected exceed the ", data.count, " examples"));
  }
  const std::vector<uint32_t> pool = AuditPool(DeriveSeed(spec.seed(), "forgetting/pool", 0),
                                               data.count, static_cast<uint32_t>(drawn));
  ForgettingData out;
  out.clean_rows.assign(pool.begin(), pool.begin() + f.dataset().pool_size());
  out.injected_rows.assign(pool.begin() + f.dataset().pool_size(), pool.end());
  SplitMix64 rng(DeriveSeed(spec.seed(), "forgetting/flip", 0));
  for (uint32_t row : out.injected_rows) {
    uint8_t label = data.labels[row];
    if (f.injected().flip_labels() && data.classes > 1) {
      label = static_cast<uint8_t>((label + 1 + rng.Uniform(data.classes - 1)) % data.classes);
    }
    out.injected_labels.push_back(label);
  }
  return out;
}

absl::StatusOr<engine::ForgettingRunSpec> ForgettingRunSpecFor(const v1::Task& task,
                                                               const engine::LabeledImages& data) {
  const v1::AuditSpec& spec = task.spec();
  const v1::ForgettingAudit& f = spec.forgetting();
  absl::StatusOr<ForgettingData> sets = ForgettingDataFor(spec, data);
  if (!sets.ok()) return sets.status();
  engine::ForgettingRunSpec run;
  run.clean_rows = std::move(sets->clean_rows);
  run.injected_rows = std::move(sets->injected_rows);
  run.injected_labels = std::move(sets->injected_labels);
  if (f.model().architecture() == "mlp") {
    run.hidden.assign(f.model().hidden().begin(), f.model().hidden().end());
  }
  const v1::ForgettingTraining& t = f.training();
  if (t.optimizer() == "sgd") {
    run.optimizer.kind = engine::OptimizerKind::kSgd;
  } else if (t.optimizer() == "momentum") {
    run.optimizer.kind = engine::OptimizerKind::kMomentum;
    run.optimizer.momentum = t.momentum();
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("forgetting.training.optimizer: unknown \"", t.optimizer(), "\""));
  }
  run.optimizer.learning_rate = t.learning_rate();
  run.optimizer.weight_decay = t.weight_decay();
  run.batch_size = t.batch_size();
  run.steps_before = t.steps_before_injection();
  if (f.strategy() == "inject") {
    run.strategy = engine::ForgettingStrategy::kInject;
  } else if (f.strategy() == "poison") {
    run.strategy = engine::ForgettingStrategy::kPoison;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("forgetting.strategy: unknown \"", f.strategy(), "\""));
  }
  run.repeats = f.repeats();
  run.dup_in_batch = f.inject_mode() == "dup_in_batch";
  run.paired = f.paired();
  run.eval_points.assign(f.eval_points().begin(), f.eval_points().end());
  run.replay = forgetting::Replays(f);
  // Init and data order derive from (seed, trial): a re-leased task
  // reproduces its signals bit for bit.
  run.init_seed = DeriveSeed(spec.seed(), task.role() + "/init", task.index());
  run.order_seed = DeriveSeed(spec.seed(), task.role() + "/order", task.index());
  run.threads = spec.resources().threads_per_task();
  return run;
}

std::vector<v1::Observation> ForgettingObservations(const v1::Task& task,
                                                    const engine::ForgettingRunResult& result) {
  std::vector<v1::Observation> out;
  auto add = [&](const std::string& point, const char* signal, const std::vector<double>& values) {
    v1::Observation& o = out.emplace_back();
    o.set_audit_id(task.audit_id());
    o.set_run(task.index());
    o.set_point(point);
    o.set_signal(signal);
    o.mutable_values()->Add(values.begin(), values.end());
  };
  add(forgetting::kCheckpointPoint, forgetting::kPhiCheckpoint, result.phi_checkpoint);
  add(forgetting::kCheckpointPoint, forgetting::kLossCheckpoint, result.loss_checkpoint);
  for (const engine::ForgettingPoint& p : result.points) {
    const std::string point = absl::StrCat(p.steps_since_injection);
    add(point, forgetting::kPhiInjected, p.phi_injected);
    add(point, forgetting::kPhiBaseline, p.phi_baseline);
    add(point, forgetting::kLossInjected, p.loss_injected);
    add(point, forgetting::kLossBaseline, p.loss_baseline);
    if (!p.phi_replay.empty()) add(point, forgetting::kPhiReplay, p.phi_replay);
  }
  return out;
}

absl::StatusOr<std::vector<v1::Observation>> RunForgettingTrial(
    const v1::Task& task, const std::function<bool(uint64_t, uint64_t)>& on_steps,
    const std::function<absl::Status(const std::vector<v1::Observation>&)>& send_early) {
  const v1::ForgettingAudit& f = task.spec().forgetting();
  const std::string dir =
      f.dataset().path().empty() ? engine::kFashionMnistDir : f.dataset().path();
  auto data = engine::LoadMnistLayout(dir, "train");
  if (!data.ok()) return data.status();
  absl::StatusOr<engine::ForgettingRunSpec> run = ForgettingRunSpecFor(task, **data);
  if (!run.ok()) return run.status();
  const uint64_t batch = run->batch_size;
  size_t sent = 0;  // observations already handed to send_early
  engine::ForgettingPointCallback on_point;
  if (send_early) {
    on_point = [&](const engine::ForgettingRunResult& so_far) {
      std::vector<v1::Observation> all = ForgettingObservations(task, so_far);
      std::vector<v1::Observation> fresh(all.begin() + sent, all.end());
      // A failed early send is not fatal: the final stream carries everything.
      if (send_early(fresh).ok()) sent = all.size();
    };
  }
  auto result = engine::RunForgetting(
      **data, *run,
      [&](uint64_t steps) {
        // Examples seen, counting every step as a full batch (an upper bound).
        return on_steps(steps, steps * batch);
      },
      on_point);
  if (!result.ok()) return result.status();
  return ForgettingObservations(task, *result);
}

}  // namespace memaudit::worker
