#include "audits/dp_audit/spec.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "audits/dp_audit/signals.h"
#include "common/base/steps.h"
#include "spec/dataset_facts.h"
#include "spec/dataset_rules.h"
#include "spec/spec_rules.h"

namespace memaudit::spec {
namespace {

constexpr uint32_t kMaxCanaries = 100'000;
constexpr uint32_t kMaxRuns = 16;
// Training examples a run needs beyond its canaries.
constexpr uint32_t kMinTraining = 10;

void ValidateRecipe(const v1::DpAudit& d, const AddProblem& add) {
  const v1::DatasetSpec& data = d.dataset();
  const uint32_t rows = CheckDataset(data, add);
  const uint32_t needed = dp_audit::FirstTrainingPosition(d) + kMinTraining;
  if (rows > 0 && (data.pool_size() < needed || data.pool_size() > rows)) {
    add("dataset.pool_size",
        absl::StrCat("must be in [", needed, ", ", rows, "]: the input canaries and at least ",
                     kMinTraining, " training examples, within the dataset's rows (got ",
                     data.pool_size(), ")"));
  }
  CheckImageModel(d.model(),
                  {engine::ModelKind::kLogReg, engine::ModelKind::kMlp, engine::ModelKind::kCnn,
                   engine::ModelKind::kTorchScript},
                  /*dropout=*/true, add);
  CheckModelFitsDataset(d.model(), data, add);
  const v1::TrainingSpec& t = d.training();
  CheckOneOf("training.optimizer", t.optimizer(), {"sgd", "momentum"}, add);
  CheckLearningRate(t.learning_rate(), add);
  CheckMomentum(t.momentum(), add);
  CheckWeightDecay(t.weight_decay(), add);
  CheckEpochs(t.epochs(), add);
  CheckBatchSize(t.batch_size(), add);
}

void ValidateCanaries(const v1::DpAudit& d, const AddProblem& add) {
  if (d.canaries() < 1 || d.canaries() > kMaxCanaries) {
    add("canaries", absl::StrCat("must be in [1, ", kMaxCanaries, "] (got ", d.canaries(), ")"));
  }
  CheckOneOf("canary_type", d.canary_type(),
             {dp_audit::kInputCanaries, dp_audit::kGradientCanaries}, add);
  if (d.canary_type() == dp_audit::kGradientCanaries && !d.has_dp_sgd()) {
    add("canary_type",
        "\"gradient\" canaries enter DP-SGD's clipped sum: set dp_sgd (noise_multiplier 0 "
        "trains without noise)");
  }
  if (dp_audit::UsesInputCanaries(d)) {
    CheckOneOf("input_score", d.input_score(), {dp_audit::kLossScore, dp_audit::kScaledLogitScore},
               add);
    CheckOneOf("canary_source", d.canary_source(),
               {dp_audit::kMislabelledCanaries, dp_audit::kFirstRowsCanaries}, add);
  } else {
    if (!d.input_score().empty()) add("input_score", "applies to input canaries only");
    if (!d.canary_source().empty()) add("canary_source", "applies to input canaries only");
  }
  if (d.runs() < 1 || d.runs() > kMaxRuns) {
    add("runs", absl::StrCat("must be in [1, ", kMaxRuns, "] (got ", d.runs(), ")"));
  }
  if (!(d.confidence() > 0 && d.confidence() < 1)) {
    add("confidence", absl::StrCat("must be in (0, 1) (got ", d.confidence(), ")"));
  }
  if (!(d.delta() > 0 && d.delta() < 1)) {
    add("delta", absl::StrCat("must be in (0, 1) (got ", d.delta(), ")"));
  }
}

}  // namespace

void ApplyDpAuditDefaults(v1::DpAudit* d) {
  if (d->canaries() == 0) d->set_canaries(1000);
  if (d->canary_type().empty()) d->set_canary_type(dp_audit::kInputCanaries);
  if (dp_audit::UsesInputCanaries(*d)) {
    if (d->input_score().empty()) d->set_input_score(dp_audit::kLossScore);
    if (d->canary_source().empty()) d->set_canary_source(dp_audit::kMislabelledCanaries);
  }
  v1::DatasetSpec* data = d->mutable_dataset();
  // 10,000 rows, or all of a smaller dataset.
  if (data->pool_size() == 0) data->set_pool_size(std::min<uint32_t>(10000, DatasetRows(*data)));
  v1::ModelSpec* m = d->mutable_model();
  if (m->architecture().empty()) m->set_architecture("logreg");
  v1::TrainingSpec* t = d->mutable_training();
  if (t->optimizer().empty()) t->set_optimizer("sgd");
  if (t->learning_rate() == 0) t->set_learning_rate(0.05);
  if (t->optimizer() == "momentum" && t->momentum() == 0) t->set_momentum(0.9);
  if (t->epochs() == 0) t->set_epochs(5);
  if (t->batch_size() == 0) t->set_batch_size(64);
  if (d->runs() == 0) d->set_runs(1);
  if (d->confidence() == 0) d->set_confidence(0.95);
  if (d->has_dp_sgd()) {
    v1::DpSgdSpec* dp = d->mutable_dp_sgd();
    if (dp->clip_norm() == 0) dp->set_clip_norm(1.0);
    if (dp->delta() == 0) dp->set_delta(1e-5);
  }
  if (d->delta() == 0) d->set_delta(d->has_dp_sgd() ? d->dp_sgd().delta() : 1e-5);
}

uint64_t DpAuditRunSteps(const v1::DpAudit& d) {
  const uint64_t most =
      dp_audit::TrainingExamples(d) + (dp_audit::UsesInputCanaries(d) ? uint64_t{d.canaries()} : 0);
  return uint64_t{d.training().epochs()} *
         StepsPerEpoch(most, std::max<uint32_t>(d.training().batch_size(), 1));
}

void ValidateDpAudit(const v1::DpAudit& d, std::vector<SpecProblem>* problems) {
  const AddProblem add = [&](const std::string& field, std::string rule) {
    problems->push_back({absl::StrCat("dp_audit.", field), std::move(rule)});
  };
  const size_t before = problems->size();
  ValidateCanaries(d, add);
  ValidateRecipe(d, add);
  // Noise 0 is allowed: clipping without noise, where the audit's bound is
  // at its largest.
  if (d.has_dp_sgd()) {
    CheckDpSgd(d.dp_sgd(), "", DpSgdRules{/*zero_noise=*/true, /*target_epsilon=*/true}, add);
  }
  if (problems->size() == before) {
    CheckCost({{static_cast<double>(d.runs()), ClassifierParameters(d.model(), d.dataset()),
                static_cast<double>(DpAuditRunSteps(d))}},
              "model.hidden", "runs, dataset.pool_size, training.epochs or model.hidden", add);
  }
}

namespace {

class DpAuditKind final : public KindHandler {
 public:
  void ReadFiles(v1::AuditSpec* spec, std::vector<SpecProblem>* problems) const override {
    ReadDatasetFiles(spec->mutable_dp_audit()->mutable_dataset(), "dp_audit.dataset", problems);
  }

