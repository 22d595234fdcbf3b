#include "services/coordinator/membership_spec.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/datasets.h"
#include "common/membership_attacks.h"
#include "common/membership_tasks.h"
#include "common/seeding.h"
#include "common/steps.h"
#include "services/coordinator/membership_packing.h"
#include "services/coordinator/spec_rules.h"

namespace memaudit::coordinator {
namespace {

constexpr uint32_t kMaxReferenceModels = 4096;

constexpr int kMaxHidden = 8;
constexpr int kMaxFprPoints = 64;

// Every model trains on half the pool (the keep-matrix): models x parameters
// x steps against the limits of spec_rules.h.
void CheckMembershipCost(const v1::MembershipAudit& m, const AddProblem& add) {
  ModelGroup models;
  models.models = m.reference_models();
  models.parameters = ImageModelParameters(m.model());
  models.steps = static_cast<double>(
                     StepsPerEpoch((m.dataset().pool_size() + 1) / 2, m.training().batch_size())) *
                 m.training().epochs();
  CheckCost({models}, "model.hidden",
            "reference_models, model.hidden, training.epochs or dataset.pool_size", add);
}

void ValidateMembership(const v1::MembershipAudit& m, std::vector<SpecProblem>* problems) {
  const size_t before = problems->size();
  const AddProblem add = [&](const std::string& field, std::string rule) {
    problems->push_back({absl::StrCat("membership.", field), std::move(rule)});
  };
  if (m.dataset().name() != "fashion_mnist") {
    add("dataset.name",
        absl::StrCat("must be \"fashion_mnist\" (got ", QuoteValue(m.dataset().name()), ")"));
  }
  CheckLength("dataset.path", m.dataset().path(), kMaxPathBytes, add);
  if (m.dataset().pool_size() < 8 || m.dataset().pool_size() > kFashionMnistTrainExamples) {
    add("dataset.pool_size", absl::StrCat("must be in [8, ", kFashionMnistTrainExamples, "] (got ",
                                          m.dataset().pool_size(), ")"));
  }
  CheckArchitecture("model.architecture", m.model().architecture(), {engine::ModelKind::kMlp}, add);
  const bool hidden_ok = CheckListSize("model.hidden", m.model().hidden_size(), 0, kMaxHidden, add);
  for (int i = 0; hidden_ok && i < m.model().hidden_size(); ++i) {
    if (m.model().hidden(i) == 0 || m.model().hidden(i) > 65536) {
      add(absl::StrCat("model.hidden[", i, "]"),
          absl::StrCat("must be in [1, 65536] (got ", m.model().hidden(i), ")"));
    }
  }
  const v1::TrainingSpec& t = m.training();
  if (t.optimizer() != "sgd") {
    add("training.optimizer",
        absl::StrCat("must be \"sgd\" (got ", QuoteValue(t.optimizer()), ")"));
  }
  CheckLearningRate(t.learning_rate(), add);
  CheckMomentum(t.momentum(), add);
  CheckWeightDecay(t.weight_decay(), add);
  CheckEpochs(t.epochs(), add);
  CheckBatchSize(t.batch_size(), add);
  const uint32_t n = m.reference_models();
  if (n < 4 || n % 2 != 0 || n > kMaxReferenceModels) {
    add("reference_models",
        absl::StrCat("must be an even number in [4, ", kMaxReferenceModels, "] (got ", n, ")"));
  }
  const auto& known = KnownMembershipAttacks();
  const bool attacks_ok = CheckListSize("attacks", m.attacks_size(), 0, kMaxNameLists, add);
  for (int i = 0; attacks_ok && i < m.attacks_size(); ++i) {
    if (std::find(known.begin(), known.end(), m.attacks(i)) == known.end()) {
      add(absl::StrCat("attacks[", i, "]"),
          absl::StrCat("unknown attack ", QuoteValue(m.attacks(i)),
                       "; known: ", absl::StrJoin(known, ", ")));
    } else if (const uint32_t needs = MinReferenceModels(m.attacks(i)); n >= 4 && n < needs) {
      add(absl::StrCat("attacks[", i, "]"),
          absl::StrCat(QuoteValue(m.attacks(i)),
                       " fits a per-example variance to the N/2 - 1 reference models on one "
                       "side of each example and needs at least 2: reference_models must be >= ",
                       needs, " (got ", n, "); its fixed-variance form works with fewer"));
    }
  }
  const bool fprs_ok = CheckListSize("fpr_points", m.fpr_points_size(), 0, kMaxFprPoints, add);
  for (int i = 0; fprs_ok && i < m.fpr_points_size(); ++i) {
    const double f = m.fpr_points(i);
    if (!(f > 0 && f < 1)) {
      add(absl::StrCat("fpr_points[", i, "]"), absl::StrCat("must be in (0, 1) (got ", f, ")"));
    }
  }
  const bool rmia = std::find(m.attacks().begin(), m.attacks().end(), "rmia") != m.attacks().end();
  if (rmia && m.population_size() == 0) {
    add("population_size", "must be >= 1 when the \"rmia\" attack is requested (got 0)");
  }
  // Only when the pool itself fits: one oversized pool is one problem.
  if (m.dataset().pool_size() <= kFashionMnistTrainExamples &&
      uint64_t{m.dataset().pool_size()} + m.population_size() > kFashionMnistTrainExamples) {
    add("population_size",
        absl::StrCat("pool_size + population_size must be <= ", kFashionMnistTrainExamples,
                     " (got ", m.dataset().pool_size(), " + ", m.population_size(), ")"));
  }
  if (m.has_target_model() && m.target_model() >= n) {
    add("target_model",
        absl::StrCat("must be < reference_models = ", n, " (got ", m.target_model(), ")"));
  }
  // The estimate needs every field in range: only then is it the audit's.
  if (problems->size() == before) CheckMembershipCost(m, add);
}

class Membership final : public KindHandler {
 public:
  void ApplyDefaults(v1::AuditSpec* spec) const override {
    v1::MembershipAudit* m = spec->mutable_membership();
    if (m->dataset().name().empty()) m->mutable_dataset()->set_name("fashion_mnist");
    if (m->model().architecture().empty()) m->mutable_model()->set_architecture("mlp");
    v1::TrainingSpec* t = m->mutable_training();
    if (t->optimizer().empty()) t->set_optimizer("sgd");
    if (t->batch_size() == 0) t->set_batch_size(64);
    if (m->attacks().empty()) {
      // An attack undefined at this many reference models is left out; the
      // results' warnings name it.
      for (const std::string& a : DefaultMembershipAttacks()) {
        if (MinReferenceModels(a) <= m->reference_models()) m->add_attacks(a);
      }
    }
    if (m->fpr_points().empty()) {
      m->add_fpr_points(0.01);
      m->add_fpr_points(0.001);
    }
    if (m->population_size() == 0 &&
        std::find(m->attacks().begin(), m->attacks().end(), "rmia") != m->attacks().end()) {
      m->set_population_size(1000);
    }
    // Last: auto weighs the recipe as defaulted above.
    v1::Resources* r = spec->mutable_resources();
    if (r->models_per_task() == 0) r->set_models_per_task(AutoModelsPerTask(*spec));
  }

