#include "audits/exposure/worker_task.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "audits/exposure/signals.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "services/worker/engine_access.h"
#include "services/worker/lm_tokenizer.h"
#include "spec/dataset_facts.h"

namespace memaudit::worker {

namespace {

// The variant a task trains, and which of its models it is.
struct TaskModel {
  uint32_t variant = 0;
  // exposure::kCanaryPoint, kBaselinePoint, ReferencePoint(j) or ReplicatePoint(r)
  std::string point;
  uint32_t replicate = 0;  // r of a replicate canary model; 0 otherwise
};

absl::StatusOr<TaskModel> ModelOf(const v1::Task& task) {
  const v1::ExposureAudit& e = task.spec().exposure();
  const uint32_t variants = exposure::VariantCount(e);
  TaskModel m;
  if (task.role() == exposure::kCanaryRole || task.role() == exposure::kBaselineRole) {
    m.variant = task.index();
    m.point =
        task.role() == exposure::kCanaryRole ? exposure::kCanaryPoint : exposure::kBaselinePoint;
  } else if (task.role() == exposure::kReferenceRole && e.reference_models() > 0) {
    m.variant = task.index() / e.reference_models();
    m.point = exposure::ReferencePoint(task.index() % e.reference_models());
  } else if (task.role() == exposure::kReplicateRole && exposure::Replicates(e) > 1) {
    const exposure::ReplicateOf of = exposure::ReplicateOfTask(e, task.index());
    m.variant = of.variant;
    m.replicate = of.replicate;
    m.point = exposure::ReplicatePoint(m.replicate);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("task.role: \"", task.role(), "\" is not a model of this exposure audit"));
  }
  if (m.variant >= variants) {
    return absl::InvalidArgumentError(absl::StrCat(
        "task.index: ", task.index(), " is outside the audit's ", variants, " variant(s)"));
  }
  return m;
}

}  // namespace

absl::StatusOr<engine::ExposureRunSpec> ExposureRunSpecFor(const v1::Task& task) {
  const v1::AuditSpec& spec = task.spec();
  const v1::ExposureAudit& e = spec.exposure();
  MEMAUDIT_ASSIGN_OR_RETURN(TaskModel model, ModelOf(task));
  const exposure::Variant variant = exposure::ResolveVariant(e, model.variant);
  // The coordinator validated the spec; a task from elsewhere still gets the
  // field named rather than a zero-step model.
  auto field = [&](const char* name, bool swept) {
    return swept ? absl::StrCat("exposure.sweep[", model.variant, "].", name)
                 : absl::StrCat("exposure.training.", name);
  };
  const int entry = static_cast<int>(model.variant);
  const bool in_sweep = entry < e.sweep_size();
  if (variant.epochs == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field("epochs", in_sweep && e.sweep(entry).has_epochs()), ": must be >= 1"));
  }
  if (!(variant.learning_rate > 0) || !std::isfinite(variant.learning_rate)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field("learning_rate", in_sweep && e.sweep(entry).has_learning_rate()),
                     ": must be > 0 (got ", variant.learning_rate, ")"));
  }
  engine::ExposureRunSpec run;
  run.corpus_path = e.corpus().path();
  run.corpus_text = e.corpus().text();
  run.max_corpus_chars = e.corpus().max_chars();
  run.prefix = e.canary().prefix();
  run.digits = e.canary().digits();
  run.alphabets.assign(e.canary().alphabets().begin(), e.canary().alphabets().end());
  run.repeats.assign(e.repeats().begin(), e.repeats().end());
  run.controls = e.controls();
  MEMAUDIT_RETURN_IF_ERROR(
      SetLanguageModel(e.model(), "exposure.model", CanaryFormatCharacters(e.canary()), &run));
  run.units = variant.units;
  run.dropout = variant.dropout;
  if (e.has_target()) {
    // The model to measure is the team's, as trained.
    run.lm = engine::ModelKind::kTorchScript;
    run.torchscript_path = e.target().torchscript_path();
    run.given_model = true;
    run.given_secrets.assign(e.target().secrets().begin(), e.target().secrets().end());
  }
  // The held-out sequences are the same in every model.
  if (e.has_extractable()) run.extractable = ExtractableSetupOf(e.extractable());
  // The LM recipes carry no momentum field: "momentum" keeps the engine's 0.9.
  auto optimizer =
      engine::OptimizerFromName(e.training().optimizer(), variant.learning_rate,
                                engine::OptimizerSpec{}.momentum, e.training().weight_decay());
  if (!optimizer.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("exposure.training.optimizer: ", optimizer.status().message()));
  }
  run.optimizer = *optimizer;
  run.window = e.training().window();
  run.batch_size = variant.batch_size;
  run.epochs = variant.epochs;
  run.dp = variant.dp;
  run.dp_clip_norm = variant.clip_norm;
  run.dp_noise_multiplier = variant.noise_multiplier;
  run.dp_delta = variant.delta;
  // Every seed is a pure function of the audit seed and the task, so a
  // re-leased task retrains bit for bit. The canaries and S are the audit's,
  // shared by all its models (canary model 0's seed, as before sweeps).
  // Models are paired across variants and with their baseline: every canary
  // and baseline model trains from that same seed, and reference model j of
  // every variant from its own, so two models differ only in what the spec
  // varies (recipe, canaries) and not in init, order, dropout or DP noise.
  // Replicate r >= 1 of the canary model is the canary model of another
  // seed, DeriveSeed(seed, kReplicateRole, r): its own canaries, positions,
  // S and model seed, as a re-run of the audit with another seed would draw
  // (the same for replicate r of every variant, which stay paired).
  run.seed = model.replicate > 0
                 ? DeriveSeed(spec.seed(), exposure::kReplicateRole, model.replicate)
                 : DeriveSeed(spec.seed(), exposure::kCanaryRole, 0);
  run.model_seed =
      task.role() == exposure::kReferenceRole
          ? DeriveSeed(spec.seed(), exposure::kReferenceRole, task.index() % e.reference_models())
          : run.seed;
  const bool canary_model = task.role() == exposure::kCanaryRole;
  const bool reference_model = task.role() == exposure::kReferenceRole;
  run.insert_canaries = canary_model || model.replicate > 0;
  run.rank_canaries = !reference_model;
  run.rank_query_budget = e.rank_query_budget();
  run.extraction_query_budget = e.extraction_query_budget();
  run.extract = canary_model && e.extraction();
  // S, the same sample for every model: the canary and baseline models'
  // sampled and extrapolated estimators, the references' calibration.
  run.reference_samples = exposure::NeedsReferences(e.estimator()) ? e.reference_samples() : 0;
  // Exact calibration: the canary and reference models score all of R.
  run.enumerate_space = exposure::ExactCalibration(e) && (canary_model || reference_model);
  run.threads = spec.resources().threads_per_task();
  // Evaluation points: the canary model only (baseline and reference models
  // are read at their end).
  if (canary_model) {
    run.eval_every_steps = e.eval_every_steps();
    run.eval_every_epoch = e.eval_every_epoch();
  }
  return run;
}

