#include "audits/forgetting/worker_task.h"

#include "absl/strings/str_cat.h"
#include "audits/forgetting/signals.h"
#include "audits/forgetting/worker_task_construction.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "engine/forgetting_lm_run.h"
#include "services/worker/classifier_model.h"
#include "services/worker/engine_access.h"
#include "services/worker/lm_tokenizer.h"
#include "services/worker/task_progress.h"
#include "spec/dataset_facts.h"

namespace memaudit::worker {

namespace {

// Which optimizers each Dp kind allows is the validator's to say.
absl::StatusOr<engine::OptimizerSpec> OptimizerFor(const v1::ForgettingTraining& t) {
  auto o =
      engine::OptimizerFromName(t.optimizer(), t.learning_rate(), t.momentum(), t.weight_decay());
  if (!o.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("forgetting.training.optimizer: ", o.status().message()));
  }
  return o;
}

// logreg or an MLP: their widths (the engine stacks them); any other
// classifier as its own model.
absl::Status SetModel(const v1::ForgettingAudit& f, std::vector<uint32_t>* hidden,
                      std::optional<engine::ModelSpec>* own) {
  MEMAUDIT_ASSIGN_OR_RETURN(
      engine::ModelSpec model,
      ClassifierModelOf(f.model(), f.dataset(), "forgetting.model.architecture"));
  *hidden = model.kind == engine::ModelKind::kMlp ? model.hidden : std::vector<uint32_t>{};
  if (model.kind != engine::ModelKind::kLogReg && model.kind != engine::ModelKind::kMlp) {
    *own = std::move(model);
  }
  return absl::OkStatus();
}

absl::StatusOr<engine::ForgettingSelection> SelectionFor(const std::string& s) {
  if (s.empty() || s == "random") return engine::ForgettingSelection::kRandom;
  if (s == "easy") return engine::ForgettingSelection::kEasy;
  if (s == "medium") return engine::ForgettingSelection::kMedium;
  if (s == "hard") return engine::ForgettingSelection::kHard;
  return absl::InvalidArgumentError(
      absl::StrCat("forgetting.injected.selection: unknown \"", s, "\""));
}

}  // namespace

