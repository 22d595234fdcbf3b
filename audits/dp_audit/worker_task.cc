#include "audits/dp_audit/worker_task.h"

#include "absl/strings/str_cat.h"
#include "audits/dp_audit/signals.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "services/worker/classifier_model.h"
#include "services/worker/engine_access.h"
#include "spec/dataset_facts.h"

namespace memaudit::worker {

absl::StatusOr<engine::DpAuditRunSpec> DpAuditRunSpecFor(const v1::Task& task,
                                                         const data::LabeledExamples& data) {
  const v1::AuditSpec& spec = task.spec();
  const v1::DpAudit& d = spec.dp_audit();
  if (d.dataset().pool_size() > data.count) {
    return absl::InvalidArgumentError(
        absl::StrCat("dp_audit.dataset.pool_size: ", d.dataset().pool_size(), " exceeds the ",
                     data.count, " examples"));
  }
  if (task.index() >= d.runs()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task.index: ", task.index(), " is outside the audit's ", d.runs(), " runs"));
  }
  if (data.classes < 2) {
    return absl::InvalidArgumentError("dp_audit.dataset: needs at least 2 classes");
  }
  const uint32_t run = task.index();
  engine::DpAuditRunSpec out;
  MEMAUDIT_ASSIGN_OR_RETURN(
      out.model, ClassifierModelOf(d.model(), d.dataset(), "dp_audit.model.architecture"));
  const v1::TrainingSpec& t = d.training();
  // TrainingSpec's "sgd" takes momentum when it is set, as a membership
  // audit's does: the same recipe trains the same way in both kinds.
  const std::string name = t.optimizer() == "sgd" && t.momentum() > 0 ? "momentum" : t.optimizer();
  auto optimizer =
      engine::OptimizerFromName(name, t.learning_rate(), t.momentum(), t.weight_decay());
  if (!optimizer.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("dp_audit.training.optimizer: ", optimizer.status().message()));
  }
  out.optimizer = *optimizer;
  out.epochs = t.epochs();
  out.batch_size = t.batch_size();
  if (d.has_dp_sgd()) {
    out.dp = true;
    out.noise_multiplier = d.dp_sgd().noise_multiplier();
    out.clip_norm = d.dp_sgd().clip_norm();
    out.dp_delta = d.delta();
    out.target_epsilon = d.dp_sgd().target_epsilon();
  }
  // The pool, canaries first (audits/dp_audit/signals.h); every run shares
  // the canaries and the training set and draws its own inclusion. The
  // team's own canaries are the dataset's first rows, as labelled, and the
  // pool's other positions are drawn from the rows after them.
  const uint32_t first = dp_audit::FirstTrainingPosition(d);
  const bool team = dp_audit::UsesInputCanaries(d) && dp_audit::TeamCanaries(d);
  const uint32_t offset = team ? first : 0;
  std::vector<uint32_t> pool = AuditPool(DeriveSeed(spec.seed(), "dp_audit/pool", 0),
                                         data.count - offset, d.dataset().pool_size() - offset);
  if (team) {
    for (uint32_t& row : pool) row += offset;
    std::vector<uint32_t> own(first);
    for (uint32_t i = 0; i < first; ++i) own[i] = i;
    pool.insert(pool.begin(), own.begin(), own.end());
  }
  out.train_rows.assign(pool.begin() + first, pool.end());
  out.included = dp_audit::Included(spec, run);
  out.gradient_canaries = !dp_audit::UsesInputCanaries(d);
  out.scaled_logit_score = d.input_score() == dp_audit::kScaledLogitScore;
  if (team) {
    for (uint32_t i = 0; i < first; ++i) {
      out.canary_rows.push_back(i);
      out.canary_labels.push_back(data.labels[i]);
    }
  } else if (!out.gradient_canaries) {
    // Mislabelled: each canary trains with a seeded label other than its own.
    SplitMix64 labels(DeriveSeed(spec.seed(), "dp_audit/labels", 0));
    for (uint32_t i = 0; i < first; ++i) {
      const uint32_t row = pool[i];
      out.canary_rows.push_back(row);
      const int64_t own = data.labels[row];
      out.canary_labels.push_back(
          (own + 1 + static_cast<int64_t>(labels.Uniform(data.classes - 1))) % data.classes);
    }
  }
  out.init_seed = dp_audit::RunSeed(spec.seed(), "init", run);
  out.order_seed = dp_audit::RunSeed(spec.seed(), "order", run);
  out.noise_seed = dp_audit::RunSeed(spec.seed(), "noise", run);
  out.dropout_seed = dp_audit::RunSeed(spec.seed(), "dropout", run);
  out.canary_seed = DeriveSeed(spec.seed(), "dp_audit/coordinates", 0);
  out.threads = spec.resources().threads_per_task();
  return out;
}

std::vector<v1::Observation> DpAuditObservations(const v1::Task& task,
                                                 const engine::DpAuditRunResult& result) {
  std::vector<v1::Observation> out(2);
  for (v1::Observation& o : out) {
    o.set_audit_id(task.audit_id());
    o.set_run(task.index());
    o.set_point(dp_audit::kPoint);
  }
  out[0].set_signal(dp_audit::kScores);
  out[0].mutable_values()->Add(result.scores.begin(), result.scores.end());
  out[1].set_signal(dp_audit::kSummary);
  out[1].mutable_values()->Resize(dp_audit::kSummaryValues, 0);
  out[1].set_values(dp_audit::kTrainAccuracy, result.train_accuracy);
  out[1].set_values(dp_audit::kAccountantEpsilon, result.dp_epsilon);
  out[1].set_values(dp_audit::kNoiseMultiplier, result.noise_multiplier);
  return out;
}

namespace {

class DpAuditKind final : public KindHandler {
 public:
  absl::StatusOr<std::vector<v1::Observation>> Run(const v1::Task& task,
                                                   const StepCallback& on_steps,
                                                   const ObservationSink&) const override {
    if (!task.spec().has_dp_audit() || task.role() != dp_audit::kRunRole) {
      return UnknownRole(task);
    }
    const v1::DpAudit& d = task.spec().dp_audit();
    MEMAUDIT_ASSIGN_OR_RETURN(auto data, LoadAuditDataset(d.dataset(), "dp_audit.dataset"));
    MEMAUDIT_ASSIGN_OR_RETURN(engine::DpAuditRunSpec run, DpAuditRunSpecFor(task, *data));
    const uint64_t batch = run.batch_size;
    MEMAUDIT_ASSIGN_OR_RETURN(auto result, Engine().run_dp_audit(*data, run, [&](uint64_t steps) {
      return on_steps(steps, steps * batch);
    }));
    return DpAuditObservations(task, result);
  }
};

}  // namespace

}  // namespace memaudit::worker

namespace memaudit {

template <>
const worker::KindHandler& HandlerOfKind<worker::KindHandler, v1::AuditSpec::kDpAudit>() {
  static const worker::DpAuditKind handler;
  return handler;
}

}  // namespace memaudit
