#include "services/coordinator/spec_validator.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/datasets.h"
#include "common/membership_tasks.h"
#include "services/coordinator/exposure_spec.h"
#include "services/coordinator/forgetting_spec.h"
#include "services/coordinator/relational_spec.h"
#include "services/coordinator/spec_rules.h"
#include "services/coordinator/unlearning_spec.h"

namespace memaudit::coordinator {
namespace {

constexpr uint32_t kMaxReferenceModels = 4096;

void ValidateMembership(const v1::MembershipAudit& m, std::vector<SpecProblem>* problems) {
  auto add = [&](std::string field, std::string rule) {
    problems->push_back({absl::StrCat("membership.", field), std::move(rule)});
  };
  if (m.dataset().name() != "fashion_mnist") {
    add("dataset.name",
        absl::StrCat("must be \"fashion_mnist\" (got \"", m.dataset().name(), "\")"));
  }
  if (m.dataset().pool_size() < 8 || m.dataset().pool_size() > kFashionMnistTrainExamples) {
    add("dataset.pool_size", absl::StrCat("must be in [8, ", kFashionMnistTrainExamples, "] (got ",
                                          m.dataset().pool_size(), ")"));
  }
  if (m.model().architecture() != "mlp") {
    add("model.architecture",
        absl::StrCat("must be \"mlp\" (got \"", m.model().architecture(), "\")"));
  }
  for (int i = 0; i < m.model().hidden_size(); ++i) {
    if (m.model().hidden(i) == 0 || m.model().hidden(i) > 65536) {
      add(absl::StrCat("model.hidden[", i, "]"),
          absl::StrCat("must be in [1, 65536] (got ", m.model().hidden(i), ")"));
    }
  }
  const v1::TrainingSpec& t = m.training();
  if (t.optimizer() != "sgd") {
    add("training.optimizer", absl::StrCat("must be \"sgd\" (got \"", t.optimizer(), "\")"));
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
  for (int i = 0; i < m.attacks_size(); ++i) {
    if (std::find(known.begin(), known.end(), m.attacks(i)) == known.end()) {
      add(absl::StrCat("attacks[", i, "]"),
          absl::StrCat("unknown attack \"", m.attacks(i),
                       "\"; known: ", absl::StrJoin(known, ", ")));
    }
  }
  for (int i = 0; i < m.fpr_points_size(); ++i) {
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
}

}  // namespace

const std::vector<std::string>& KnownMembershipAttacks() {
  static const auto* attacks = new std::vector<std::string>{
      "lira_online", "lira_offline", "lira_online_fixed_variance", "lira_offline_fixed_variance",
      "rmia",        "loss"};
  return *attacks;
}

std::string KindName(const v1::AuditSpec& spec) {
  switch (spec.kind_case()) {
    case v1::AuditSpec::kMembership:
      return "membership";
    case v1::AuditSpec::kExposure:
      return "exposure";
    case v1::AuditSpec::kForgetting:
      return "forgetting";
    case v1::AuditSpec::kUnlearning:
      return "unlearning";
    case v1::AuditSpec::kRelational:
      return "relational";
    default:
      return "";
  }
}

bool KindImplemented(const v1::AuditSpec& spec) {
  return spec.kind_case() != v1::AuditSpec::KIND_NOT_SET;
}

void ApplyDefaults(v1::AuditSpec* spec) {
  v1::Resources* r = spec->mutable_resources();
  if (r->threads_per_task() == 0) r->set_threads_per_task(1);
  if (r->max_attempts() == 0) r->set_max_attempts(3);
  if (spec->has_exposure()) ApplyExposureDefaults(spec->mutable_exposure());
  if (spec->has_forgetting()) ApplyForgettingDefaults(spec->mutable_forgetting());
  if (spec->has_unlearning()) ApplyUnlearningDefaults(spec->mutable_unlearning());
  if (spec->has_relational()) ApplyRelationalDefaults(spec->mutable_relational());
  if (!spec->has_membership()) return;
  if (r->models_per_task() == 0) r->set_models_per_task(1);
  v1::MembershipAudit* m = spec->mutable_membership();
  if (m->dataset().name().empty()) m->mutable_dataset()->set_name("fashion_mnist");
  if (m->model().architecture().empty()) m->mutable_model()->set_architecture("mlp");
  v1::TrainingSpec* t = m->mutable_training();
  if (t->optimizer().empty()) t->set_optimizer("sgd");
  if (t->batch_size() == 0) t->set_batch_size(64);
  if (m->attacks().empty()) {
    for (const std::string& a : KnownMembershipAttacks()) m->add_attacks(a);
  }
  if (m->fpr_points().empty()) {
    m->add_fpr_points(0.01);
    m->add_fpr_points(0.001);
  }
  if (m->population_size() == 0 &&
      std::find(m->attacks().begin(), m->attacks().end(), "rmia") != m->attacks().end()) {
    m->set_population_size(1000);
  }
}

std::vector<SpecProblem> FindProblems(const v1::AuditSpec& spec) {
  std::vector<SpecProblem> problems;
  if (spec.resources().threads_per_task() > 256) {
    problems.push_back({"resources.threads_per_task", "must be in [1, 256]"});
  }
  if (spec.resources().max_attempts() > 100) {
    problems.push_back({"resources.max_attempts", "must be in [1, 100]"});
  }
  // Packing is the membership audit's (common/membership_tasks.h).
  const uint32_t packed = spec.resources().models_per_task();
  if (packed > membership::kMaxModelsPerTask) {
    problems.push_back(
        {"resources.models_per_task",
         absl::StrCat("must be in [1, ", membership::kMaxModelsPerTask, "] (got ", packed, ")")});
  } else if (packed > 1 && spec.kind_case() != v1::AuditSpec::kMembership) {
    problems.push_back(
        {"resources.models_per_task",
         absl::StrCat("only membership audits pack models; must be 1 (got ", packed, ")")});
  }
  switch (spec.kind_case()) {
    case v1::AuditSpec::kMembership:
      ValidateMembership(spec.membership(), &problems);
      break;
    case v1::AuditSpec::kExposure:
      ValidateExposure(spec.exposure(), &problems);
      break;
    case v1::AuditSpec::kForgetting:
      ValidateForgetting(spec.forgetting(), &problems);
      break;
    case v1::AuditSpec::kUnlearning:
      ValidateUnlearning(spec.unlearning(), &problems);
      break;
    case v1::AuditSpec::kRelational:
      ValidateRelational(spec.relational(), &problems);
      break;
    case v1::AuditSpec::KIND_NOT_SET:
      problems.push_back(
          {"kind", "set exactly one of: membership, exposure, forgetting, unlearning, relational"});
      break;
    default:
      break;
  }
  return problems;
}

absl::Status ValidateSpec(const v1::AuditSpec& spec) {
  std::vector<SpecProblem> problems = FindProblems(spec);
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(
      problems, "; ",
      [](std::string* out, const SpecProblem& p) { absl::StrAppend(out, p.field, ": ", p.rule); }));
}

}  // namespace memaudit::coordinator