absl::StatusOr<ForgettingData> ForgettingDataFor(const v1::AuditSpec& spec, uint32_t trial,
                                                 const data::LabeledExamples& data,
                                                 const std::function<bool(uint64_t)>& on_step) {
  const v1::ForgettingAudit& f = spec.forgetting();
  MEMAUDIT_ASSIGN_OR_RETURN(engine::ForgettingSelection selection,
                            SelectionFor(f.injected().selection()));
  const bool by_loss = selection != engine::ForgettingSelection::kRandom;
  const uint32_t candidates = by_loss ? f.injected().candidates() : f.injected().size();
  if (candidates < f.injected().size()) {
    return absl::InvalidArgumentError(absl::StrCat("forgetting.injected.candidates: ", candidates,
                                                   " < injected.size ", f.injected().size()));
  }
  const uint64_t drawn = static_cast<uint64_t>(f.dataset().pool_size()) + candidates;
  if (drawn > data.count) {
    return absl::InvalidArgumentError(absl::StrCat(
        by_loss ? "forgetting.injected.candidates: " : "forgetting.dataset.pool_size: ",
        f.dataset().pool_size(), " + ", candidates, " exceed the ", data.count, " examples"));
  }
  // A prefix of one seeded permutation: D, then the candidates (random: Dp),
  // so random selection draws exactly the rows it always did.
  const std::vector<uint32_t> pool = AuditPool(DeriveSeed(spec.seed(), "forgetting/pool", trial),
                                               data.count, static_cast<uint32_t>(drawn));
  ForgettingData out;
  out.clean_rows.assign(pool.begin(), pool.begin() + f.dataset().pool_size());
  const std::vector<uint32_t> candidate_rows(pool.begin() + f.dataset().pool_size(), pool.end());
  if (!by_loss) {
    out.injected_rows = candidate_rows;
  } else {
    engine::ForgettingReferenceSpec ref;
    ref.clean_rows = out.clean_rows;
    ref.candidate_rows = candidate_rows;
    MEMAUDIT_RETURN_IF_ERROR(SetModel(f, &ref.hidden, &ref.model));
    MEMAUDIT_ASSIGN_OR_RETURN(engine::OptimizerSpec optimizer, OptimizerFor(f.training()));
    ref.optimizer = optimizer;
    ref.batch_size = f.training().batch_size();
    ref.steps = f.injected().selection_steps();
    ref.init_seed = DeriveSeed(spec.seed(), "forgetting/selection/init", trial);
    ref.order_seed = DeriveSeed(spec.seed(), "forgetting/selection/order", trial);
    ref.threads = spec.resources().threads_per_task();
    MEMAUDIT_ASSIGN_OR_RETURN(std::vector<double> losses,
                              Engine().forgetting_candidate_losses(data, ref, on_step));
    double sum = 0;
    for (double l : losses) sum += l;
    out.candidate_loss_mean = sum / static_cast<double>(losses.size());
    for (size_t i : Engine().pick_by_loss(losses, f.injected().size(), selection)) {
      out.injected_rows.push_back(candidate_rows[i]);
      out.selection_loss.push_back(losses[i]);
    }
  }
  SplitMix64 rng(DeriveSeed(spec.seed(), "forgetting/flip", trial));
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
                                                               ForgettingData sets) {
  const v1::AuditSpec& spec = task.spec();
  const v1::ForgettingAudit& f = spec.forgetting();
  engine::ForgettingRunSpec run;
  run.clean_rows = std::move(sets.clean_rows);
  run.injected_rows = std::move(sets.injected_rows);
  run.injected_labels = std::move(sets.injected_labels);
  MEMAUDIT_RETURN_IF_ERROR(SetModel(f, &run.hidden, &run.model));
  const v1::ForgettingTraining& t = f.training();
  MEMAUDIT_ASSIGN_OR_RETURN(engine::OptimizerSpec optimizer, OptimizerFor(t));
  run.optimizer = optimizer;
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
  run.reference_models = forgetting::ReferenceModels(f);
  run.in_reference_models = forgetting::InReferenceModels(f);
  // Init and data order derive from (seed, trial): a re-leased task
  // reproduces its signals bit for bit.
  run.init_seed = DeriveSeed(spec.seed(), task.role() + "/init", task.index());
  run.order_seed = DeriveSeed(spec.seed(), task.role() + "/order", task.index());
  run.threads = spec.resources().threads_per_task();
  return run;
}

std::vector<v1::Observation> ForgettingObservations(const v1::Task& task,
                                                    const ForgettingData& sets,
                                                    const engine::ForgettingRunResult& result) {
  std::vector<v1::Observation> out;
  auto add = [&](const std::string& point, const std::string& signal,
                 const std::vector<double>& values) {
    v1::Observation& o = out.emplace_back();
    o.set_audit_id(task.audit_id());
    o.set_run(task.index());
    o.set_point(point);
    o.set_signal(signal);
    o.mutable_values()->Add(values.begin(), values.end());
  };
  add(forgetting::kCheckpointPoint, forgetting::kPhiCheckpoint, result.phi_checkpoint);
  add(forgetting::kCheckpointPoint, forgetting::kLossCheckpoint, result.loss_checkpoint);
  if (!sets.selection_loss.empty()) {
    add(forgetting::kCheckpointPoint, forgetting::kSelectionLoss, sets.selection_loss);
    add(forgetting::kCheckpointPoint, forgetting::kCandidateLossMean, {sets.candidate_loss_mean});
  }
  for (const engine::ForgettingPoint& p : result.points) {
    const std::string point = absl::StrCat(p.steps_since_injection);
    add(point, forgetting::kPhiInjected, p.phi_injected);
    add(point, forgetting::kPhiBaseline, p.phi_baseline);
    add(point, forgetting::kLossInjected, p.loss_injected);
    add(point, forgetting::kLossBaseline, p.loss_baseline);
    if (!p.phi_replay.empty()) add(point, forgetting::kPhiReplay, p.phi_replay);
    for (size_t j = 0; j < p.phi_references.size(); ++j) {
      add(point, forgetting::PhiReferenceSignal(static_cast<uint32_t>(j)), p.phi_references[j]);
    }
    for (size_t j = 0; j < p.phi_in_references.size(); ++j) {
      add(point, forgetting::PhiInReferenceSignal(static_cast<uint32_t>(j)),
          p.phi_in_references[j]);
    }
  }
  return out;
}

