#include "audits/unlearning/spec.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "audits/unlearning/signals.h"
#include "spec/dataset_facts.h"
#include "spec/dataset_rules.h"
#include "spec/spec_rules.h"

namespace memaudit::spec {
namespace {

constexpr uint32_t kMaxOriginals = 1000;
constexpr uint32_t kMaxUnlearned = 10000;
// Attack rows per side; bounds the scorer's memory and fitting time.
constexpr uint64_t kMaxRowsPerSide = 1'000'000;
constexpr uint32_t kClasses = 10;  // Fashion-MNIST
constexpr uint32_t kMinPool = 20;

// Each side's originals and their unlearned children: models x parameters x
// steps against the limits of spec_rules.h. SISA counts every shard of an
// original and, per child, the shards its deletions touch retrained from
// their first slice (an upper bound).
void CheckUnlearningCost(const v1::UnlearningAudit& u, const AddProblem& add) {
  const double parameters = ClassifierParameters(u.model(), u.dataset());
  const uint64_t batch = std::max<uint32_t>(u.training().batch_size(), 1);
  const uint64_t epochs = u.training().epochs();
  std::vector<ModelGroup> groups;
  for (const bool target : {false, true}) {
    const v1::UnlearningSide& s = unlearning::SideSpec(u, target);
    const double originals = s.originals(), children = originals * s.unlearned();
    if (u.method() != "sisa") {
      const uint64_t child =
          s.samples() - unlearning::DeletedPerChild(u) + unlearning::AddedPerChild(u);
      groups.push_back({originals, parameters,
                        static_cast<double>(unlearning::EpochSteps(s.samples(), batch, epochs))});
      groups.push_back({children, parameters,
                        static_cast<double>(unlearning::EpochSteps(child, batch, epochs))});
      continue;
    }
    const uint64_t shards = std::max<uint32_t>(u.sisa().shards(), 1);
    const double slices = std::max<uint32_t>(u.sisa().slices(), 1);
    const double shard_steps = slices * static_cast<double>(unlearning::EpochSteps(
                                            (s.samples() + shards - 1) / shards, batch, epochs));
    const double touched = std::min<uint64_t>(unlearning::DeletedPerChild(u), shards);
    groups.push_back({originals * static_cast<double>(shards), parameters, shard_steps});
    groups.push_back({children * touched, parameters, shard_steps});
  }
  CheckCost(groups, "model.hidden",
            "shadow/target originals, unlearned or samples, training.epochs or model.hidden", add);
}

void ValidateSide(const v1::UnlearningAudit& u, bool target,
                  const std::function<void(std::string, std::string)>& add) {
  const std::string name = target ? "target" : "shadow";
  const v1::UnlearningSide& s = unlearning::SideSpec(u, target);
  const unlearning::SidePools pools = unlearning::PoolsFor(u, target);
  if (s.originals() == 0 || s.originals() > kMaxOriginals) {
    add(name + ".originals",
        absl::StrCat("must be in [1, ", kMaxOriginals, "] (got ", s.originals(), ")"));
  }
  if (s.unlearned() == 0 || s.unlearned() > kMaxUnlearned) {
    add(name + ".unlearned",
        absl::StrCat("must be in [1, ", kMaxUnlearned, "] (got ", s.unlearned(), ")"));
  }
  if (s.samples() < 2) {
    add(name + ".samples", absl::StrCat("must be >= 2 (got ", s.samples(), ")"));
  } else if (s.samples() > pools.positive.size()) {
    add(name + ".samples",
        absl::StrCat("must be <= the side's positive pool, 80% of dataset.pool_size / 2 = ",
                     pools.positive.size(), " (got ", s.samples(), ")"));
  }
  if (u.method() == "sisa" && u.sisa().shards() > 0 && u.sisa().slices() > 0 &&
      static_cast<uint64_t>(s.samples()) <
          static_cast<uint64_t>(u.sisa().shards()) * u.sisa().slices()) {
    add(name + ".samples", absl::StrCat("must be >= sisa.shards x sisa.slices = ",
                                        u.sisa().shards() * u.sisa().slices(),
                                        " so every slice holds a sample (got ", s.samples(), ")"));
  }
  const uint32_t g = unlearning::DeletedPerChild(u);
  if (u.deletion() != "single" && s.samples() >= 2 && g >= s.samples()) {
    add("group_size", absl::StrCat("must be <= ", name, ".samples - 1 = ", s.samples() - 1,
                                   " so every unlearned model keeps a sample (got ", g, ")"));
  }
  const uint64_t rows = 2ull * s.originals() * s.unlearned() * unlearning::PositivesPerChild(u);
  if (rows > kMaxRowsPerSide) {
    add(name + ".unlearned", absl::StrCat("originals x unlearned x 2 x positives per model = ",
                                          rows, " attack rows; must be <= ", kMaxRowsPerSide));
  }
}

}  // namespace

void ApplyUnlearningDefaults(v1::UnlearningAudit* u) {
  v1::DatasetSpec* d = u->mutable_dataset();
  // 6000 rows, or all of a smaller dataset.
  if (d->pool_size() == 0) d->set_pool_size(std::min<uint32_t>(6000, DatasetRows(*d)));
  v1::ModelSpec* m = u->mutable_model();
  if (m->architecture().empty()) m->set_architecture("logreg");
  v1::UnlearningTraining* t = u->mutable_training();
  if (t->optimizer().empty()) t->set_optimizer("sgd");
  if (t->learning_rate() == 0) t->set_learning_rate(t->optimizer() == "adam" ? 0.001 : 0.05);
  if (t->optimizer() == "momentum" && t->momentum() == 0) t->set_momentum(0.9);
  if (t->epochs() == 0) t->set_epochs(10);
  if (t->batch_size() == 0) t->set_batch_size(64);
  if (u->method().empty()) u->set_method("scratch");
  if (u->method() == "sisa") {
    if (u->sisa().shards() == 0) u->mutable_sisa()->set_shards(5);
    if (u->sisa().slices() == 0) u->mutable_sisa()->set_slices(1);
  }
  for (v1::UnlearningSide* s : {u->mutable_shadow(), u->mutable_target()}) {
    if (s->originals() == 0) s->set_originals(10);
    if (s->samples() == 0) s->set_samples(1000);
    if (s->unlearned() == 0) s->set_unlearned(20);
  }
  if (u->deletion().empty()) u->set_deletion("single");
  if (u->group_size() == 0) u->set_group_size(1);
  if (u->seed_policy().empty()) u->set_seed_policy("shared");
  if (u->features().empty()) {
    for (const std::string& f : unlearning::FeatureNames()) u->add_features(f);
  }
  if (u->attack_classifiers().empty()) {
    for (const std::string& c : unlearning::ClassifierNames()) u->add_attack_classifiers(c);
  }
  if (u->defenses().empty()) u->add_defenses("none");
  if (u->has_dp_sgd()) {
    v1::DpSgdSpec* dp = u->mutable_dp_sgd();
    if (dp->noise_multiplier() == 0) dp->set_noise_multiplier(1.0);
    if (dp->clip_norm() == 0) dp->set_clip_norm(1.0);
    if (dp->delta() == 0) dp->set_delta(1e-5);
  }
}

namespace {

// dataset, model and training: the recipe every model trains with.
void ValidateRecipe(const v1::UnlearningAudit& u, const AddProblem& add) {
  const v1::DatasetSpec& d = u.dataset();
  const uint32_t rows = CheckDataset(d, add);
  if (rows > 0 && (d.pool_size() < kMinPool || d.pool_size() > rows)) {
    add("dataset.pool_size", absl::StrCat("must be in [", kMinPool, ", ", rows,
                                          "], the dataset's rows (got ", d.pool_size(), ")"));
  }

  CheckImageModel(u.model(),
                  {engine::ModelKind::kLogReg, engine::ModelKind::kMlp, engine::ModelKind::kCnn,
                   engine::ModelKind::kTorchScript},
                  /*dropout=*/true, add);
  CheckModelFitsDataset(u.model(), d, add);

  const v1::UnlearningTraining& t = u.training();
  if (!OneOf(t.optimizer(), {"sgd", "momentum", "adam"})) {
    add("training.optimizer", absl::StrCat("must be \"sgd\", \"momentum\" or \"adam\" (got ",
                                           QuoteValue(t.optimizer()), ")"));
  }
  CheckLearningRate(t.learning_rate(), add);
  CheckMomentum(t.momentum(), add);
  CheckWeightDecay(t.weight_decay(), add);
  CheckEpochs(t.epochs(), add);
  CheckBatchSize(t.batch_size(), add);
}

// method and sisa: how a deletion is unlearned.
void ValidateMethod(const v1::UnlearningAudit& u, const AddProblem& add) {
  if (u.method() == "sisa") {
    if (u.sisa().shards() == 0 || u.sisa().shards() > 1000) {
      add("sisa.shards", absl::StrCat("must be in [1, 1000] (got ", u.sisa().shards(), ")"));
    }
    if (u.sisa().slices() == 0 || u.sisa().slices() > 100) {
      add("sisa.slices", absl::StrCat("must be in [1, 100] (got ", u.sisa().slices(), ")"));
    }
  } else if (u.method() == "scratch") {
    if (u.sisa().shards() != 0 || u.sisa().slices() != 0) {
      add("sisa", "applies to method \"sisa\" only");
    }
  } else {
    add("method",
        absl::StrCat("must be \"scratch\" or \"sisa\" (got ", QuoteValue(u.method()), ")"));
  }
}

// deletion, group_size, both sides, their pools and seed_policy: what is deleted,
// from where, and with which seeds.
void ValidateDeletion(const v1::UnlearningAudit& u, const AddProblem& add) {
  CheckOneOf("deletion", u.deletion(), {"single", "group", "intermediate", "online", "remaining"},
             add);
  if (u.deletion() == "single" && u.group_size() != 1) {
    add("group_size",
        absl::StrCat("must be 1 with deletion \"single\" (got ", u.group_size(), ")"));
  }
  ValidateSide(u, /*target=*/false, add);
  ValidateSide(u, /*target=*/true, add);
  // Both sides draw negatives (and online's added samples) from pools of the
  // same size, so one check covers both.
  const unlearning::SidePools pools = unlearning::PoolsFor(u, false);
  const uint32_t positives = unlearning::PositivesPerChild(u);
  if (positives > pools.negative.size()) {
    add("group_size", absl::StrCat(positives,
                                   " positives per unlearned model need as many "
                                   "negatives, but each side's negative pool holds ",
                                   pools.negative.size(), " (raise dataset.pool_size)"));
  }
  if (unlearning::AddedPerChild(u) > pools.replacement.size()) {
    add("group_size",
        absl::StrCat("online deletion adds ", unlearning::AddedPerChild(u),
                     " samples per unlearned model, but each side's pool of new samples holds ",
                     pools.replacement.size(), " (raise dataset.pool_size)"));
  }

  if (!OneOf(u.seed_policy(), {"shared", "independent"})) {
    add("seed_policy", absl::StrCat("must be \"shared\" or \"independent\" (got ",
                                    QuoteValue(u.seed_policy()), ")"));
  } else if (u.seed_policy() == "independent" && u.method() == "sisa") {
    add("seed_policy",
        "\"independent\" applies to method \"scratch\" only (SISA retrains a shard from its own "
        "slice checkpoint)");
  }
}

// features, attack_classifiers and defenses: the attack and what the release hides.
void ValidateAttack(const v1::UnlearningAudit& u, const AddProblem& add) {
  auto check_names = [&](const char* field,
                         const google::protobuf::RepeatedPtrField<std::string>& values,
                         const std::vector<std::string>& known) {
    std::set<std::string> seen;
    if (!CheckListSize(field, values.size(), 0, kMaxNameLists, add)) return;
    for (int i = 0; i < values.size(); ++i) {
      const std::string path = absl::StrCat(field, "[", i, "]");
      if (!OneOf(values.Get(i), known)) {
        add(path, absl::StrCat("unknown ", QuoteValue(values.Get(i)),
                               "; known: ", absl::StrJoin(known, ", ")));
      } else if (!seen.insert(values.Get(i)).second) {
        add(path, absl::StrCat(QuoteValue(values.Get(i)), " is listed twice"));
      }
    }
  };
  check_names("features", u.features(), unlearning::FeatureNames());
  check_names("attack_classifiers", u.attack_classifiers(), unlearning::ClassifierNames());
  std::set<std::string> defenses;
  if (!CheckListSize("defenses", u.defenses_size(), 0, kMaxNameLists, add)) return;
  for (int i = 0; i < u.defenses_size(); ++i) {
    const std::string& d = u.defenses(i);
    const std::string path = absl::StrCat("defenses[", i, "]");
    const uint32_t k = unlearning::TopK(d);
    if (d != "none" && d != "label_only" && d != "temperature" && k == 0) {
      add(path, absl::StrCat("unknown ", QuoteValue(d),
                             "; known: none, top_1 ... top_9, label_only, temperature"));
    } else if (k >= kClasses) {
      add(path, absl::StrCat("top_k needs k in [1, ", kClasses - 1, "] (got ", k, ")"));
    } else if (!defenses.insert(d).second) {
      add(path, absl::StrCat(QuoteValue(d), " is listed twice"));
    }
  }
}

}  // namespace

void ValidateUnlearning(const v1::UnlearningAudit& u, std::vector<SpecProblem>* problems) {
  const AddProblem add = [&](const std::string& field, std::string rule) {
    problems->push_back({absl::StrCat("unlearning.", field), std::move(rule)});
  };
  const size_t before = problems->size();
  ValidateRecipe(u, add);
  ValidateMethod(u, add);
  // The sides' pools are built from dataset.pool_size: only once it is in range.
  const uint32_t pool = u.dataset().pool_size();
  if (pool >= kMinPool && pool <= DatasetRows(u.dataset())) ValidateDeletion(u, add);
  ValidateAttack(u, add);
  if (u.has_dp_sgd())
    CheckDpSgd(u.dp_sgd(), "", DpSgdRules{/*zero_noise=*/false, /*target_epsilon=*/true}, add);
  // The estimate needs every field in range: only then is it the audit's.
  if (problems->size() == before) CheckUnlearningCost(u, add);
}

uint64_t UnlearningTaskSteps(const v1::AuditSpec& spec, bool target, uint32_t i) {
  return unlearning::TaskWorkFor(spec, target, i).steps;
}

namespace {

class Unlearning final : public KindHandler {
 public:
  void ReadFiles(v1::AuditSpec* spec, std::vector<SpecProblem>* problems) const override {
    ReadDatasetFiles(spec->mutable_unlearning()->mutable_dataset(), "unlearning.dataset", problems);
  }

