#include "audits/relational/worker_task.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "audits/relational/signals.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "services/worker/engine_access.h"
#include "services/worker/lm_tokenizer.h"
#include "services/worker/task_progress.h"

namespace memaudit::worker {
namespace {

v1::Observation& Add(const v1::Task& task, const std::string& point, const char* signal,
                     std::vector<v1::Observation>* out) {
  v1::Observation& o = out->emplace_back();
  o.set_audit_id(task.audit_id());
  o.set_run(task.index());
  o.set_point(point);
  o.set_signal(signal);
  return o;
}

void AddValues(const v1::Task& task, const std::string& point, const char* signal,
               const std::vector<double>& values, std::vector<v1::Observation>* out) {
  Add(task, point, signal, out).mutable_values()->Add(values.begin(), values.end());
}

void AddLines(const v1::Task& task, const std::string& point, const char* signal,
              const std::vector<std::string>& lines, std::vector<v1::Observation>* out) {
  std::vector<double> bytes;
  relational::AppendLines(lines, &bytes);
  AddValues(task, point, signal, bytes, out);
}

}  // namespace

absl::StatusOr<engine::PhoneBookRunSpec> PhoneBookRunSpecFor(const v1::Task& task) {
  const v1::AuditSpec& spec = task.spec();
  const v1::PhoneBookSpec& p = spec.relational().phone_book();
  const uint32_t runs = relational::Runs(spec.relational());
  if (task.index() >= runs) {
    return absl::InvalidArgumentError(absl::StrCat("relational.phone_book.units_sweep: task ",
                                                   task.index(), " is outside the ", runs,
                                                   " variants x replicates"));
  }
  const uint32_t variant = relational::VariantOfRun(spec.relational(), task.index());
  const uint64_t seed = relational::ReplicateSeed(
      spec.seed(), relational::ReplicateOfRun(spec.relational(), task.index()));
  engine::PhoneBookRunSpec run;
  run.records = p.records();
  run.validation_records = p.validation_records();
  run.tmpl = p.template_();
  run.digits = p.digits();
  // The records are spelled with the template's text and digits.
  const std::string record_chars =
      absl::StrCat(absl::StrReplaceAll(p.template_(), {{relational::kNamePlaceholder, ""},
                                                       {relational::kNumberPlaceholder, ""}}),
                   "0123456789");
  MEMAUDIT_RETURN_IF_ERROR(
      SetLanguageModel(p.model(), "relational.phone_book.model", record_chars, &run));
  run.units = relational::VariantUnits(p, variant);
  // The LM recipes carry no momentum field: "momentum" keeps the engine's 0.9.
  auto optimizer =
      engine::OptimizerFromName(p.training().optimizer(), p.training().learning_rate(),
                                engine::OptimizerSpec{}.momentum, p.training().weight_decay());
  if (!optimizer.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("relational.phone_book.training.optimizer: ", optimizer.status().message()));
  }
  run.optimizer = *optimizer;
  run.batch_size = p.training().batch_size();
  run.epochs = p.training().epochs();
  // One phone book for every variant of a replicate, so widths are compared
  // on the same records; init, order and dropout are the variant's own. Both
  // derive from the replicate's seed, so a re-leased task retrains bit for
  // bit.
  run.book_seed = DeriveSeed(seed, "relational/phone_book", 0);
  run.model_seed = DeriveSeed(seed, task.role(), variant);
  run.threads = spec.resources().threads_per_task();
  return run;
}

absl::StatusOr<engine::LinearRelationalRunSpec> LinearRunSpecFor(const v1::Task& task) {
  const v1::AuditSpec& spec = task.spec();
  const v1::LinearRelationalSpec& l = spec.relational().linear();
  const uint32_t runs = relational::Runs(spec.relational());
  if (task.index() >= runs) {
    return absl::InvalidArgumentError(absl::StrCat("relational.linear.key_dims: task ",
                                                   task.index(), " is outside the ", runs,
                                                   " variants x replicates"));
  }
  const uint32_t variant = relational::VariantOfRun(spec.relational(), task.index());
  const uint64_t seed = relational::ReplicateSeed(
      spec.seed(), relational::ReplicateOfRun(spec.relational(), task.index()));
  engine::LinearRelationalRunSpec run;
  run.samples = l.samples();
  run.label_dims = l.label_dims();
  run.key_dims = l.key_dims(variant);
  run.steps.assign(l.steps().begin(), l.steps().end());
  run.step_fraction = l.step_fraction();
  // Shared labels pair the d_x variants: they differ only in the key x.
  run.label_seed = DeriveSeed(seed, "relational/labels", 0);
  run.key_seed = DeriveSeed(seed, "relational/keys", variant);
  run.threads = spec.resources().threads_per_task();
  return run;
}

