#include "services/worker/exposure_task.h"

#include "absl/strings/str_cat.h"
#include "common/exposure_signals.h"
#include "common/seeding.h"

namespace memaudit::worker {

absl::StatusOr<engine::ExposureRunSpec> ExposureRunSpecFor(const v1::Task& task) {
  const v1::AuditSpec& spec = task.spec();
  const v1::ExposureAudit& e = spec.exposure();
  engine::ExposureRunSpec run;
  run.corpus_path = e.corpus().path();
  run.corpus_text = e.corpus().text();
  run.max_corpus_chars = e.corpus().max_chars();
  run.prefix = e.canary().prefix();
  run.digits = e.canary().digits();
  run.alphabets.assign(e.canary().alphabets().begin(), e.canary().alphabets().end());
  run.repeats.assign(e.repeats().begin(), e.repeats().end());
  run.controls = e.controls();
  run.lstm = e.model().architecture() != "gru";
  run.layers = e.model().layers();
  run.units = e.model().units();
  run.embedding = e.model().embedding();
  run.dropout = e.model().dropout();
  const std::string& opt = e.training().optimizer();
  if (opt == "adam") {
    run.optimizer.kind = engine::OptimizerKind::kAdam;
  } else if (opt == "sgd") {
    run.optimizer.kind = engine::OptimizerKind::kSgd;
  } else if (opt == "momentum") {
    run.optimizer.kind = engine::OptimizerKind::kMomentum;
  } else if (opt == "rmsprop") {
    run.optimizer.kind = engine::OptimizerKind::kRmsProp;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("exposure.training.optimizer: unknown \"", opt, "\""));
  }
  run.optimizer.learning_rate = e.training().learning_rate();
  run.optimizer.weight_decay = e.training().weight_decay();
  run.window = e.training().window();
  run.batch_size = e.training().batch_size();
  run.epochs = e.training().epochs();
  // Canaries, positions, init and order all derive from this one seed, so a
  // re-leased task retrains bit for bit.
  run.seed = DeriveSeed(spec.seed(), task.role(), task.index());
  run.rank_query_budget = e.rank_query_budget();
  run.extraction_query_budget = e.extraction_query_budget();
  run.extract = e.extraction();
  run.reference_samples = exposure::NeedsReferences(e.estimator()) ? e.reference_samples() : 0;
  run.threads = spec.resources().threads_per_task();
  return run;
}

std::vector<v1::Observation> ExposureObservations(const v1::Task& task,
                                                  const engine::ExposureRunResult& result) {
  std::vector<v1::Observation> out;
  auto add = [&](const char* signal, const std::vector<double>& values) {
    v1::Observation& o = out.emplace_back();
    o.set_audit_id(task.audit_id());
    o.set_run(task.index());
    o.set_point("final");
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
  if (exposure::NeedsReferences(task.spec().exposure().estimator())) {
    add(exposure::kReferencePxBits, result.reference_px);
  }
  std::vector<double> extraction = {task.spec().exposure().extraction() ? 1.0 : 0.0,
                                    result.extracted ? 1.0 : 0.0,
                                    static_cast<double>(result.extraction_queries)};
  exposure::AppendBytes(result.extraction, &extraction);
  add(exposure::kExtraction, extraction);
  add(exposure::kModel, {result.log2_space, static_cast<double>(result.steps), result.final_loss});
  return out;
}

absl::StatusOr<std::vector<v1::Observation>> RunExposureModel(
    const v1::Task& task, const std::function<bool(uint64_t, uint64_t)>& on_steps) {
  absl::StatusOr<engine::ExposureRunSpec> run = ExposureRunSpecFor(task);
  if (!run.ok()) return run.status();
  const uint64_t batch = run->batch_size;
  auto result = engine::RunExposure(*run, [&](uint64_t steps) {
    // Windows seen, counting every step as a full batch (an upper bound).
    return on_steps(steps, steps * batch);
  });
  if (!result.ok()) return result.status();
  return ExposureObservations(task, *result);
}

}  // namespace memaudit::worker
