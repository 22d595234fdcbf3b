#include "audits/forgetting/spec_construction.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "audits/forgetting/signals.h"
#include "audits/forgetting/spec.h"

namespace memaudit::spec {
namespace {

constexpr uint32_t kMaxTrials = 10'000;
constexpr uint64_t kMaxMeanSteps = 1'000'000;
constexpr uint32_t kMaxKMeansSamples = 100'000;
// Trials x per-example updates: about a second of one core.
constexpr double kMaxUpdates = 1e9;
constexpr double kMaxMagnitude = 1e6;

bool KMeans(const v1::ForgettingConstruction& c) {
  return c.name() == forgetting::kKMeansConstruction;
}

void CheckPositive(const std::string& field, double value, const AddProblem& add) {
  if (!(value > 0 && value <= kMaxMagnitude)) {
    add(field, absl::StrCat("must be in (0, ", kMaxMagnitude, "] (got ", value, ")"));
  }
}

void ValidateKMeans(const v1::ForgettingAudit& f, const AddProblem& add) {
  const v1::ForgettingConstruction& c = f.construction();
  if (!(c.middle() > -1 && c.middle() < 1)) {
    add("construction.middle",
        absl::StrCat("must lie strictly between the outer clusters, in (-1, 1) (got ", c.middle(),
                     ")"));
  }
  if (!(c.outlier() >= -1 && c.outlier() <= 1)) {
    add("construction.outlier", absl::StrCat("must be in [-1, 1] (got ", c.outlier(), ")"));
  }
  if (c.initial_per_cluster() == 0 || c.initial_per_cluster() > kMaxKMeansSamples) {
    add("construction.initial_per_cluster", absl::StrCat("must be in [1, ", kMaxKMeansSamples,
                                                         "] (got ", c.initial_per_cluster(), ")"));
  }
  if (c.update_per_cluster() > kMaxKMeansSamples) {
    add("construction.update_per_cluster",
        absl::StrCat("must be in [0, ", kMaxKMeansSamples, "] (got ", c.update_per_cluster(), ")"));
  }
  if (!c.sampling().empty()) add("construction.sampling", "applies to mean_estimation only");
  if (c.injected() != 0) add("construction.injected", "applies to mean_estimation only");
  if (f.has_training()) add("training", "not used by the kmeans construction");
  if (f.eval_points_size() != 1 || f.eval_points(0) != 0) {
    add("eval_points", "the kmeans construction has one point, 0 (after the update): leave unset");
  }
}

void ValidateMeanEstimation(const v1::ForgettingAudit& f, const AddProblem& add) {
  const v1::ForgettingConstruction& c = f.construction();
  CheckOneOf("construction.sampling", c.sampling(), {"deterministic", "random"}, add);
  if (!(c.injected() != 0 && std::abs(c.injected()) <= kMaxMagnitude)) {
    add("construction.injected", absl::StrCat("must be non-zero, at most ", kMaxMagnitude,
                                              " in size (got ", c.injected(), ")"));
  }
  for (const auto& [set, field] :
       {std::pair<bool, const char*>{c.has_middle(), "construction.middle"},
        {c.has_outlier(), "construction.outlier"},
        {c.initial_per_cluster() != 0, "construction.initial_per_cluster"},
        {c.update_per_cluster() != 0, "construction.update_per_cluster"}}) {
    if (set) add(field, "applies to kmeans only");
  }
  const v1::ForgettingTraining& t = f.training();
  // The step size eta of Algorithms 3 and 4; 2 eta < 1 keeps each step a
  // contraction toward the sample.
  if (!(t.learning_rate() > 0 && t.learning_rate() < 0.5)) {
    add("training.learning_rate",
        absl::StrCat("must be in (0, 0.5): the step size eta (got ", t.learning_rate(), ")"));
  }
  if (!t.optimizer().empty() && t.optimizer() != "sgd") {
    add("training.optimizer", absl::StrCat("mean_estimation takes per-example gradient steps: "
                                           "\"sgd\" or unset (got ",
                                           QuoteValue(t.optimizer()), ")"));
  }
  for (const auto& [set, field] :
       {std::pair<bool, const char*>{t.momentum() != 0, "training.momentum"},
        {t.weight_decay() != 0, "training.weight_decay"},
        {t.batch_size() != 0, "training.batch_size"},
        {t.steps_before_injection() != 0, "training.steps_before_injection"}}) {
    if (set) add(field, "not used by the mean_estimation construction (theta starts at the mean)");
  }
  if (t.steps_after_injection() == 0 || t.steps_after_injection() > kMaxMeanSteps) {
    add("training.steps_after_injection",
        absl::StrCat("must be in [1, ", kMaxMeanSteps, "] (got ", t.steps_after_injection(), ")"));
  }
  CheckForgettingEvalPoints(f, add);
}

}  // namespace

void ApplyConstructionDefaults(v1::ForgettingAudit* f) {
  v1::ForgettingConstruction* c = f->mutable_construction();
  if (f->trials() == 0) f->set_trials(200);
  if (KMeans(*c)) {
    if (c->sigma() == 0) c->set_sigma(0.03);
    if (!c->has_middle()) c->set_middle(0.03);
    if (!c->has_outlier()) c->set_outlier(-0.01);
    if (c->initial_per_cluster() == 0) c->set_initial_per_cluster(10);
    if (c->update_per_cluster() == 0) c->set_update_per_cluster(100);
    if (f->eval_points().empty()) f->add_eval_points(0);
    return;
  }
  if (c->name() != forgetting::kMeanEstimationConstruction) return;  // refused by the rules
  if (c->sigma() == 0) c->set_sigma(1);
  if (c->injected() == 0) c->set_injected(1);
  if (c->sampling().empty()) c->set_sampling("random");
  v1::ForgettingTraining* t = f->mutable_training();
  if (t->learning_rate() == 0) t->set_learning_rate(0.01);
  if (t->steps_after_injection() == 0) t->set_steps_after_injection(1000);
  if (f->eval_points().empty()) {
    for (uint64_t p : DefaultForgettingEvalPoints(t->steps_after_injection())) {
      f->add_eval_points(p);
    }
  }
}

bool KnownConstruction(const v1::ForgettingConstruction& c, const AddProblem& add) {
  const std::vector<std::string> names = {forgetting::kKMeansConstruction,
                                          forgetting::kMeanEstimationConstruction};
  if (OneOf(c.name(), names)) return true;
  CheckOneOf("construction.name", c.name(), names, add);
  return false;
}

void ValidateConstruction(const v1::ForgettingAudit& f, const AddProblem& add) {
  const v1::ForgettingConstruction& c = f.construction();
  for (const auto& [set, field] : {std::pair<bool, const char*>{f.has_dataset(), "dataset"},
                                   {f.has_model(), "model"},
                                   {f.has_injected(), "injected"},
                                   {f.has_canaries(), "canaries"},
                                   {!f.strategy().empty(), "strategy"},
                                   {f.repeats() != 0, "repeats"},
                                   {!f.inject_mode().empty(), "inject_mode"},
                                   {!f.attack().empty(), "attack"},
                                   {f.fpr() != 0, "fpr"},
                                   {f.reference_models() != 0, "reference_models"},
                                   {f.lira_per_example_variance(), "lira_per_example_variance"},
                                   {f.has_paired(), "paired"}}) {
    if (set) add(field, "not used with construction (its adversary is fixed)");
  }
  CheckPositive("construction.sigma", c.sigma(), add);
  if (f.trials() == 0 || f.trials() > kMaxTrials) {
    add("trials", absl::StrCat("must be in [1, ", kMaxTrials, "] (got ", f.trials(), ")"));
  }
  if (KMeans(c)) {
    ValidateKMeans(f, add);
  } else {
    ValidateMeanEstimation(f, add);
  }
  const double updates =
      static_cast<double>(f.trials()) * static_cast<double>(forgetting::TrialSteps(f));
  if (updates > kMaxUpdates) {
    add("trials", absl::StrCat("trials x per-trial updates must be <= ", kMaxUpdates, " (got ",
                               updates, "): lower trials or the steps"));
  }
}

}  // namespace memaudit::spec