  void ApplyDefaults(v1::AuditSpec* spec) const override {
    ApplyUnlearningDefaults(spec->mutable_unlearning());
  }

  void Validate(const v1::AuditSpec& spec, std::vector<SpecProblem>* problems) const override {
    ValidateUnlearning(spec.unlearning(), problems);
  }

  // Per attack cell "<defense>.<feature>.<classifier>": its ".auc" (feature
  // "baseline" too), ".deg_count" and ".deg_rate" (not the baseline's),
  // each with its re-run interval.
  std::vector<GateMetric> GateMetrics(const v1::AuditSpec& spec) const override {
    const v1::UnlearningAudit& u = spec.unlearning();
    std::vector<GateMetric> out;
    std::vector<std::string> features = {unlearning::kBaselineFeature};
    features.insert(features.end(), u.features().begin(), u.features().end());
    for (const std::string& defense : u.defenses()) {
      for (const std::string& feature : features) {
        for (const std::string& classifier : u.attack_classifiers()) {
          const auto cell = [=](const v1::AuditResults& r) -> const v1::UnlearningAttackResult* {
            if (!r.has_unlearning()) return nullptr;
            for (const v1::UnlearningAttackResult& a : r.unlearning().attacks()) {
              if (a.defense() == defense && a.feature() == feature &&
                  a.classifier() == classifier) {
                return &a;
              }
            }
            return nullptr;
          };
          const std::string name = absl::StrCat(defense, ".", feature, ".", classifier);
          const std::string originals = "target original models";
          using R = v1::UnlearningAttackResult;
          out.push_back(RecordMetric<R>(name + ".auc", originals, cell, &R::auc, &R::auc_rerun_low,
                                        &R::auc_rerun_high, &R::auc_low, &R::auc_high));
          if (feature == unlearning::kBaselineFeature) continue;
          out.push_back(RecordMetric<R>(name + ".deg_count", originals, cell, &R::deg_count,
                                        &R::deg_count_rerun_low, &R::deg_count_rerun_high,
                                        &R::deg_count_low, &R::deg_count_high));
          out.push_back(RecordMetric<R>(name + ".deg_rate", originals, cell, &R::deg_rate,
                                        &R::deg_rate_rerun_low, &R::deg_rate_rerun_high,
                                        &R::deg_rate_low, &R::deg_rate_high));
        }
      }
    }
    return out;
  }

  std::vector<PlannedTask> Plan(const v1::AuditSpec& spec) const override {
    // One task per original model and side; it trains the original, then its
    // unlearned children from it (audits/unlearning/signals.h).
    std::vector<PlannedTask> tasks;
    for (const bool target : {false, true}) {
      const v1::UnlearningSide& side =
          target ? spec.unlearning().target() : spec.unlearning().shadow();
      for (uint32_t i = 0; i < side.originals(); ++i) {
        tasks.push_back({target ? "target_original" : "shadow_original", i,
                         UnlearningTaskSteps(spec, target, i)});
      }
    }
    return tasks;
  }
};

}  // namespace

}  // namespace memaudit::spec

namespace memaudit {

template <>
const spec::KindHandler& HandlerOfKind<spec::KindHandler, v1::AuditSpec::kUnlearning>() {
  static const spec::Unlearning handler;
  return handler;
}

}  // namespace memaudit
