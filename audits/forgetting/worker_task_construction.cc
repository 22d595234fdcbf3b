#include "audits/forgetting/worker_task_construction.h"

#include "absl/strings/str_cat.h"
#include "audits/forgetting/constructions.h"
#include "audits/forgetting/signals.h"
#include "common/base/seeding.h"
#include "scoring/forgetting_constructions.h"

namespace memaudit::worker {
namespace {

std::vector<scoring::ConstructionGuesses> GuessesOf(const v1::Task& task) {
  const v1::ForgettingAudit& f = task.spec().forgetting();
  const v1::ForgettingConstruction& c = f.construction();
  // Each trial its own samples, from (seed, trial).
  const uint64_t seed = DeriveSeed(task.spec().seed(), "forgetting/construction", task.index());
  if (c.name() == forgetting::kKMeansConstruction) {
    return {scoring::KMeansTrial(forgetting::KMeansOf(f), seed)};
  }
  const std::vector<uint64_t> points(f.eval_points().begin(), f.eval_points().end());
  return scoring::MeanEstimationTrial(forgetting::MeanEstimationOf(f), points, seed);
}

}  // namespace

absl::StatusOr<std::vector<v1::Observation>> RunConstructionTrial(
    const v1::Task& task, const std::function<bool(uint64_t, uint64_t)>& on_steps) {
  const v1::ForgettingAudit& f = task.spec().forgetting();
  const v1::ForgettingConstruction& c = f.construction();
  if (c.name() != forgetting::kKMeansConstruction &&
      c.name() != forgetting::kMeanEstimationConstruction) {
    return absl::InvalidArgumentError(
        absl::StrCat("forgetting.construction.name: unknown \"", c.name(), "\""));
  }
  const std::vector<scoring::ConstructionGuesses> guesses = GuessesOf(task);
  // Per-example updates, counted as the plan counts them (one example each).
  const uint64_t updates = forgetting::TrialSteps(f);
  if (!on_steps(updates, updates)) return absl::CancelledError("stopped");
  std::vector<v1::Observation> out;
  const auto add = [&](const std::string& point, const char* signal, bool value) {
    v1::Observation& o = out.emplace_back();
    o.set_audit_id(task.audit_id());
    o.set_run(task.index());
    o.set_point(point);
    o.set_signal(signal);
    o.add_values(value ? 1 : 0);
  };
  for (size_t p = 0; p < guesses.size() && p < static_cast<size_t>(f.eval_points_size()); ++p) {
    const std::string point = absl::StrCat(f.eval_points(static_cast<int>(p)));
    add(point, forgetting::kGuessInjected, guesses[p].guessed_in_when_in);
    add(point, forgetting::kGuessBaseline, guesses[p].guessed_in_when_out);
    add(point, forgetting::kArmsIdentical, guesses[p].identical);
  }
  return out;
}

}  // namespace memaudit::worker