absl::StatusOr<engine::ForgettingLmRunSpec> ForgettingLmRunSpecFor(const v1::Task& task) {
  const v1::AuditSpec& spec = task.spec();
  const v1::ForgettingAudit& f = spec.forgetting();
  const v1::ForgettingCanaries& c = f.canaries();
  engine::ForgettingLmRunSpec run;
  // An inline text wins; a path replaces the built-in fortunes corpus.
  run.corpus_text = c.corpus().text();
  run.corpus_path = c.corpus().path();
  run.max_corpus_chars = c.corpus().max_chars();
  run.prefix = c.canary().prefix();
  run.digits = c.canary().digits();
  run.alphabets.assign(c.canary().alphabets().begin(), c.canary().alphabets().end());
  for (uint32_t r : c.repeats()) {
    for (uint32_t i = 0; i < c.per_group(); ++i) run.copies.push_back(r);
  }
  run.controls = c.controls();
  MEMAUDIT_RETURN_IF_ERROR(SetLanguageModel(c.model(), "forgetting.canaries.model",
                                            CanaryFormatCharacters(c.canary()), &run));
  MEMAUDIT_ASSIGN_OR_RETURN(engine::OptimizerSpec optimizer, OptimizerFor(f.training()));
  run.optimizer = optimizer;
  run.window = c.window();
  run.batch_size = f.training().batch_size();
  run.steps_before = f.training().steps_before_injection();
  if (f.strategy() != "inject" && f.strategy() != "poison") {
    return absl::InvalidArgumentError(
        absl::StrCat("forgetting.strategy: unknown \"", f.strategy(), "\""));
  }
  run.poison = f.strategy() == "poison";
  run.passes = f.repeats();
  run.paired = f.paired();
  run.eval_points.assign(f.eval_points().begin(), f.eval_points().end());
  run.rank_query_budget = c.rank_query_budget();
  if (c.has_extractable()) run.extractable = ExtractableSetupOf(c.extractable());
  // Each trial draws its own canaries and batch, as for images (a re-run
  // with another seed would), and its own init and order.
  run.canary_seed = DeriveSeed(spec.seed(), "forgetting/canaries", task.index());
  run.init_seed = DeriveSeed(spec.seed(), task.role() + "/init", task.index());
  run.order_seed = DeriveSeed(spec.seed(), task.role() + "/order", task.index());
  run.threads = spec.resources().threads_per_task();
  return run;
}

std::vector<v1::Observation> ForgettingCanaryObservations(
    const v1::Task& task, const engine::ForgettingLmRunResult& result) {
  std::vector<v1::Observation> out;
  auto add = [&](const std::string& point, const char* signal, const auto& values) {
    v1::Observation& o = out.emplace_back();
    o.set_audit_id(task.audit_id());
    o.set_run(task.index());
    o.set_point(point);
    o.set_signal(signal);
    for (auto v : values) o.add_values(static_cast<double>(v));
  };
  add(forgetting::kCheckpointPoint, forgetting::kExposureCheckpoint, result.checkpoint.exposure);
  for (const engine::ForgettingLmPoint& p : result.points) {
    const std::string point = absl::StrCat(p.steps_since_injection);
    add(point, forgetting::kExposureInjected, p.injected.exposure);
    add(point, forgetting::kExposureBaseline, p.baseline.exposure);
    add(point, forgetting::kExactInjected, p.injected.exact);
    add(point, forgetting::kExactBaseline, p.baseline.exact);
    if (!p.extracted_injected.empty()) {
      add(point, forgetting::kExtractedInjected, p.extracted_injected);
      add(point, forgetting::kExtractedBaseline, p.extracted_baseline);
    }
  }
  return out;
}