  void ApplyDefaults(v1::AuditSpec* spec) const override {
    ApplyDpAuditDefaults(spec->mutable_dp_audit());
  }

  void Validate(const v1::AuditSpec& spec, std::vector<SpecProblem>* problems) const override {
    ValidateDpAudit(spec.dp_audit(), problems);
  }

  // The lower bounds already hold at the audit's confidence: the reading is
  // the bound itself, so a `max` gate fails exactly when the audit proves
  // the run spends more than the limit.
  std::vector<GateMetric> GateMetrics(const v1::AuditSpec& /*spec*/) const override {
    const auto bound = [](double v) { return MetricReading{v, v, v}; };
    return {
        {"epsilon_lower", "canaries",
         [bound](const v1::AuditResults& r) -> std::optional<MetricReading> {
           if (!r.has_dp_audit()) return std::nullopt;
           return bound(r.dp_audit().epsilon_lower());
         },
         /*interval=*/false},
        {"gdp_epsilon_lower", "canaries",
         [bound](const v1::AuditResults& r) -> std::optional<MetricReading> {
           if (!r.has_dp_audit()) return std::nullopt;
           return bound(r.dp_audit().gdp_epsilon_lower());
         },
         /*interval=*/false},
    };
  }

  std::vector<PlannedTask> Plan(const v1::AuditSpec& spec) const override {
    std::vector<PlannedTask> tasks;
    const uint64_t steps = DpAuditRunSteps(spec.dp_audit());
    for (uint32_t run = 0; run < spec.dp_audit().runs(); ++run) {
      tasks.push_back({dp_audit::kRunRole, run, steps});
    }
    return tasks;
  }
};

}  // namespace

}  // namespace memaudit::spec

namespace memaudit {

template <>
const spec::KindHandler& HandlerOfKind<spec::KindHandler, v1::AuditSpec::kDpAudit>() {
  static const spec::DpAuditKind handler;
  return handler;
}

}  // namespace memaudit
