#include "audits/exposure/spec.h"

#include <cctype>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "audits/exposure/signals.h"
#include "common/base/steps.h"
#include "common/training/exposure_eval_steps.h"
#include "common/training/held_out_lines.h"
#include "spec/dataset_facts.h"
#include "spec/dataset_rules.h"
#include "spec/spec_rules.h"

namespace memaudit::spec {
namespace {

constexpr uint64_t kDefaultMaxChars = 1'000'000;
constexpr uint32_t kDefaultReferenceSamples = 1000;
// Ranks are uint64 and exact search enumerates a trie: |R| <= 2^62.
constexpr double kMaxLog2Space = 62;
constexpr double kDefaultDpDelta = 1e-5;
// Bounds the tasks of one audit and the `variant` label's cardinality.
constexpr int kMaxVariants = 16;
constexpr uint32_t kMaxReferenceModels = 64;
// Canary models per variant: 16 variants x 16 replicates bound the tasks.
constexpr uint32_t kMaxReplicates = 16;

// Utf8Chars(text).size() without building the characters.
size_t CodePoints(const std::string& text) {
  size_t count = 0;
  for (unsigned char c : text) count += (c & 0xC0) != 0x80 || count == 0;
  return count;
}

// An inline corpus as the engine keeps it: up to its last line end <=
// max_chars.
std::string InlineCorpus(const v1::ExposureAudit& e) {
  std::string text = e.corpus().text();
  if (e.corpus().max_chars() > 0 && text.size() > e.corpus().max_chars()) {
    text.resize(text.rfind('\n', e.corpus().max_chars()) + 1);
  }
  return text;
}

// Names become report legends, CSV cells and Prometheus label values.
bool NameOk(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string(" ._=+-").find(c) == std::string::npos) {
      return false;
    }
  }
  return true;
}

template <typename Add>
void ValidateSweep(const v1::ExposureAudit& e, const Add& add) {
  std::set<std::string> names;
  for (int i = 0; i < e.sweep_size(); ++i) {
    const v1::ExposureVariant& v = e.sweep(i);
    auto field = [&](const char* name) { return absl::StrCat("sweep[", i, "].", name); };
    // Unnamed entries are checked under the name the defaults give them.
    const std::string name = v.name().empty() ? exposure::DefaultVariantName(v) : v.name();
    if (!NameOk(name)) {
      add(field("name"), absl::StrCat("must be 1 to 64 of letters, digits, space and ._=+- (got ",
                                      QuoteValue(name), ")"));
    } else if (!names.insert(name).second) {
      add(field("name"), absl::StrCat(QuoteValue(name), " names two variants"));
    }
    if (v.has_batch_size() && (v.batch_size() == 0 || v.batch_size() > 65536)) {
      add(field("batch_size"), absl::StrCat("must be in [1, 65536] (got ", v.batch_size(), ")"));
    }
    // A TorchScript module's width and dropout are its own: a variant
    // cannot change them.
    const bool torchscript =
        e.model().architecture() == engine::ModelKindName(engine::ModelKind::kTorchScript);
    if (torchscript && v.has_units()) {
      add(field("units"), "cannot vary with model.architecture \"torchscript\"");
    } else if (v.has_units() && (v.units() == 0 || v.units() > 4096)) {
      add(field("units"), absl::StrCat("must be in [1, 4096] (got ", v.units(), ")"));
    }
    if (torchscript && v.has_dropout()) {
      add(field("dropout"), "cannot vary with model.architecture \"torchscript\"");
    } else if (v.has_dropout() && !(v.dropout() >= 0 && v.dropout() < 1)) {
      add(field("dropout"), absl::StrCat("must be in [0, 1) (got ", v.dropout(), ")"));
    }
    // The base recipe's rules (spec_rules.h), under the entry's field name.
    if (v.has_epochs() && (v.epochs() == 0 || v.epochs() > 10000)) {
      add(field("epochs"), absl::StrCat("must be in [1, 10000] (got ", v.epochs(), ")"));
    }
    if (v.has_learning_rate() && (!(v.learning_rate() > 0) || !std::isfinite(v.learning_rate()))) {
      add(field("learning_rate"), absl::StrCat("must be > 0 (got ", v.learning_rate(), ")"));
    } else if (v.has_learning_rate() && v.learning_rate() > kMaxLearningRate) {
      add(field("learning_rate"),
          absl::StrCat("must be in (0, ", kMaxLearningRate, "] (got ", v.learning_rate(), ")"));
    }
    if (v.has_dp_sgd()) CheckDpSgd(v.dp_sgd(), field(""), {}, add);
  }
}