std::vector<v1::Observation> ExposurePointObservations(const v1::Task& task,
                                                       const engine::ExposurePoint& point) {
  std::vector<v1::Observation> out;
  absl::StatusOr<TaskModel> model = ModelOf(task);
  if (!model.ok() || point.final) return out;  // the final model reports at kCanaryPoint
  std::vector<double> px, rank, exact, queries;
  for (const engine::CanaryExposure& c : point.canaries) {
    px.push_back(c.px_bits);
    rank.push_back(static_cast<double>(c.rank));
    exact.push_back(c.exact ? 1 : 0);
    queries.push_back(static_cast<double>(c.queries));
  }
  const std::string name = exposure::StepPoint(point.steps);
  for (const auto& [signal, values] :
       std::vector<std::pair<const char*, const std::vector<double>*>>{
           {exposure::kPxBits, &px},
           {exposure::kRank, &rank},
           {exposure::kExact, &exact},
           {exposure::kRankQueries, &queries}}) {
    v1::Observation& o = out.emplace_back();
    o.set_audit_id(task.audit_id());
    o.set_run(model->variant);
    o.set_point(name);
    o.set_signal(signal);
    o.mutable_values()->Add(values->begin(), values->end());
  }
  return out;
}

std::vector<v1::Observation> ExposureObservations(const v1::Task& task,
                                                  const engine::ExposureRunResult& result) {
  const v1::ExposureAudit& e = task.spec().exposure();
  absl::StatusOr<TaskModel> found = ModelOf(task);
  if (!found.ok()) return {};  // RunExposureModel refuses such a task before training
  const TaskModel model = *found;
  const std::vector<std::string> signals = exposure::SignalsAt(e, model.point, model.variant);
  std::vector<v1::Observation> out;
  auto add = [&](const char* signal, const std::vector<double>& values) {
    if (std::find(signals.begin(), signals.end(), signal) == signals.end()) return;
    v1::Observation& o = out.emplace_back();
    o.set_audit_id(task.audit_id());
    o.set_run(model.variant);
    o.set_point(model.point);
    o.set_signal(signal);
    o.mutable_values()->Add(values.begin(), values.end());
  };
  std::vector<double> repeats, px, rank, exact, queries, secrets;
  for (const engine::CanaryExposure& c : result.canaries) {
    repeats.push_back(c.repeats);
    px.push_back(c.px_bits);
    rank.push_back(static_cast<double>(c.rank));
    exact.push_back(c.exact ? 1 : 0);
    queries.push_back(static_cast<double>(c.queries));
    exposure::AppendBytes(c.secret + "\n", &secrets);
  }
  add(exposure::kRepeats, repeats);
  add(exposure::kPxBits, px);
  add(exposure::kRank, rank);
  add(exposure::kExact, exact);
  add(exposure::kRankQueries, queries);
  add(exposure::kSecretsUtf8, secrets);
  add(exposure::kReferencePxBits, result.reference_px);
  add(exposure::kSpacePxBits, result.space_px);
  add(exposure::kSpaceIndex,
      std::vector<double>(result.space_index.begin(), result.space_index.end()));
  std::vector<double> extraction = {e.extraction() ? 1.0 : 0.0, result.extracted ? 1.0 : 0.0,
                                    static_cast<double>(result.extraction_queries)};
  exposure::AppendBytes(result.extraction, &extraction);
  add(exposure::kExtraction, extraction);
  add(exposure::kModel, {result.log2_space, static_cast<double>(result.steps), result.final_loss});
  add(exposure::kDp, {result.dp_epsilon, exposure::ResolveVariant(e, model.variant).delta});
  std::vector<double> duplicates, extracted, matched, loss, zlib, min_k, min_k_plus;
  for (const engine::ExtractableSequence& s : result.extractable) {
    duplicates.push_back(s.duplicates);
    extracted.push_back(s.extracted ? 1 : 0);
    matched.push_back(s.matched);
    loss.push_back(s.membership.loss);
    zlib.push_back(s.membership.zlib);
    min_k.push_back(s.membership.min_k);
    min_k_plus.push_back(s.membership.min_k_plus);
  }
  add(exposure::kExtractableDuplicates, duplicates);
  add(exposure::kExtractableExtracted, extracted);
  add(exposure::kExtractableMatched, matched);
  add(exposure::kExtractableLoss, loss);
  add(exposure::kExtractableZlib, zlib);
  add(exposure::kExtractableMinK, min_k);
  add(exposure::kExtractableMinKPlus, min_k_plus);
  for (const engine::ExposurePoint& p : result.points) {
    std::vector<v1::Observation> point = ExposurePointObservations(task, p);
    out.insert(out.end(), point.begin(), point.end());
  }
  return out;
}

