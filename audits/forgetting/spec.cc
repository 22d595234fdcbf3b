#include "audits/forgetting/spec.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "audits/exposure/spec.h"
#include "audits/forgetting/attacks.h"
#include "audits/forgetting/signals.h"
#include "audits/forgetting/spec_construction.h"
#include "spec/dataset_facts.h"
#include "spec/dataset_rules.h"
#include "spec/spec_rules.h"

namespace memaudit::spec {
namespace {

constexpr uint64_t kMaxSteps = 10'000'000;
constexpr int kMaxEvalPoints = 64;  // bounds the steps_since_injection label
// LM canaries (measured in docs/audits/forgetting.md).
constexpr uint64_t kDefaultCorpusChars = 1'000'000;
constexpr uint64_t kDefaultCanaryStepsBefore = 1000;
constexpr uint64_t kDefaultCanaryStepsAfter = 2000;
constexpr uint32_t kDefaultCanaryPasses = 4;
// Ranks are uint64 and the exact search walks a trie.
constexpr double kMaxCanaryLog2Space = 62;
constexpr uint64_t kMaxCorpusChars = 1'000'000'000;

}  // namespace

std::vector<uint64_t> DefaultForgettingEvalPoints(uint64_t steps_after) {
  std::vector<uint64_t> out = {0};
  for (uint64_t decade = 1; decade <= steps_after && decade < kMaxSteps * 10; decade *= 10) {
    for (uint64_t m : {1, 2, 5}) {
      if (decade * m <= steps_after) out.push_back(decade * m);
    }
  }
  if (out.back() != steps_after) out.push_back(steps_after);
  return out;
}

namespace {

// LM canaries: dataset, model and injected stay unset (they describe images).
void ApplyCanaryDefaults(v1::ForgettingAudit* f) {
  v1::ForgettingCanaries* c = f->mutable_canaries();
  v1::CorpusSpec* corpus = c->mutable_corpus();
  if (corpus->text().empty() && corpus->path().empty() && corpus->name().empty()) {
    corpus->set_name("fortunes");
  }
  if (corpus->max_chars() == 0) corpus->set_max_chars(kDefaultCorpusChars);
  v1::LanguageModelSpec* m = c->mutable_model();
  ApplyLanguageModelDefaults(m);
  v1::CanaryFormatSpec* format = c->mutable_canary();
  if (format->prefix().empty()) format->set_prefix("my secret code is ");
  if (format->alphabets().empty() && format->digits() == 0) format->set_digits(5);
  if (c->repeats().empty()) {
    for (uint32_t r : {1, 4, 16, 64}) c->add_repeats(r);
  }
  // 16 + 16 tokens and the newlines fit the default window of 64.
  if (c->has_extractable()) ApplyExtractableDefaults(c->mutable_extractable(), 16);
  if (c->per_group() == 0) c->set_per_group(4);
  if (!c->has_controls()) c->set_controls(8);
  if (c->window() == 0) c->set_window(64);
  if (c->rank_query_budget() == 0) c->set_rank_query_budget(2'000'000);
  v1::ForgettingTraining* t = f->mutable_training();
  if (t->optimizer().empty()) t->set_optimizer("adam");
  if (t->learning_rate() == 0) t->set_learning_rate(t->optimizer() == "adam" ? 2e-3 : 0.05);
  if (t->optimizer() == "momentum" && t->momentum() == 0) t->set_momentum(0.9);
  if (t->batch_size() == 0) t->set_batch_size(32);
  if (t->steps_before_injection() == 0) t->set_steps_before_injection(kDefaultCanaryStepsBefore);
  if (t->steps_after_injection() == 0) t->set_steps_after_injection(kDefaultCanaryStepsAfter);
  if (f->strategy().empty()) f->set_strategy("inject");
  // Poison has no injection passes: the canaries are in the training set.
  if (f->repeats() == 0) f->set_repeats(f->strategy() == "poison" ? 1 : kDefaultCanaryPasses);
  if (f->inject_mode().empty()) f->set_inject_mode("k_steps");
  if (f->trials() == 0) f->set_trials(2);
  if (!f->has_paired()) f->set_paired(true);
  if (f->eval_points().empty()) {
    for (uint64_t p : DefaultForgettingEvalPoints(t->steps_after_injection())) {
      f->add_eval_points(p);
    }
  }
  if (f->attack().empty()) f->set_attack(forgetting::kExposureAttack);
}

}  // namespace

void ApplyForgettingDefaults(v1::ForgettingAudit* f) {
  if (f->has_construction()) {
    ApplyConstructionDefaults(f);
    return;
  }
  if (f->has_canaries()) {
    ApplyCanaryDefaults(f);
    return;
  }
  v1::DatasetSpec* d = f->mutable_dataset();
  v1::InjectedSetSpec* in = f->mutable_injected();
  if (in->size() == 0) in->set_size(100);
  const uint32_t rows = DatasetRows(*d);
  // 10000 clean rows, or what a smaller dataset leaves beside Dp.
  if (d->pool_size() == 0) {
    d->set_pool_size(rows > in->size() ? std::min<uint32_t>(10000, rows - in->size()) : 10000);
  }
  v1::ModelSpec* m = f->mutable_model();
  if (m->architecture().empty()) m->set_architecture("logreg");
  v1::ForgettingTraining* t = f->mutable_training();
  if (t->optimizer().empty()) t->set_optimizer("momentum");
  if (t->learning_rate() == 0) t->set_learning_rate(0.05);
  if (t->optimizer() == "momentum" && t->momentum() == 0) t->set_momentum(0.9);
  if (t->batch_size() == 0) t->set_batch_size(128);
  if (t->steps_before_injection() == 0) t->set_steps_before_injection(1000);
  if (t->steps_after_injection() == 0) t->set_steps_after_injection(1000);
  if (f->strategy().empty()) f->set_strategy("inject");
  if (f->repeats() == 0) f->set_repeats(1);
  if (f->inject_mode().empty()) f->set_inject_mode("k_steps");
  if (in->selection().empty()) in->set_selection("random");
  const bool by_loss = in->selection() != "random";
  // Hardness is a property of the true label, so selection by loss keeps it.
  if (!in->has_flip_labels()) in->set_flip_labels(!by_loss);
  if (by_loss && in->candidates() == 0) {
    const uint64_t left = rows > d->pool_size() ? rows - d->pool_size() : 0;
    in->set_candidates(
        static_cast<uint32_t>(std::min<uint64_t>(10ull * in->size(), std::max<uint64_t>(left, 1))));
  }
  if (by_loss && in->selection_steps() == 0) {
    in->set_selection_steps(t->steps_before_injection() + t->steps_after_injection());
  }
  if (f->trials() == 0) f->set_trials(3);
  if (!f->has_paired()) f->set_paired(true);
  if (f->eval_points().empty()) {
    for (uint64_t p : DefaultForgettingEvalPoints(t->steps_after_injection())) {
      f->add_eval_points(p);
    }
  }
  if (f->attack().empty()) f->set_attack(forgetting::DefaultAttack().name);
  if (forgetting::LiraAttack(*f) && f->reference_models() == 0) f->set_reference_models(4);
  if (f->fpr() == 0) f->set_fpr(0.1);
}

namespace {

using AddFn = AddProblem;

// A classifier dataset: dataset, Dp, model, optimizer, strategy and attack.
void ValidateImages(const v1::ForgettingAudit& f, const AddFn& add) {
  const v1::DatasetSpec& d = f.dataset();
  const uint32_t rows = CheckDataset(d, add);
  const v1::InjectedSetSpec& in = f.injected();
  const bool by_loss = forgetting::SelectsByLoss(f);
  const uint64_t drawn = static_cast<uint64_t>(d.pool_size()) + in.size();
  if (rows > 0 && (d.pool_size() < 8 || drawn > rows)) {
    add("dataset.pool_size",
        absl::StrCat("must be in [8, ", rows, " - injected.size], from the dataset's ", rows,
                     " rows (got ", d.pool_size(), ")"));
  }
  if (!OneOf(in.selection(), {"random", "easy", "medium", "hard"})) {
    add("injected.selection", absl::StrCat("must be \"random\", \"easy\", \"medium\" or "
                                           "\"hard\" (got ",
                                           QuoteValue(in.selection()), ")"));
  } else if (by_loss) {
    if (in.candidates() < in.size() ||
        (rows > 0 && static_cast<uint64_t>(d.pool_size()) + in.candidates() > rows)) {
      add("injected.candidates", absl::StrCat("must be in [injected.size, ", rows,
                                              " - dataset.pool_size] (got ", in.candidates(), ")"));
    }
    if (in.selection_steps() == 0 || in.selection_steps() > kMaxSteps) {
      add("injected.selection_steps",
          absl::StrCat("must be in [1, ", kMaxSteps, "] (got ", in.selection_steps(), ")"));
    }
    if (in.flip_labels()) {
      add("injected.flip_labels", absl::StrCat("must be false with selection \"", in.selection(),
                                               "\": hardness is the loss of the true label"));
    }
  } else {
    if (in.candidates() != 0) {
      add("injected.candidates", "applies to selection easy, medium or hard only");
    }
    if (in.selection_steps() != 0) {
      add("injected.selection_steps", "applies to selection easy, medium or hard only");
    }
  }
  if (in.size() == 0 || in.size() > 10000) {
    add("injected.size", absl::StrCat("must be in [1, 10000] (got ", in.size(), ")"));
  }
  CheckImageModel(f.model(),
                  {engine::ModelKind::kLogReg, engine::ModelKind::kMlp, engine::ModelKind::kCnn,
                   engine::ModelKind::kTorchScript},
                  /*dropout=*/false, add);
  CheckModelFitsDataset(f.model(), d, add);
  const v1::ForgettingTraining& t = f.training();
  if (!OneOf(t.optimizer(), {"sgd", "momentum"})) {
    add("training.optimizer",
        absl::StrCat("must be \"sgd\" or \"momentum\" (got ", QuoteValue(t.optimizer()), ")"));
  }
  if (!OneOf(f.strategy(), {"inject", "poison"})) {
    add("strategy",
        absl::StrCat("must be \"inject\" or \"poison\" (got ", QuoteValue(f.strategy()), ")"));
  }
  if (f.repeats() >= 1 && f.repeats() <= 1000 && f.strategy() == "poison" && f.repeats() != 1) {
    add("repeats", "applies to strategy \"inject\" only (leave it unset with \"poison\")");
  }
  if (!OneOf(f.inject_mode(), {"k_steps", "dup_in_batch"})) {
    add("inject_mode", absl::StrCat("must be \"k_steps\" or \"dup_in_batch\" (got ",
                                    QuoteValue(f.inject_mode()), ")"));
  } else if (f.inject_mode() == "dup_in_batch" && f.repeats() > t.batch_size()) {
    add("inject_mode", absl::StrCat("\"dup_in_batch\" needs repeats <= training.batch_size (",
                                    f.repeats(), " > ", t.batch_size(), ")"));
  }
  CheckOneOf("attack", f.attack(), forgetting::AttackNames(), add);
  if (forgetting::LiraAttack(f)) {
    // Two per side: the median and the std of one value say nothing (a
    // residual about its own median is 0, for the pooled sigma too).
    if (f.reference_models() < 2 || f.reference_models() > 64) {
      add("reference_models", absl::StrCat("must be in [2, 64] (got ", f.reference_models(), ")",
                                           f.attack() == forgetting::kLiraOnlineAttack
                                               ? "; lira_online trains as many IN models again"
                                               : ""));
    }
  } else {
    if (f.reference_models() != 0) {
      add("reference_models", "applies to attack lira_references or lira_online only");
    }
    if (f.lira_per_example_variance()) {
      add("lira_per_example_variance", "applies to attack lira_references or lira_online only");
    }
  }
  if (!(f.fpr() > 0 && f.fpr() < 1)) {
    add("fpr", absl::StrCat("must be in (0, 1) (got ", f.fpr(), ")"));
  }
}

// LM canaries: the canary block; the image fields must stay unset.
void ValidateCanaries(const v1::ForgettingAudit& f, const AddFn& add) {
  if (f.has_dataset()) add("dataset", "not used with canaries (set canaries.corpus)");
  if (f.has_model()) add("model", "not used with canaries (set canaries.model)");
  if (f.has_injected()) add("injected", "not used with canaries (set canaries.repeats)");
  if (f.reference_models() != 0) add("reference_models", "not used with canaries");
  if (f.lira_per_example_variance()) add("lira_per_example_variance", "not used with canaries");
  const v1::ForgettingCanaries& c = f.canaries();
  const v1::CorpusSpec& corpus = c.corpus();
  if (corpus.text().empty() && corpus.path().empty() && corpus.name() != "fortunes") {
    add("canaries.corpus.name", absl::StrCat("must be \"fortunes\" without path or text (got ",
                                             QuoteValue(corpus.name()), ")"));
  }
  if (corpus.max_chars() > kMaxCorpusChars) {
    add("canaries.corpus.max_chars",
        absl::StrCat("must be <= ", kMaxCorpusChars, " (got ", corpus.max_chars(), ")"));
  }
  const v1::LanguageModelSpec& m = c.model();
  // A TorchScript module has its own sizes: layers, units and embedding are
  // not checked (nor used) for it.
  CheckLanguageModel("canaries.model.", m, {4, 4096, 1024}, add);
  const v1::CanaryFormatSpec& format = c.canary();
  double log2_space = 0;
  if (format.alphabets().empty()) {
    if (format.digits() == 0 || format.digits() > 18) {
      add("canaries.canary.digits", absl::StrCat("must be in [1, 18] (got ", format.digits(), ")"));
    }
    log2_space = format.digits() * std::log2(10.0);
  } else {
    if (format.digits() != 0) add("canaries.canary.digits", "set digits or alphabets, not both");
    for (int i = 0; i < format.alphabets_size(); ++i) {
      const size_t size = Utf8Chars(format.alphabets(i)).size();
      if (size == 0) add(absl::StrCat("canaries.canary.alphabets[", i, "]"), "must not be empty");
      log2_space += std::log2(std::max<double>(size, 1));
    }
  }
  if (log2_space > kMaxCanaryLog2Space) {
    add("canaries.canary",
        absl::StrCat("the canary space must hold at most 2^", kMaxCanaryLog2Space, " candidates"));
  }
  for (int i = 0; i < c.repeats_size(); ++i) {
    if (c.repeats(i) == 0 || c.repeats(i) > 10000) {
      add(absl::StrCat("canaries.repeats[", i, "]"),
          absl::StrCat("must be in [1, 10000] (got ", c.repeats(i), ")"));
    }
  }
  if (c.per_group() == 0 || c.per_group() > 64) {
    add("canaries.per_group", absl::StrCat("must be in [1, 64] (got ", c.per_group(), ")"));
  }
  if (c.controls() > 256) {
    add("canaries.controls", absl::StrCat("must be in [0, 256] (got ", c.controls(), ")"));
  }
  // The canary's own line plus the newlines around it must fit one window.
  const size_t line = Utf8Chars(format.prefix()).size() +
                      (format.alphabets().empty() ? format.digits() : format.alphabets_size()) + 2;
  if (c.window() < line || c.window() > 4096) {
    add("canaries.window",
        absl::StrCat("must be in [", line, " (the canary line), 4096] (got ", c.window(), ")"));
  }
  if (c.rank_query_budget() == 0 || c.rank_query_budget() > kMaxQueryBudget) {
    add("canaries.rank_query_budget",
        absl::StrCat("must be in [1, ", kMaxQueryBudget, "] (got ", c.rank_query_budget(), ")"));
  }
  if (c.has_extractable()) {
    const v1::ExtractableSpec& x = c.extractable();
    const AddProblem in_canaries = [&](const std::string& field, std::string rule) {
      add("canaries." + field, std::move(rule));
    };
    // A sequence and the newlines around it fit one window (in the model's
    // tokens: at most as many as characters).
    if (CheckExtractable(x, in_canaries) &&
        uint64_t{x.prefix_chars()} + x.suffix_chars() + 2 > c.window()) {
      add("canaries.extractable.suffix_chars",
          absl::StrCat("prefix_chars + suffix_chars + 2 (the newlines) must fit canaries.window = ",
                       c.window(), " (got ", x.prefix_chars() + x.suffix_chars() + 2, ")"));
    }
  }
  const v1::ForgettingTraining& t = f.training();
  if (!OneOf(t.optimizer(), {"sgd", "momentum", "adam"})) {
    add("training.optimizer", absl::StrCat("must be \"sgd\", \"momentum\" or \"adam\" (got ",
                                           QuoteValue(t.optimizer()), ")"));
  }
  if (!OneOf(f.strategy(), {"inject", "poison"})) {
    add("strategy",
        absl::StrCat("must be \"inject\" or \"poison\" (got ", QuoteValue(f.strategy()), ")"));
  }
  if (f.repeats() >= 1 && f.repeats() <= 1000 && f.strategy() == "poison" && f.repeats() != 1) {
    add("repeats",
        "passes over the canary batch apply to strategy \"inject\" only (leave it unset with "
        "\"poison\")");
  }
  if (f.inject_mode() != "k_steps") {
    add("inject_mode",
        absl::StrCat("canaries support \"k_steps\" only: repeats are passes over the canary "
                     "batch (got ",
                     QuoteValue(f.inject_mode()), ")"));
  }
  if (f.attack() != forgetting::kExposureAttack) {
    add("attack",
        absl::StrCat("must be \"exposure\" with canaries (got ", QuoteValue(f.attack()), ")"));
  }
}

// Strings and lists, checked before anything is computed from them. Returns
// whether all fit.
bool ValidateSizes(const v1::ForgettingAudit& f, const AddFn& add) {
  bool ok = CheckLength("dataset.path", f.dataset().path(), kMaxPathBytes, add);
  ok &= CheckLength("model.torchscript_path", f.model().torchscript_path(), kMaxPathBytes, add);
  const v1::ForgettingCanaries& c = f.canaries();
  ok &= CheckLength("canaries.corpus.path", c.corpus().path(), kMaxPathBytes, add);
  ok &= CheckLength("canaries.model.torchscript_path", c.model().torchscript_path(), kMaxPathBytes,
                    add);
  ok &= CheckLength("canaries.corpus.text", c.corpus().text(), kMaxTextBytes, add);
  ok &= CheckLength("canaries.canary.prefix", c.canary().prefix(), kMaxPrefixBytes, add);
  if (CheckListSize("canaries.canary.alphabets", c.canary().alphabets_size(), 0, kMaxAlphabets,
                    add)) {
    for (int i = 0; i < c.canary().alphabets_size(); ++i) {
      ok &= CheckLength(absl::StrCat("canaries.canary.alphabets[", i, "]"), c.canary().alphabets(i),
                        kMaxAlphabetBytes, add);
    }
  } else {
    ok = false;
  }
  if (f.has_canaries() && (c.repeats().empty() || c.repeats_size() > 16)) {
    add("canaries.repeats", absl::StrCat("must list 1 to 16 groups (got ", c.repeats_size(), ")"));
    ok = false;
  }
  if (f.eval_points().empty() || f.eval_points_size() > kMaxEvalPoints) {
    add("eval_points", absl::StrCat("must list 1 to ", kMaxEvalPoints, " points (got ",
                                    f.eval_points_size(), ")"));
    ok = false;
  }
  return ok;
}

// Every trial's models (TrialSteps counts the steps of all its arms and
// references): trials x parameters x steps against the limits of
// spec_rules.h.
void CheckForgettingCost(const v1::ForgettingAudit& f, const AddFn& add) {
  ModelGroup trials;
  trials.models = f.trials();
  trials.steps = static_cast<double>(forgetting::TrialSteps(f));
  if (f.has_canaries()) {
    const v1::ForgettingCanaries& c = f.canaries();
    const v1::LanguageModelSpec& m = c.model();
    trials.parameters = CharLmParameters(m.architecture(), m.layers(), m.units(), m.embedding(),
                                         LmVocabularyBound(m));
    // Each trial ranks every canary at the checkpoint and in both arms at
    // every evaluation point.
    const double canaries = static_cast<double>(c.repeats_size()) * c.per_group() + c.controls();
    const double rankings = 1.0 + 2.0 * f.eval_points_size();
    trials.steps +=
        rankings * canaries * static_cast<double>(c.rank_query_budget()) / kQueriesPerStep;
    CheckCost({trials}, "canaries.model.units",
              "trials, training.steps_before_injection, training.steps_after_injection, "
              "eval_points, canaries.rank_query_budget or canaries.model.units",
              add);
    return;
  }
  trials.parameters = ClassifierParameters(f.model(), f.dataset());
  CheckCost({trials}, "model.hidden",
            "trials, reference_models, training.steps_before_injection, "
            "training.steps_after_injection or model.hidden",
            add);
}

// Rules both kinds of Dp share.
void ValidateCommon(const v1::ForgettingAudit& f, const AddFn& add) {
  const v1::ForgettingTraining& t = f.training();
  CheckLearningRate(t.learning_rate(), add);
  CheckMomentum(t.momentum(), add);
  CheckWeightDecay(t.weight_decay(), add);
  CheckBatchSize(t.batch_size(), add);
  if (t.steps_before_injection() == 0 || t.steps_before_injection() > kMaxSteps) {
    add("training.steps_before_injection",
        absl::StrCat("must be in [1, ", kMaxSteps, "] (got ", t.steps_before_injection(), ")"));
  }
  if (t.steps_after_injection() == 0 || t.steps_after_injection() > kMaxSteps) {
    add("training.steps_after_injection",
        absl::StrCat("must be in [1, ", kMaxSteps, "] (got ", t.steps_after_injection(), ")"));
  }
  if (f.repeats() == 0 || f.repeats() > 1000) {
    add("repeats", absl::StrCat("must be in [1, 1000] (got ", f.repeats(), ")"));
  }
  if (f.trials() == 0 || f.trials() > 100) {
    add("trials", absl::StrCat("must be in [1, 100] (got ", f.trials(), ")"));
  }
  CheckForgettingEvalPoints(f, add);
}

}  // namespace

void ValidateForgetting(const v1::ForgettingAudit& f, std::vector<SpecProblem>* problems) {
  const AddFn add = [&](const std::string& field, std::string rule) {
    problems->push_back({absl::StrCat("forgetting.", field), std::move(rule)});
  };
  const size_t before = problems->size();
  // An unknown construction has no defaults to size the rest by: its name
  // is the one problem.
  if (f.has_construction() && !KnownConstruction(f.construction(), add)) return;
  if (!ValidateSizes(f, add)) return;
  if (f.has_construction()) {
    ValidateConstruction(f, add);
    return;
  }
  if (f.has_canaries()) {
    ValidateCanaries(f, add);
  } else {
    ValidateImages(f, add);
  }
  ValidateCommon(f, add);
  // The estimate needs every field in range: only then is it the audit's.
  if (problems->size() == before) CheckForgettingCost(f, add);
}

uint64_t ForgettingTrialSteps(const v1::ForgettingAudit& f) { return forgetting::TrialSteps(f); }

void CheckForgettingEvalPoints(const v1::ForgettingAudit& f, const AddProblem& add) {
  const uint64_t last = f.training().steps_after_injection();
  for (int i = 0; i < f.eval_points_size(); ++i) {
    if (i > 0 && f.eval_points(i) <= f.eval_points(i - 1)) {
      add(absl::StrCat("eval_points[", i, "]"), "must be strictly ascending");
    } else if (f.eval_points(i) > last) {
      add(absl::StrCat("eval_points[", i, "]"),
          absl::StrCat("must be <= training.steps_after_injection (", f.eval_points(i), " > ", last,
                       ")"));
    }
  }
}

namespace {

std::vector<GateMetric> ConstructionGateMetrics(const v1::ForgettingAudit& f) {
  using Point = v1::ForgettingConstructionPoint;
  using Field = double (Point::*)() const;
  struct Metric {
    const char* name;
    Field value, low, high;
  };
  std::vector<GateMetric> out;
  for (const uint64_t k : f.eval_points()) {
    for (const Metric& m :
         {Metric{"accuracy", &Point::accuracy, &Point::accuracy_low, &Point::accuracy_high},
          Metric{"precision", &Point::precision, &Point::precision_low, &Point::precision_high}}) {
      out.push_back(RecordMetric<Point>(
          absl::StrCat(m.name, "_at_", k), "trials",
          [k](const v1::AuditResults& r) -> const Point* {
            for (const Point& p : r.forgetting().construction_curve()) {
              if (p.steps_since_injection() == k) return &p;
            }
            return nullptr;
          },
          m.value, m.low, m.high, m.low, m.high));
    }
  }
  return out;
}

class Forgetting final : public KindHandler {
 public:
  void ReadFiles(v1::AuditSpec* spec, std::vector<SpecProblem>* problems) const override {
    // LM canaries train on a corpus and constructions draw their own data;
    // `dataset` is unused then.
    if (spec->forgetting().canaries().model().has_tokenizer()) {
      ReadTokenizerFile(
          spec->mutable_forgetting()->mutable_canaries()->mutable_model()->mutable_tokenizer(),
          "forgetting.canaries.model.tokenizer", problems);
    }
    if (spec->forgetting().has_canaries() || spec->forgetting().has_construction()) return;
    ReadDatasetFiles(spec->mutable_forgetting()->mutable_dataset(), "forgetting.dataset", problems);
  }