// Evaluation points of the canary models: one of the two ways, k > 0, and at
// most exposure::kMaxEvalPoints points (the final model included) in every
// variant, counted on the planner's step count (an upper bound for a file
// corpus, so the engine never measures more).
template <typename Add>
void ValidateEvalPoints(const v1::ExposureAudit& e, const Add& add) {
  if (e.has_eval_every_steps() && e.eval_every_epoch()) {
    add("eval_every_epoch", "set at most one of eval_every_steps and eval_every_epoch");
    return;
  }
  const uint32_t variants = exposure::VariantCount(e);
  if (e.has_eval_every_steps()) {
    const uint64_t k = e.eval_every_steps();
    if (k == 0) {
      add("eval_every_steps", "must be > 0 (unset = the final model only)");
      return;
    }
    for (uint32_t v = 0; v < variants; ++v) {
      const uint64_t steps = ExposureTaskSteps(e, v, /*with_canaries=*/true);
      const uint64_t points = (steps + k - 1) / k;
      if (points > exposure::kMaxEvalPoints) {
        add("eval_every_steps",
            absl::StrCat(
                "gives ", points, " evaluation points over the ", steps, " steps of \"",
                exposure::ResolveVariant(e, v).name, "\"; at most ", exposure::kMaxEvalPoints,
                ": use k >= ", (steps + exposure::kMaxEvalPoints - 1) / exposure::kMaxEvalPoints));
        return;
      }
    }
  }
  if (e.eval_every_epoch()) {
    for (uint32_t v = 0; v < variants; ++v) {
      const exposure::Variant recipe = exposure::ResolveVariant(e, v);
      if (recipe.epochs > exposure::kMaxEvalPoints) {
        add("eval_every_epoch",
            absl::StrCat("gives one evaluation point per epoch, at most ", exposure::kMaxEvalPoints,
                         " (\"", recipe.name, "\" trains ", recipe.epochs, " epochs)"));
        return;
      }
    }
  }
}

}  // namespace

std::vector<std::string> Utf8Chars(const std::string& text) {
  std::vector<std::string> out;
  for (unsigned char c : text) {
    if ((c & 0xC0) == 0x80 && !out.empty()) {
      out.back().push_back(static_cast<char>(c));
    } else {
      out.emplace_back(1, static_cast<char>(c));
    }
  }
  return out;
}