absl::StatusOr<std::vector<v1::Observation>> RunExposureModel(
    const v1::Task& task, const std::function<bool(uint64_t, uint64_t)>& on_steps,
    const std::function<absl::Status(const std::vector<v1::Observation>&)>& send_early) {
  MEMAUDIT_ASSIGN_OR_RETURN(engine::ExposureRunSpec run, ExposureRunSpecFor(task));
  const v1::ExposureAudit& e = task.spec().exposure();
  if (e.has_target()) {
    // The file Submit hashed, or the exposure of some other model.
    MEMAUDIT_ASSIGN_OR_RETURN(
        const std::string now,
        FilesContentHash({{"exposure.target.torchscript_path", e.target().torchscript_path()}}));
    if (now != e.target().content_hash()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "exposure.target.content_hash: the model file changed since the audit was submitted (",
          e.target().content_hash(), " then, ", now, " now)"));
    }
  }
  const uint64_t batch = run.batch_size;
  engine::ExposurePointCallback on_point;
  if (send_early) {
    // Each evaluation point as soon as it is measured; best effort, as the
    // final result sends every point again.
    on_point = [&](const engine::ExposurePoint& point) {
      std::vector<v1::Observation> observations = ExposurePointObservations(task, point);
      if (!observations.empty()) send_early(observations).IgnoreError();
      return absl::OkStatus();
    };
  }
  MEMAUDIT_ASSIGN_OR_RETURN(auto result, Engine().run_exposure(
                                             run,
                                             [&](uint64_t steps) {
                                               // Windows seen, counting every step as a full batch
                                               // (an upper bound).
                                               return on_steps(steps, steps * batch);
                                             },
                                             on_point));
  // A given model trains nothing: its one step of work is the measurement.
  if (run.given_model && !on_steps(1, 0)) return absl::CancelledError("stopped");
  return ExposureObservations(task, result);
}

namespace {

class Exposure final : public KindHandler {
 public:
  absl::StatusOr<std::vector<v1::Observation>> Run(
      const v1::Task& task, const StepCallback& on_steps,
      const ObservationSink& send_early) const override {
    // Canary, baseline and reference models; RunExposureModel refuses other roles.
    return RunExposureModel(task, on_steps, send_early);
  }
};

}  // namespace

}  // namespace memaudit::worker

namespace memaudit {

template <>
const worker::KindHandler& HandlerOfKind<worker::KindHandler, v1::AuditSpec::kExposure>() {
  static const worker::Exposure handler;
  return handler;
}

}  // namespace memaudit