  void Validate(const v1::AuditSpec& spec, std::vector<SpecProblem>* problems) const override {
    ValidateMembership(spec.membership(), problems);
  }

  std::vector<PlannedTask> Plan(const v1::AuditSpec& spec) const override {
    std::vector<PlannedTask> tasks;
    const v1::MembershipAudit& m = spec.membership();
    // The keep-matrix is rebuilt here only to count each model's training set
    // exactly, so progress totals match the steps workers report. A task's
    // steps are its models' steps summed (a packed step of K models counts K),
    // so the audit's total does not depend on models_per_task.
    const KeepMatrix keep =
        BuildKeepMatrix(spec.seed(), m.reference_models(), m.dataset().pool_size());
    const uint64_t batch = m.training().batch_size();
    for (uint32_t t = 0; t < membership::TaskCount(spec); ++t) {
      const membership::ModelRange models = membership::TaskModels(spec, t);
      PlannedTask task{membership::kModelRole, t, 0, models.first, models.count};
      for (uint32_t i = models.first; i < models.end(); ++i) {
        uint64_t train_size = 0;
        for (uint32_t j = 0; j < keep.examples; ++j) train_size += keep.in(i, j);
        task.steps_total += StepsPerEpoch(train_size, batch) * m.training().epochs();
      }
      tasks.push_back(std::move(task));
    }
    return tasks;
  }

  bool PacksModels() const override { return true; }
};

}  // namespace

const KindHandler& MembershipHandler() {
  static const Membership handler;
  return handler;
}

}  // namespace memaudit::coordinator