std::vector<v1::Observation> PhoneBookObservations(const v1::Task& task,
                                                   const engine::PhoneBookRunResult& result) {
  std::vector<v1::Observation> out;
  std::vector<std::string> train, val;
  for (const engine::PhoneBookRecord& r : result.book.train) train.push_back(r.number);
  for (const engine::PhoneBookRecord& r : result.book.validation) val.push_back(r.number);
  AddLines(task, relational::kTruthPoint, relational::kNumbersTrain, train, &out);
  AddLines(task, relational::kTruthPoint, relational::kNumbersVal, val, &out);
  for (const engine::PhoneBookEpoch& e : result.epochs) {
    const std::string point = absl::StrCat(e.epoch);
    AddLines(task, point, relational::kPredictedTrain, e.predicted_train, &out);
    AddLines(task, point, relational::kPredictedVal, e.predicted_val, &out);
    AddValues(task, point, relational::kCleanTrain, {e.clean_train}, &out);
    AddValues(task, point, relational::kCleanVal, {e.clean_val}, &out);
  }
  return out;
}

std::vector<v1::Observation> LinearObservations(const v1::Task& task,
                                                const engine::LinearRelationalRunResult& result) {
  std::vector<v1::Observation> out;
  AddValues(task, relational::kTruthPoint, relational::kTargetTrain, result.target_train, &out);
  AddValues(task, relational::kTruthPoint, relational::kTargetVal, result.target_val, &out);
  for (const engine::LinearRelationalPoint& p : result.points) {
    const std::string point = absl::StrCat(p.step);
    AddValues(task, point, relational::kRecoveredTrain, p.recovered_train, &out);
    AddValues(task, point, relational::kRecoveredVal, p.recovered_val, &out);
    AddValues(task, point, relational::kCleanTrain, {p.mse_train}, &out);
    AddValues(task, point, relational::kCleanVal, {p.mse_val}, &out);
  }
  return out;
}

absl::StatusOr<std::vector<v1::Observation>> RunRelationalVariant(
    const v1::Task& task, const std::function<bool(uint64_t, uint64_t)>& on_steps,
    const std::function<absl::Status(const std::vector<v1::Observation>&)>& send_early) {
  const v1::RelationalAudit& r = task.spec().relational();
  if (r.has_linear()) {
    MEMAUDIT_ASSIGN_OR_RETURN(engine::LinearRelationalRunSpec run, LinearRunSpecFor(task));
    EarlySender<engine::LinearRelationalRunResult> early(
        [&](const engine::LinearRelationalRunResult& so_far) {
          return LinearObservations(task, so_far);
        },
        send_early);
    bool stopped = false;
    MEMAUDIT_ASSIGN_OR_RETURN(
        auto result,
        Engine().run_linear_relational(run, [&](const engine::LinearRelationalRunResult& so_far) {
          // The closed form jumps to each step: progress is the step reached,
          // examples are steps x N (full-batch GD).
          const uint64_t step = so_far.points.back().step;
          if (!stopped && !on_steps(step, step * run.samples)) stopped = true;
          if (!stopped) early(so_far);
        }));
    if (stopped) return absl::CancelledError("stopped by the worker");
    return LinearObservations(task, result);
  }
  if (!r.has_phone_book()) {
    return absl::InvalidArgumentError("relational.model: set one of phone_book, linear");
  }
  MEMAUDIT_ASSIGN_OR_RETURN(engine::PhoneBookRunSpec run, PhoneBookRunSpecFor(task));
  EarlySender<engine::PhoneBookRunResult> early(
      [&](const engine::PhoneBookRunResult& so_far) { return PhoneBookObservations(task, so_far); },
      send_early);
  const uint64_t records = run.records;
  const uint64_t batch = run.batch_size;
  MEMAUDIT_ASSIGN_OR_RETURN(
      auto result,
      Engine().run_phone_book(
          run,
          [&](uint64_t steps) { return on_steps(steps, ExamplesAfter(steps, records, batch)); },
          [&](const engine::PhoneBookRunResult& so_far) { early(so_far); }));
  return PhoneBookObservations(task, result);
}

namespace {

class Relational final : public KindHandler {
 public:
  absl::StatusOr<std::vector<v1::Observation>> Run(
      const v1::Task& task, const StepCallback& on_steps,
      const ObservationSink& send_early) const override {
    if (task.role() != relational::kTaskRole) return UnknownRole(task);
    return RunRelationalVariant(task, on_steps, send_early);
  }
};

}  // namespace

}  // namespace memaudit::worker

namespace memaudit {

template <>
const worker::KindHandler& HandlerOfKind<worker::KindHandler, v1::AuditSpec::kRelational>() {
  static const worker::Relational handler;
  return handler;
}

}  // namespace memaudit