namespace {

absl::StatusOr<std::vector<v1::Observation>> RunCanaryTrial(
    const v1::Task& task, const std::function<bool(uint64_t, uint64_t)>& on_steps,
    const std::function<absl::Status(const std::vector<v1::Observation>&)>& send_early) {
  MEMAUDIT_ASSIGN_OR_RETURN(engine::ForgettingLmRunSpec run, ForgettingLmRunSpecFor(task));
  const uint64_t batch = run.batch_size;
  EarlySender<engine::ForgettingLmRunResult> early(
      [&](const engine::ForgettingLmRunResult& so_far) {
        return ForgettingCanaryObservations(task, so_far);
      },
      send_early);
  engine::ForgettingLmPointCallback on_point;
  if (send_early) on_point = [&](const engine::ForgettingLmRunResult& so_far) { early(so_far); };
  MEMAUDIT_ASSIGN_OR_RETURN(
      auto result,
      Engine().run_forgetting_lm(
          run, [&](uint64_t steps) { return on_steps(steps, steps * batch); }, on_point));
  return ForgettingCanaryObservations(task, result);
}

}  // namespace

absl::StatusOr<std::vector<v1::Observation>> RunForgettingTrial(
    const v1::Task& task, const std::function<bool(uint64_t, uint64_t)>& on_steps,
    const std::function<absl::Status(const std::vector<v1::Observation>&)>& send_early) {
  const v1::ForgettingAudit& f = task.spec().forgetting();
  if (f.has_construction()) return RunConstructionTrial(task, on_steps);
  if (f.has_canaries()) return RunCanaryTrial(task, on_steps, send_early);
  MEMAUDIT_ASSIGN_OR_RETURN(auto data, LoadAuditDataset(f.dataset(), "forgetting.dataset"));
  const uint64_t batch = f.training().batch_size();
  // The selection reference model's steps come first; the trial's follow.
  uint64_t selection_steps = 0;
  MEMAUDIT_ASSIGN_OR_RETURN(ForgettingData sets,
                            ForgettingDataFor(task.spec(), task.index(), *data, [&](uint64_t s) {
                              selection_steps = s;
                              return on_steps(s, s * batch);
                            }));
  // The engine run takes the rows; the observations keep the selection losses.
  MEMAUDIT_ASSIGN_OR_RETURN(engine::ForgettingRunSpec run, ForgettingRunSpecFor(task, sets));
  EarlySender<engine::ForgettingRunResult> early(
      [&](const engine::ForgettingRunResult& so_far) {
        return ForgettingObservations(task, sets, so_far);
      },
      send_early);
  engine::ForgettingPointCallback on_point;
  if (send_early) on_point = [&](const engine::ForgettingRunResult& so_far) { early(so_far); };
  MEMAUDIT_ASSIGN_OR_RETURN(auto result, Engine().run_forgetting(
                                             *data, run,
                                             [&](uint64_t steps) {
                                               // Examples seen, counting every step as a full batch
                                               // (an upper bound).
                                               const uint64_t total = selection_steps + steps;
                                               return on_steps(total, total * batch);
                                             },
                                             on_point));
  return ForgettingObservations(task, sets, result);
}

namespace {

class Forgetting final : public KindHandler {
 public:
  absl::StatusOr<std::vector<v1::Observation>> Run(
      const v1::Task& task, const StepCallback& on_steps,
      const ObservationSink& send_early) const override {
    if (task.role() != forgetting::kTrialRole) return UnknownRole(task);
    return RunForgettingTrial(task, on_steps, send_early);
  }
};

}  // namespace

}  // namespace memaudit::worker

namespace memaudit {

template <>
const worker::KindHandler& HandlerOfKind<worker::KindHandler, v1::AuditSpec::kForgetting>() {
  static const worker::Forgetting handler;
  return handler;
}

}  // namespace memaudit