  void ApplyDefaults(v1::AuditSpec* spec) const override {
    ApplyForgettingDefaults(spec->mutable_forgetting());
  }

  void Validate(const v1::AuditSpec& spec, std::vector<SpecProblem>* problems) const override {
    ValidateForgetting(spec.forgetting(), problems);
  }

  // Per evaluation point k (steps since injection): "accuracy_at_<k>",
  // "auc_at_<k>", "tpr_at_<k>" of the attack on Dp, means over trials with
  // their re-run intervals. LM-canary audits report exposures instead: none.
  // Constructions: "accuracy_at_<k>" and "precision_at_<k>" of the fixed
  // adversary, with their Clopper-Pearson intervals.
  std::vector<GateMetric> GateMetrics(const v1::AuditSpec& spec) const override {
    std::vector<GateMetric> out;
    if (spec.forgetting().has_canaries()) return out;
    if (spec.forgetting().has_construction()) return ConstructionGateMetrics(spec.forgetting());
    using Field = const v1::TrialMean& (v1::ForgettingCurvePoint::*)() const;
    for (const uint64_t k : spec.forgetting().eval_points()) {
      for (const auto& [name, field] :
           {std::pair<const char*, Field>{"accuracy", &v1::ForgettingCurvePoint::accuracy},
            std::pair<const char*, Field>{"auc", &v1::ForgettingCurvePoint::auc},
            std::pair<const char*, Field>{"tpr", &v1::ForgettingCurvePoint::tpr}}) {
        out.push_back(
            {absl::StrCat(name, "_at_", k), "trials",
             [k, field = field](const v1::AuditResults& r) -> std::optional<MetricReading> {
               for (const v1::ForgettingCurvePoint& p : r.forgetting().curve()) {
                 if (p.steps_since_injection() != k) continue;
                 const v1::TrialMean& m = (p.*field)();
                 return ReadingOf(m.mean(), m.rerun_low(), m.rerun_high(), m.low(), m.high());
               }
               return std::nullopt;
             }});
      }
    }
    return out;
  }

  std::vector<PlannedTask> Plan(const v1::AuditSpec& spec) const override {
    // One task per trial; each trains its own prefix and both arms.
    std::vector<PlannedTask> tasks;
    const uint64_t steps = ForgettingTrialSteps(spec.forgetting());
    for (uint32_t t = 0; t < spec.forgetting().trials(); ++t) {
      tasks.push_back({"forgetting_trial", t, steps});
    }
    return tasks;
  }
};

}  // namespace

}  // namespace memaudit::spec

namespace memaudit {

template <>
const spec::KindHandler& HandlerOfKind<spec::KindHandler, v1::AuditSpec::kForgetting>() {
  static const spec::Forgetting handler;
  return handler;
}

}  // namespace memaudit
