#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "audits/membership/attacks.h"
#include "audits/membership/spec_packing.h"
#include "audits/membership/tasks.h"
#include "common/base/seeding.h"
#include "common/base/steps.h"
#include "spec/dataset_facts.h"
#include "spec/dataset_rules.h"
#include "spec/kind_handler.h"
#include "spec/spec_rules.h"

namespace memaudit::spec {
namespace {

constexpr uint32_t kMaxReferenceModels = 4096;

constexpr int kMaxFprPoints = 64;

// Every model trains on half the pool (the keep-matrix): models x parameters
// x steps against the limits of spec_rules.h.
void CheckMembershipCost(const v1::MembershipAudit& m, const AddProblem& add) {
  ModelGroup models;
  models.models = m.reference_models();
  models.steps = static_cast<double>(
                     StepsPerEpoch((membership::PoolSize(m) + 1) / 2, membership::BatchSize(m))) *
                 membership::Epochs(m);
  if (m.has_documents()) {
    const v1::LanguageModelSpec& lm = m.documents().model();
    // A step trains on batch x sequence_tokens tokens: weigh it as that many
    // rows of a model of this size.
    models.parameters = CharLmParameters(lm.architecture(), lm.layers(), lm.units(), lm.embedding(),
                                         LmVocabularyBound(lm)) *
                        m.documents().sequence_tokens();
    CheckCost({models}, "documents.model.units",
              "reference_models, documents.model, documents.training.epochs, "
              "documents.sequence_tokens or documents.pool_size",
              add);
    return;
  }
  models.parameters = ClassifierParameters(m.model(), m.dataset());
  CheckCost({models}, "model.hidden",
            "reference_models, model.hidden, training.epochs or dataset.pool_size", add);
}

constexpr uint32_t kMaxSequenceTokens = 1024;
constexpr uint32_t kMaxDocumentPool = 1'000'000;

// Membership of documents: the corpus, the language model and its recipe;
// the dataset's fields do not apply.
void ValidateDocuments(const v1::MembershipAudit& m, const AddProblem& add) {
  if (m.has_dataset()) add("dataset", "not used with documents (set documents.corpus)");
  if (m.has_model()) add("model", "not used with documents (set documents.model)");
  if (m.has_training()) add("training", "not used with documents (set documents.training)");
  const v1::MembershipDocuments& d = m.documents();
  const v1::TokenizerSpec& tokens = d.model().tokenizer();
  if (m.has_target() && tokens.kind() == kSentencePieceTokens && tokens.model_path().empty()) {
    add("documents.model.tokenizer.model_path",
        "required with a target: the team's model reads its tokenizer's file");
  }
  const AddProblem in_documents = [&](const std::string& field, std::string rule) {
    add("documents." + field, std::move(rule));
  };
  bool ok = CheckLength("corpus.path", d.corpus().path(), kMaxPathBytes, in_documents);
  ok &= CheckLength("corpus.text", d.corpus().text(), kMaxTextBytes, in_documents);
  ok &= CheckLength("model.torchscript_path", d.model().torchscript_path(), kMaxPathBytes,
                    in_documents);
  if (!ok) return;
  CheckCorpus(d.corpus(), in_documents);
  CheckLanguageModel("model.", d.model(), {}, in_documents);
  CheckLmTraining(d.training(), in_documents);
  if (d.training().window() != 0) {
    in_documents("training.window",
                 "must be unset: each sequence is one training row (set sequence_tokens)");
  }
  if (d.sequence_tokens() < 2 || d.sequence_tokens() > kMaxSequenceTokens) {
    in_documents("sequence_tokens", absl::StrCat("must be in [2, ", kMaxSequenceTokens, "] (got ",
                                                 d.sequence_tokens(), ")"));
  }
  if (d.pool_size() < 8 || d.pool_size() > kMaxDocumentPool) {
    in_documents("pool_size",
                 absl::StrCat("must be in [8, ", kMaxDocumentPool, "] (got ", d.pool_size(), ")"));
  }
  if (m.population_size() > kMaxDocumentPool) {
    add("population_size",
        absl::StrCat("must be <= ", kMaxDocumentPool, " (got ", m.population_size(), ")"));
  }
}

// An already-trained target: its files recorded by ReadFiles, and scored as
// model N, so target_model cannot pick another.
void ValidateTarget(const v1::MembershipAudit& m, const AddProblem& add) {
  const v1::TargetModelSpec& t = m.target();
  CheckLength("target.torchscript_path", t.torchscript_path(), kMaxPathBytes, add);
  CheckLength("target.members_path", t.members_path(), kMaxPathBytes, add);
  if (t.torchscript_path().empty()) add("target.torchscript_path", "required with a target");
  if (t.members_path().empty()) add("target.members_path", "required with a target");
  if (t.content_hash().empty() || t.members() == 0) {
    add("target.content_hash", kNotRecorded);
  }
  if (m.has_target_model()) {
    add("target_model", "must be unset with a target: the target is the given model");
  }
}

// A dataset, a classifier and its SGD recipe. Returns the dataset's rows
// (0 when unknown).
uint32_t ValidateDatasetRecipe(const v1::MembershipAudit& m, const AddProblem& add) {
  const uint32_t rows = CheckDataset(m.dataset(), add);
  if (rows > 0 && (m.dataset().pool_size() < 8 || m.dataset().pool_size() > rows)) {
    add("dataset.pool_size", absl::StrCat("must be in [8, ", rows, "], the dataset's rows (got ",
                                          m.dataset().pool_size(), ")"));
  }
  // Membership's "mlp" without hidden layers has always meant logistic
  // regression (the default hidden is []).
  v1::ModelSpec model = m.model();
  if (model.architecture() == "mlp" && model.hidden().empty()) model.set_architecture("logreg");
  CheckImageModel(model,
                  {engine::ModelKind::kLogReg, engine::ModelKind::kMlp, engine::ModelKind::kCnn,
                   engine::ModelKind::kTorchScript},
                  /*dropout=*/false, add);
  CheckModelFitsDataset(m.model(), m.dataset(), add);
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
  return rows;
}

void ValidateMembership(const v1::MembershipAudit& m, std::vector<SpecProblem>* problems) {
  const size_t before = problems->size();
  const AddProblem add = [&](const std::string& field, std::string rule) {
    problems->push_back({absl::StrCat("membership.", field), std::move(rule)});
  };
  uint32_t rows = 0;  // the dataset's, when known
  if (m.has_documents()) {
    ValidateDocuments(m, add);
  } else {
    rows = ValidateDatasetRecipe(m, add);
  }
  const uint32_t n = m.reference_models();
  if (n < 4 || n % 2 != 0 || n > kMaxReferenceModels) {
    add("reference_models",
        absl::StrCat("must be an even number in [4, ", kMaxReferenceModels, "] (got ", n, ")"));
  }
  const bool attacks_ok = CheckListSize("attacks", m.attacks_size(), 0, kMaxNameLists, add);
  std::string population_attack;  // the first named attack that needs one
  for (int i = 0; attacks_ok && i < m.attacks_size(); ++i) {
    const membership::Attack* attack = membership::FindAttack(m.attacks(i));
    if (attack == nullptr) {
      add(absl::StrCat("attacks[", i, "]"),
          absl::StrCat("unknown attack ", QuoteValue(m.attacks(i)),
                       "; known: ", absl::StrJoin(membership::AttackNames(), ", ")));
      continue;
    }
    if (attack->needs_documents && !m.has_documents()) {
      add(absl::StrCat("attacks[", i, "]"),
          absl::StrCat(QuoteValue(m.attacks(i)), " scores documents only (set documents)"));
    }
    if (attack->needs_population && population_attack.empty()) population_attack = m.attacks(i);
    if (const uint32_t needs = attack->min_reference_models; n >= 4 && n < needs) {
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
  if (!population_attack.empty() && m.population_size() == 0) {
    add("population_size", absl::StrCat("must be >= 1 when the \"", population_attack,
                                        "\" attack is requested (got 0)"));
  }
  // Only when the pool itself fits: one oversized pool is one problem.
  if (rows > 0 && m.dataset().pool_size() <= rows &&
      uint64_t{m.dataset().pool_size()} + m.population_size() > rows) {
    add("population_size",
        absl::StrCat("pool_size + population_size must be <= ", rows, ", the dataset's rows (got ",
                     m.dataset().pool_size(), " + ", m.population_size(), ")"));
  }
  if (m.has_target()) ValidateTarget(m, add);
  if (m.has_target_model() && !m.has_target() && m.target_model() >= n) {
    add("target_model",
        absl::StrCat("must be < reference_models = ", n, " (got ", m.target_model(), ")"));
  }
  // The estimate needs every field in range: only then is it the audit's.
  if (problems->size() == before) CheckMembershipCost(m, add);
}

void ApplyDocumentDefaults(v1::MembershipDocuments* d) {
  v1::CorpusSpec* c = d->mutable_corpus();
  if (c->name().empty()) c->set_name("fortunes");
  if (c->text().empty() && c->max_chars() == 0) c->set_max_chars(1'000'000);
  v1::LanguageModelSpec* model = d->mutable_model();
  if (model->architecture().empty()) model->set_architecture("transformer");
  ApplyLanguageModelDefaults(model);
  v1::LanguageModelTraining* t = d->mutable_training();
  if (t->optimizer().empty()) t->set_optimizer("adam");
  if (t->learning_rate() == 0) t->set_learning_rate(3e-3);
  if (t->epochs() == 0) t->set_epochs(1);
  if (t->batch_size() == 0) t->set_batch_size(32);
  if (d->sequence_tokens() == 0) d->set_sequence_tokens(64);
  if (d->pool_size() == 0) d->set_pool_size(1000);
}

class Membership final : public KindHandler {
 public:
  void ReadFiles(v1::AuditSpec* spec, std::vector<SpecProblem>* problems) const override {
    v1::MembershipAudit* m = spec->mutable_membership();
    if (m->has_documents()) {
      if (m->documents().model().has_tokenizer()) {
        ReadTokenizerFile(m->mutable_documents()->mutable_model()->mutable_tokenizer(),
                          "membership.documents.model.tokenizer", problems);
      }
      if (problems->empty() && m->has_target()) {
        if (absl::Status s =
                ResolveDocumentsTarget(m->mutable_target(), "membership.target").status();
            !s.ok()) {
          problems->push_back(ProblemOf(s));
        }
      }
      return;
    }
    ReadDatasetFiles(m->mutable_dataset(), "membership.dataset", problems);
    if (problems->empty() && m->has_target()) {
      if (absl::Status s =
              ResolveTarget(m->mutable_target(), m->dataset().rows(), "membership.target");
          !s.ok()) {
        problems->push_back(ProblemOf(s));
      }
    }
  }

  void ApplyDefaults(v1::AuditSpec* spec) const override {
    v1::MembershipAudit* m = spec->mutable_membership();
    if (m->has_documents()) {
      ApplyDocumentDefaults(m->mutable_documents());
    } else {
      if (m->model().architecture().empty()) m->mutable_model()->set_architecture("mlp");
      v1::TrainingSpec* t = m->mutable_training();
      if (t->optimizer().empty()) t->set_optimizer("sgd");
      if (t->batch_size() == 0) t->set_batch_size(64);
    }
    // Rows outside the pool: RMIA's population comes from them.
    const uint32_t rows = DatasetRows(m->dataset());
    const uint32_t left = rows > membership::PoolSize(*m) ? rows - membership::PoolSize(*m) : 0;
    if (m->attacks().empty()) {
      // An attack undefined at this many reference models, or RMIA where
      // the pool takes every row, is left out; the results' warnings name it.
      for (const membership::Attack& a : membership::Attacks()) {
        if (membership::IsDefault(a, *m) &&
            membership::FitOfDefault(a, m->reference_models(), rows, membership::PoolSize(*m)) ==
                membership::DefaultFit::kRuns) {
          m->add_attacks(membership::AttackName(a.id));
        }
      }
    }
    if (m->fpr_points().empty()) {
      m->add_fpr_points(0.01);
      m->add_fpr_points(0.001);
    }
    const bool needs_population =
        std::any_of(m->attacks().begin(), m->attacks().end(), [](const std::string& name) {
          const membership::Attack* a = membership::FindAttack(name);
          return a != nullptr && a->needs_population;
        });
    if (m->population_size() == 0 && needs_population) {
      // 1000 rows, or what a smaller dataset leaves beside the pool.
      m->set_population_size(rows == 0 ? 1000 : std::min<uint32_t>(1000, left));
    }
    // Last: auto weighs the recipe as defaulted above.
    v1::Resources* r = spec->mutable_resources();
    if (r->models_per_task() == 0) r->set_models_per_task(AutoModelsPerTask(*spec));
  }

  void Validate(const v1::AuditSpec& spec, std::vector<SpecProblem>* problems) const override {
    ValidateMembership(spec.membership(), problems);
  }

  // Per attack: "<attack>.auc", "<attack>.balanced_accuracy" and
  // "<attack>.tpr_at_fpr_<fpr>" per FPR point, each with its re-run interval.
  std::vector<GateMetric> GateMetrics(const v1::AuditSpec& spec) const override {
    std::vector<GateMetric> out;
    for (const std::string& name : spec.membership().attacks()) {
      const v1::MembershipAttack id = membership::AttackByName(name);
      const auto attack = [id](const v1::AuditResults& r) -> const v1::AttackResult* {
        for (const v1::AttackResult& a : r.attacks()) {
          if (a.attack() == id) return &a;
        }
        return nullptr;
      };
      const std::string models = "reference models";
      using A = v1::AttackResult;
      out.push_back(RecordMetric<A>(name + ".auc", models, attack, &A::auc, &A::auc_rerun_low,
                                    &A::auc_rerun_high, &A::auc_low, &A::auc_high));
      out.push_back(RecordMetric<A>(name + ".balanced_accuracy", models, attack,
                                    &A::balanced_accuracy, &A::balanced_accuracy_rerun_low,
                                    &A::balanced_accuracy_rerun_high, &A::balanced_accuracy_low,
                                    &A::balanced_accuracy_high));
      for (const double fpr : spec.membership().fpr_points()) {
        out.push_back({absl::StrFormat("%s.tpr_at_fpr_%g", name, fpr), models,
                       [attack, fpr](const v1::AuditResults& r) -> std::optional<MetricReading> {
                         const v1::AttackResult* a = attack(r);
                         if (a == nullptr) return std::nullopt;
                         for (const v1::OperatingPoint& p : a->operating_points()) {
                           if (p.fpr_target() != fpr) continue;
                           return ReadingOf(p.tpr(), p.tpr_rerun_low(), p.tpr_rerun_high(),
                                            p.tpr_low(), p.tpr_high());
                         }
                         return std::nullopt;
                       }});
      }
    }
    return out;
  }

  std::vector<PlannedTask> Plan(const v1::AuditSpec& spec) const override {
    std::vector<PlannedTask> tasks;
    const v1::MembershipAudit& m = spec.membership();
    // The keep-matrix is rebuilt here only to count each model's training set
    // exactly, so progress totals match the steps workers report. A task's
    // steps are its models' steps summed (a packed step of K models counts K),
    // so the audit's total does not depend on models_per_task.
    const KeepMatrix keep =
        BuildKeepMatrix(spec.seed(), m.reference_models(), membership::PoolSize(m));
    const uint64_t batch = membership::BatchSize(m);
    for (uint32_t t = 0; t < membership::TaskCount(spec); ++t) {
      const membership::ModelRange models = membership::TaskModels(spec, t);
      PlannedTask task{membership::kModelRole, t, 0, models.first, models.count};
      for (uint32_t i = models.first; i < models.end(); ++i) {
        uint64_t train_size = 0;
        for (uint32_t j = 0; j < keep.examples; ++j) train_size += keep.in(i, j);
        task.steps_total += StepsPerEpoch(train_size, batch) * membership::Epochs(m);
      }
      tasks.push_back(std::move(task));
    }
    if (m.has_target()) {
      // Evaluating the given model is one step of work; it trains nothing,
      // so no stored model can stand in for it (models = 0).
      tasks.push_back({membership::kTargetRole, 0, 1, membership::TargetRun(m), 0});
    }
    return tasks;
  }

  bool PacksModels() const override { return true; }
};

}  // namespace

}  // namespace memaudit::spec

namespace memaudit {

template <>
const spec::KindHandler& HandlerOfKind<spec::KindHandler, v1::AuditSpec::kMembership>() {
  static const spec::Membership handler;
  return handler;
}

}  // namespace memaudit