void ApplyExposureDefaults(v1::ExposureAudit* e) {
  v1::CorpusSpec* c = e->mutable_corpus();
  if (c->name().empty()) c->set_name("fortunes");
  if (c->text().empty() && c->max_chars() == 0) c->set_max_chars(kDefaultMaxChars);
  v1::LanguageModelSpec* m = e->mutable_model();
  ApplyLanguageModelDefaults(m);
  v1::LanguageModelTraining* t = e->mutable_training();
  if (t->optimizer().empty()) t->set_optimizer("adam");
  if (t->learning_rate() == 0) t->set_learning_rate(3e-3);
  if (t->epochs() == 0) t->set_epochs(1);
  if (t->batch_size() == 0) t->set_batch_size(32);
  if (t->window() == 0) t->set_window(64);
  v1::CanaryFormatSpec* f = e->mutable_canary();
  if (f->prefix().empty()) f->set_prefix("the random number is ");
  if (f->digits() == 0 && f->alphabets().empty()) f->set_digits(6);
  if (e->repeats().empty()) {
    for (uint32_t r : {1, 4, 16, 64}) e->add_repeats(r);
  }
  if (!e->has_controls()) e->set_controls(2);
  if (e->has_extractable()) ApplyExtractableDefaults(e->mutable_extractable(), 32);
  if (e->estimator().empty()) e->set_estimator("all");
  if (exposure::NeedsReferences(e->estimator()) && e->reference_samples() == 0) {
    e->set_reference_samples(kDefaultReferenceSamples);
  }
  if (!e->has_extraction()) e->set_extraction(true);
  if (e->rank_query_budget() == 0) e->set_rank_query_budget(2'000'000);
  if (e->extraction_query_budget() == 0) e->set_extraction_query_budget(100'000);
  for (v1::ExposureVariant& v : *e->mutable_sweep()) {
    // Named once here so results, report and metrics all use one label.
    if (v.name().empty()) v.set_name(exposure::DefaultVariantName(v));
    if (v.has_dp_sgd() && v.dp_sgd().delta() == 0) v.mutable_dp_sgd()->set_delta(kDefaultDpDelta);
  }
  // Exact calibration costs each model one enumeration of R (about |R| /
  // (alphabet - 1) model steps) and |R| values sent: on where that is small.
  if (!e->has_exact_calibration()) {
    e->set_exact_calibration(e->reference_models() > 0 && exposure::ExactCalibrationFits(*e));
  }
}

namespace {

// Strings and lists, checked before anything is computed from them (code
// points, step counts, the canary space). Returns whether all fit.
bool ValidateSizes(const v1::ExposureAudit& e, const AddProblem& add) {
  bool ok = CheckLength("corpus.path", e.corpus().path(), kMaxPathBytes, add);
  ok &= CheckLength("model.torchscript_path", e.model().torchscript_path(), kMaxPathBytes, add);
  ok &= CheckLength("corpus.text", e.corpus().text(), kMaxTextBytes, add);
  ok &= CheckLength("canary.prefix", e.canary().prefix(), kMaxPrefixBytes, add);
  if (CheckListSize("canary.alphabets", e.canary().alphabets_size(), 0, kMaxAlphabets, add)) {
    for (int i = 0; i < e.canary().alphabets_size(); ++i) {
      ok &= CheckLength(absl::StrCat("canary.alphabets[", i, "]"), e.canary().alphabets(i),
                        kMaxAlphabetBytes, add);
    }
  } else {
    ok = false;
  }
  if (e.repeats().empty() || e.repeats_size() > 64) {
    add("repeats", absl::StrCat("must list 1 to 64 insertion counts (got ", e.repeats_size(), ")"));
    ok = false;
  }
  if (e.sweep_size() > kMaxVariants) {
    add("sweep",
        absl::StrCat("must list at most ", kMaxVariants, " variants (got ", e.sweep_size(), ")"));
    ok = false;
  }
  return ok;
}

// The canary models, baselines and reference models of every variant: models
// x parameters x steps against the limits of spec_rules.h.
void CheckExposureCost(const v1::ExposureAudit& e, const AddProblem& add) {
  std::vector<ModelGroup> groups;
  const uint32_t variants = exposure::VariantCount(e);
  const v1::LanguageModelSpec& m = e.model();
  // Every canary's exact rank at every evaluation point of the canary model
  // and at the final point of the others, plus one extraction search.
  const double canaries = e.repeats_size() + static_cast<double>(e.controls());
  const double rank_queries = canaries * static_cast<double>(e.rank_query_budget());
  for (uint32_t v = 0; v < variants; ++v) {
    const exposure::Variant recipe = exposure::ResolveVariant(e, v);
    const double parameters = CharLmParameters(m.architecture(), m.layers(), recipe.units,
                                               m.embedding(), LmVocabularyBound(m));
    const uint64_t canary_steps = ExposureTaskSteps(e, v, true);
    const double points = 1.0 + static_cast<double>(exposure::IntermediateEvalSteps(
                                                        canary_steps, recipe.epochs,
                                                        e.eval_every_steps(), e.eval_every_epoch())
                                                        .size());
    const double canary_queries =
        points * rank_queries +
        (e.extraction() ? static_cast<double>(e.extraction_query_budget()) : 0.0);
    groups.push_back(
        {1, parameters, static_cast<double>(canary_steps) + canary_queries / kQueriesPerStep});
    // Replicates rank at the end only and extract nothing.
    groups.push_back({static_cast<double>(exposure::Replicates(e) - 1), parameters,
                      static_cast<double>(canary_steps) + rank_queries / kQueriesPerStep});
    groups.push_back(
        {(e.baseline() ? 1.0 : 0.0) + e.reference_models(), parameters,
         static_cast<double>(ExposureTaskSteps(e, v, false)) + rank_queries / kQueriesPerStep});
  }
  CheckCost(groups, "model.units",
            "training.epochs, corpus.max_chars, model.units, sweep, replicates, "
            "reference_models, rank_query_budget or extraction_query_budget",
            add);
}

// corpus, model and training: the recipe the canary models train with.
void ValidateRecipe(const v1::ExposureAudit& e, const AddProblem& add) {
  CheckCorpus(e.corpus(), add);
  const v1::LanguageModelSpec& m = e.model();
  // A TorchScript module has its own sizes: layers, units and embedding are
  // not checked (nor used) for it.
  CheckLanguageModel("model.", m, {}, add);
  const v1::LanguageModelTraining& t = e.training();
  CheckLmTraining(t, add);
  if (t.window() < 2 || t.window() > 4096) {
    add("training.window", absl::StrCat("must be in [2, 4096] (got ", t.window(), ")"));
  }
}

// canary: the format every canary and candidate follows.
void ValidateCanaryFormat(const v1::ExposureAudit& e, const AddProblem& add) {
  const v1::CanaryFormatSpec& f = e.canary();
  if (f.prefix().find('\n') != std::string::npos) {
    add("canary.prefix", "must not contain a newline (a canary is one line)");
  }
  if (f.alphabets().empty()) {
    if (f.digits() == 0 || f.digits() > 18) {
      add("canary.digits", absl::StrCat("must be in [1, 18] (got ", f.digits(), ")"));
    }
  } else if (f.digits() != 0) {
    add("canary.digits", "set canary.digits or canary.alphabets, not both");
  }
  for (int i = 0; i < f.alphabets_size(); ++i) {
    const std::vector<std::string> chars = Utf8Chars(f.alphabets(i));
    const std::set<std::string> distinct(chars.begin(), chars.end());
    if (chars.empty() || distinct.size() != chars.size() || distinct.count("\n")) {
      add(absl::StrCat("canary.alphabets[", i, "]"),
          "must be distinct characters, at least one, no newline");
    }
  }
}

// canary space, repeats and controls: how many canaries the space must hold.
void ValidateCanaryCounts(const v1::ExposureAudit& e, const AddProblem& add) {
  const double log2_space = ExposureLog2Space(e);
  if (log2_space > kMaxLog2Space) {
    add("canary", absl::StrCat("|R| = 2^", log2_space, " exceeds 2^", kMaxLog2Space));
  }
  for (int i = 0; i < e.repeats_size(); ++i) {
    if (e.repeats(i) == 0 || e.repeats(i) > 100000) {
      add(absl::StrCat("repeats[", i, "]"),
          absl::StrCat("must be in [1, 100000] (got ", e.repeats(i), ")"));
    }
  }
  if (e.controls() > 1000) {
    add("controls", absl::StrCat("must be in [0, 1000] (got ", e.controls(), ")"));
  }
  const double canaries = e.repeats_size() + e.controls();
  if (log2_space <= kMaxLog2Space && canaries * 2 > std::exp2(log2_space)) {
    add("controls", absl::StrCat("the ", canaries, " canaries need |R| >= ", canaries * 2, " (got ",
                                 std::exp2(log2_space), ")"));
  }
}

// estimator, reference_samples and reference_models.
void ValidateEstimators(const v1::ExposureAudit& e, const AddProblem& add) {
  std::vector<std::string> estimators = exposure::EstimatorNames();
  estimators.push_back("all");
  CheckOneOf("estimator", e.estimator(), estimators, add);
  // With an unknown estimator, whether S is needed is unknown too.
  const bool known_estimator = OneOf(e.estimator(), estimators);
  if (known_estimator && exposure::NeedsReferences(e.estimator())) {
    if (e.reference_samples() < 16 || e.reference_samples() > 1'000'000) {
      add("reference_samples",
          absl::StrCat("must be in [16, 1000000] (got ", e.reference_samples(), ")"));
    }
  } else if (known_estimator && e.reference_samples() != 0) {
    add("reference_samples", "must be unset with estimator \"exact\" (it uses no sample)");
  }
  if (e.reference_models() > kMaxReferenceModels) {
    add("reference_models",
        absl::StrCat("must be in [0, ", kMaxReferenceModels, "] (got ", e.reference_models(), ")"));
  } else if (e.reference_models() > 0 && !exposure::NeedsReferences(e.estimator())) {
    add("reference_models",
        "needs the reference sample S: set estimator to sampled, extrapolated or all");
  }
}

// replicates: canary models per variant, each on its own seed.
void ValidateReplicates(const v1::ExposureAudit& e, const AddProblem& add) {
  if (e.has_replicates() && (e.replicates() == 0 || e.replicates() > kMaxReplicates)) {
    add("replicates",
        absl::StrCat("must be in [1, ", kMaxReplicates, "] (got ", e.replicates(), ")"));
  }
}

// rank_query_budget and extraction_query_budget: model steps per search.
void ValidateBudgets(const v1::ExposureAudit& e, const AddProblem& add) {
  if (e.rank_query_budget() == 0 || e.rank_query_budget() > kMaxQueryBudget) {
    add("rank_query_budget",
        absl::StrCat("must be in [1, ", kMaxQueryBudget, "] (got ", e.rank_query_budget(), ")"));
  }
  if (e.extraction_query_budget() == 0 || e.extraction_query_budget() > kMaxQueryBudget) {
    add("extraction_query_budget", absl::StrCat("must be in [1, ", kMaxQueryBudget, "] (got ",
                                                e.extraction_query_budget(), ")"));
  }
}

// exact_calibration: enumerating R must fit on every model.
void ValidateExactCalibration(const v1::ExposureAudit& e, const AddProblem& add) {
  const double log2_space = ExposureLog2Space(e);
  if (e.exact_calibration() && e.reference_models() == 0) {
    add("exact_calibration", "needs reference_models > 0 (it calibrates by their mean Px)");
  } else if (e.exact_calibration() && !exposure::ExactCalibrationFits(e)) {
    const uint64_t models =
        static_cast<uint64_t>(exposure::VariantCount(e)) * (1 + uint64_t{e.reference_models()});
    add("exact_calibration",
        absl::StrCat("every canary and reference model sends |R| values: needs |R| <= ",
                     exposure::kMaxExactCalibrationSpace, " and |R| x ", models,
                     " models <= ", exposure::kMaxExactCalibrationValues, " (|R| = ",
                     log2_space <= kMaxLog2Space ? absl::StrCat(exposure::SpaceSize(e))
                                                 : absl::StrCat("2^", log2_space),
                     "); set it false"));
  }
}

}  // namespace

namespace {

// A model trained elsewhere: nothing trains, so nothing that trains a
// second model applies, and each secret is a filling of the canary format.
void ValidateTarget(const v1::ExposureAudit& e, const AddProblem& add) {
  const v1::ExposureTarget& t = e.target();
  CheckLength("target.torchscript_path", t.torchscript_path(), kMaxPathBytes, add);
  if (t.torchscript_path().empty()) add("target.torchscript_path", "required with a target");
  if (t.content_hash().empty()) add("target.content_hash", kNotRecorded);
  // Named whatever else is wrong with the target.
  const auto refuse = [&](bool set, const char* field) {
    if (set) add(field, "trains a model: not with a target (nothing trains)");
  };
  refuse(e.sweep_size() > 0, "sweep");
  refuse(e.baseline(), "baseline");
  refuse(e.reference_models() > 0, "reference_models");
  refuse(e.has_replicates() && e.replicates() > 1, "replicates");
  refuse(e.has_eval_every_steps() || e.eval_every_epoch(), "eval_every_steps");
  refuse(e.has_extractable(), "extractable");
  if (e.model().tokenizer().kind() == kSentencePieceTokens &&
      e.model().tokenizer().model_path().empty()) {
    add("model.tokenizer.model_path",
        "required with a target: its tokenizer is a file (no corpus to train one on)");
  }
  if (!CheckListSize("target.secrets", t.secrets_size(), 1, 64, add)) return;
  if (t.secrets_size() != e.repeats_size()) {
    add("target.secrets", absl::StrCat("one secret per repeats entry (", e.repeats_size(),
                                       " repeats, ", t.secrets_size(), " secrets)"));
  }
  const bool digits = e.canary().alphabets().empty();
  const size_t holes = digits ? e.canary().digits() : e.canary().alphabets_size();
  std::set<std::string> seen;
  for (int i = 0; i < t.secrets_size(); ++i) {
    const std::string field = absl::StrCat("target.secrets[", i, "]");
    const std::vector<std::string> chars = Utf8Chars(t.secrets(i));
    bool fits = chars.size() == holes;
    for (size_t h = 0; fits && h < chars.size(); ++h) {
      fits = digits ? chars[h].size() == 1 && std::isdigit(static_cast<unsigned char>(chars[h][0]))
                    : e.canary().alphabets(static_cast<int>(h)).find(chars[h]) != std::string::npos;
    }
    if (!fits) {
      add(field, absl::StrCat("must fill the canary format's ", holes, " holes (got ",
                              QuoteValue(t.secrets(i)), ")"));
    } else if (!seen.insert(t.secrets(i)).second) {
      add(field, "is listed twice");
    }
  }
}

// extractable: sizes, distinct insertion counts, and lines enough to draw
// from where the corpus is inline (a file corpus is checked when it trains).
void ValidateExtractable(const v1::ExposureAudit& e, const AddProblem& add) {
  if (!e.has_extractable()) return;
  const v1::ExtractableSpec& x = e.extractable();
  const bool ok = CheckExtractable(x, add);
  if (!ok || e.corpus().text().empty()) return;
  const size_t length = x.prefix_chars() + x.suffix_chars();
  const size_t lines = DistinctLongLines(InlineCorpus(e), length);
  if (lines < ExtractableHeldOut(x)) {
    add("extractable.sequences",
        absl::StrCat("the corpus has ", lines, " distinct lines of at least ", length,
                     " characters; ", ExtractableHeldOut(x),
                     " are needed (sequences x (duplicates + 1 for the controls))"));
  }
}

}  // namespace

void ValidateExposure(const v1::ExposureAudit& e, std::vector<SpecProblem>* problems) {
  const AddProblem add = [&](const std::string& field, std::string rule) {
    problems->push_back({absl::StrCat("exposure.", field), std::move(rule)});
  };
  const size_t before = problems->size();
  if (!ValidateSizes(e, add)) return;
  ValidateRecipe(e, add);
  ValidateCanaryFormat(e, add);
  ValidateCanaryCounts(e, add);
  ValidateEstimators(e, add);
  ValidateSweep(e, add);
  ValidateExactCalibration(e, add);
  ValidateExtractable(e, add);
  ValidateEvalPoints(e, add);
  ValidateBudgets(e, add);
  ValidateReplicates(e, add);
  if (e.has_target()) ValidateTarget(e, add);
  // The estimate needs every field in range: only then is it the audit's.
  if (problems->size() == before) CheckExposureCost(e, add);
}

double ExposureLog2Space(const v1::ExposureAudit& e) {
  if (e.canary().alphabets().empty()) return e.canary().digits() * std::log2(10.0);
  double bits = 0;
  for (const std::string& a : e.canary().alphabets()) {
    bits += std::log2(std::max<size_t>(CodePoints(a), 1));
  }
  return bits;
}

uint64_t ExposureSteps(const v1::ExposureAudit& e) {
  return ExposureRecipeSteps(e, e.training().batch_size(), e.training().epochs(),
                             /*with_canaries=*/true);
}

uint64_t ExposureTaskSteps(const v1::ExposureAudit& e, uint32_t variant, bool with_canaries) {
  const exposure::Variant recipe = exposure::ResolveVariant(e, variant);
  return ExposureRecipeSteps(e, recipe.batch_size, recipe.epochs, with_canaries);
}

uint64_t ExposureRecipeSteps(const v1::ExposureAudit& e, uint32_t batch_size, uint32_t epochs,
                             bool with_canaries) {
  uint64_t chars = e.corpus().max_chars();
  const v1::ExtractableSpec& x = e.extractable();
  const uint64_t sequence = x.prefix_chars() + x.suffix_chars();
  if (!e.corpus().text().empty()) {
    chars = CodePoints(InlineCorpus(e));
    if (e.has_extractable()) {
      // Every model trains without the held-out lines (the engine's draw).
      const auto held = HoldOutLines(InlineCorpus(e), sequence, ExtractableHeldOut(x), x.seed(),
                                     "extractable.sequences");
      if (held.ok()) chars = CodePoints(held->text);
    }
  }
  if (with_canaries && e.has_extractable()) {
    for (uint32_t d : x.duplicates()) chars += uint64_t{d} * x.sequences() * (sequence + 1);
  }
  const uint64_t holes =
      e.canary().alphabets().empty() ? e.canary().digits() : e.canary().alphabets_size();
  const uint64_t line = CodePoints(e.canary().prefix()) + holes + 1;
  if (with_canaries) {
    for (uint32_t r : e.repeats()) chars += static_cast<uint64_t>(r) * line;
  }
  const uint64_t window = std::max<uint32_t>(e.training().window(), 1);
  const uint64_t batch = std::max<uint32_t>(batch_size, 1);
  const uint64_t windows = chars > 1 ? (chars - 1) / window : 0;
  return static_cast<uint64_t>(epochs) * StepsPerEpoch(windows, batch);
}

namespace {

class Exposure final : public KindHandler {
 public:
  void ReadFiles(v1::AuditSpec* spec, std::vector<SpecProblem>* problems) const override {
    if (spec->exposure().model().has_tokenizer()) {
      ReadTokenizerFile(spec->mutable_exposure()->mutable_model()->mutable_tokenizer(),
                        "exposure.model.tokenizer", problems);
    }
    if (!spec->exposure().has_target()) return;
    v1::ExposureTarget* t = spec->mutable_exposure()->mutable_target();
    if (t->torchscript_path().empty()) return;  // Validate names it
    absl::StatusOr<std::string> hash =
        FilesContentHash({{"exposure.target.torchscript_path", t->torchscript_path()}});
    if (!hash.ok()) {
      problems->push_back(ProblemOf(hash.status()));
      return;
    }
    t->set_content_hash(*hash);
  }

  void ApplyDefaults(v1::AuditSpec* spec) const override {
    ApplyExposureDefaults(spec->mutable_exposure());
  }

  void Validate(const v1::AuditSpec& spec, std::vector<SpecProblem>* problems) const override {
    ValidateExposure(spec.exposure(), problems);
  }

  // Per insertion count r: "exposure_<r>x", the exact exposure of the
  // canaries inserted r times (base variant). With replicates, the mean over
  // replicates with its re-run interval; without, replicate 0's median,
  // which has no interval: a gate compares the value itself.
  std::vector<GateMetric> GateMetrics(const v1::AuditSpec& spec) const override {
    std::vector<GateMetric> out;
    const bool replicated = exposure::Replicates(spec.exposure()) >= 2;
    for (const uint32_t repeats : spec.exposure().repeats()) {
      out.push_back(
          {absl::StrCat("exposure_", repeats, "x"), "replicates",
           [repeats, replicated](const v1::AuditResults& r) -> std::optional<MetricReading> {
             for (const v1::ExposureByRepeats& b : r.exposure().by_repeats()) {
               if (b.repeats() != repeats) continue;
               if (!replicated) {
                 return MetricReading{b.median_exposure(), b.median_exposure(),
                                      b.median_exposure()};
               }
               const v1::TrialMean& m = b.across_replicates().exposure();
               return ReadingOf(m.mean(), m.rerun_low(), m.rerun_high(), m.low(), m.high());
             }
             return std::nullopt;
           },
           /*interval=*/replicated});
    }
    // Extractable memorization: the fraction extracted with its
    // Clopper-Pearson interval over the group's sequences.
    for (const uint32_t duplicates : spec.exposure().extractable().duplicates()) {
      out.push_back({absl::StrCat("extractable_", duplicates, "x"), "extractable.sequences",
                     [duplicates](const v1::AuditResults& r) -> std::optional<MetricReading> {
                       for (const v1::ExtractableGroup& g : r.exposure().extractable()) {
                         if (g.duplicates() != duplicates) continue;
                         return ReadingOf(g.fraction(), 0, 0, g.fraction_low(), g.fraction_high());
                       }
                       return std::nullopt;
                     }});
    }
    return out;
  }

  std::vector<PlannedTask> Plan(const v1::AuditSpec& spec) const override {
    // A canary model per variant first (the headline numbers), then their
    // replicates, then the canary-free baselines and reference models
    // (audits/exposure/signals.h).
    std::vector<PlannedTask> tasks;
    const v1::ExposureAudit& e = spec.exposure();
    const uint32_t variants = exposure::VariantCount(e);
    for (uint32_t v = 0; v < variants; ++v) {
      // A given model trains nothing: measuring it is one step of work.
      tasks.push_back(
          {exposure::kCanaryRole, v, e.has_target() ? 1 : ExposureTaskSteps(e, v, true)});
    }
    // The other replicates of each canary model: the headline's interval.
    for (uint32_t v = 0; v < variants; ++v) {
      for (uint32_t r = 1; r < exposure::Replicates(e); ++r) {
        tasks.push_back({exposure::kReplicateRole, exposure::ReplicateTaskIndex(e, v, r),
                         ExposureTaskSteps(e, v, true)});
      }
    }
    for (uint32_t v = 0; v < variants; ++v) {
      const uint64_t steps = ExposureTaskSteps(e, v, false);
      if (e.baseline()) tasks.push_back({exposure::kBaselineRole, v, steps});
      for (uint32_t j = 0; j < e.reference_models(); ++j) {
        tasks.push_back({exposure::kReferenceRole, v * e.reference_models() + j, steps});
      }
    }
    return tasks;
  }
};

}  // namespace

}  // namespace memaudit::spec

namespace memaudit {

template <>
const spec::KindHandler& HandlerOfKind<spec::KindHandler, v1::AuditSpec::kExposure>() {
  static const spec::Exposure handler;
  return handler;
}

}  // namespace memaudit
