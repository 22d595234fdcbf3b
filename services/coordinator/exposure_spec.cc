#include "services/coordinator/exposure_spec.h"

#include <cctype>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/exposure_signals.h"
#include "services/coordinator/spec_rules.h"

namespace memaudit::coordinator {
namespace {

constexpr uint64_t kDefaultMaxChars = 1'000'000;
constexpr uint32_t kDefaultReferenceSamples = 1000;
// Ranks are uint64 and exact search enumerates a trie: |R| <= 2^62.
constexpr double kMaxLog2Space = 62;
constexpr double kDefaultDpDelta = 1e-5;
// Bounds the tasks of one audit and the `variant` label's cardinality.
constexpr int kMaxVariants = 16;
constexpr uint32_t kMaxReferenceModels = 64;

size_t CodePoints(const std::string& text) { return Utf8Chars(text).size(); }

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
  if (e.sweep_size() > kMaxVariants) {
    add("sweep",
        absl::StrCat("must list at most ", kMaxVariants, " variants (got ", e.sweep_size(), ")"));
  }
  std::set<std::string> names;
  for (int i = 0; i < e.sweep_size(); ++i) {
    const v1::ExposureVariant& v = e.sweep(i);
    auto field = [&](const char* name) { return absl::StrCat("sweep[", i, "].", name); };
    // Unnamed entries are checked under the name the defaults give them.
    const std::string name = v.name().empty() ? exposure::DefaultVariantName(v) : v.name();
    if (!NameOk(name)) {
      add(field("name"),
          absl::StrCat("must be 1 to 64 of letters, digits, space and ._=+- (got \"", name, "\")"));
    } else if (!names.insert(name).second) {
      add(field("name"), absl::StrCat("\"", name, "\" names two variants"));
    }
    if (v.has_batch_size() && (v.batch_size() == 0 || v.batch_size() > 65536)) {
      add(field("batch_size"), absl::StrCat("must be in [1, 65536] (got ", v.batch_size(), ")"));
    }
    if (v.has_units() && (v.units() == 0 || v.units() > 4096)) {
      add(field("units"), absl::StrCat("must be in [1, 4096] (got ", v.units(), ")"));
    }
    if (v.has_dropout() && !(v.dropout() >= 0 && v.dropout() < 1)) {
      add(field("dropout"), absl::StrCat("must be in [0, 1) (got ", v.dropout(), ")"));
    }
    if (v.has_dp_sgd()) {
      const v1::DpSgdSpec& dp = v.dp_sgd();
      // Noise 0 would report epsilon = infinity: clipping alone is not DP.
      if (!(dp.noise_multiplier() > 0) || !std::isfinite(dp.noise_multiplier())) {
        add(field("dp_sgd.noise_multiplier"),
            absl::StrCat("must be > 0 (got ", dp.noise_multiplier(), ")"));
      }
      if (!(dp.clip_norm() > 0) || !std::isfinite(dp.clip_norm())) {
        add(field("dp_sgd.clip_norm"), absl::StrCat("must be > 0 (got ", dp.clip_norm(), ")"));
      }
      if (!(dp.delta() > 0 && dp.delta() < 1)) {
        add(field("dp_sgd.delta"), absl::StrCat("must be in (0, 1) (got ", dp.delta(), ")"));
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
  if (m->architecture().empty()) m->set_architecture("lstm");
  if (m->layers() == 0) m->set_layers(1);
  if (m->units() == 0) m->set_units(128);
  if (m->embedding() == 0) m->set_embedding(32);
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
}

void ValidateExposure(const v1::ExposureAudit& e, std::vector<SpecProblem>* problems) {
  auto add = [&](std::string field, std::string rule) {
    problems->push_back({absl::StrCat("exposure.", field), std::move(rule)});
  };
  const v1::CorpusSpec& c = e.corpus();
  if (c.name() != "fortunes") {
    add("corpus.name", absl::StrCat("must be \"fortunes\" (got \"", c.name(),
                                    "\"); use "
                                    "corpus.path or corpus.text for other text"));
  }
  if (!c.path().empty() && !c.text().empty()) {
    add("corpus.text", "set at most one of corpus.path and corpus.text");
  }
  if (c.max_chars() > 1'000'000'000) {
    add("corpus.max_chars", absl::StrCat("must be <= 1000000000 (got ", c.max_chars(), ")"));
  }
  const v1::LanguageModelSpec& m = e.model();
  if (!OneOf(m.architecture(), {"lstm", "gru"})) {
    add("model.architecture",
        absl::StrCat("must be \"lstm\" or \"gru\" (got \"", m.architecture(), "\")"));
  }
  if (m.layers() == 0 || m.layers() > 8) {
    add("model.layers", absl::StrCat("must be in [1, 8] (got ", m.layers(), ")"));
  }
  if (m.units() == 0 || m.units() > 4096) {
    add("model.units", absl::StrCat("must be in [1, 4096] (got ", m.units(), ")"));
  }
  if (m.embedding() == 0 || m.embedding() > 4096) {
    add("model.embedding", absl::StrCat("must be in [1, 4096] (got ", m.embedding(), ")"));
  }
  if (!(m.dropout() >= 0 && m.dropout() < 1)) {
    add("model.dropout", absl::StrCat("must be in [0, 1) (got ", m.dropout(), ")"));
  }
  const v1::LanguageModelTraining& t = e.training();
  CheckOneOf("training.optimizer", t.optimizer(), {"adam", "sgd", "momentum", "rmsprop"}, add);
  CheckLearningRate(t.learning_rate(), add);
  CheckWeightDecay(t.weight_decay(), add);
  CheckEpochs(t.epochs(), add);
  CheckBatchSize(t.batch_size(), add);
  if (t.window() < 2 || t.window() > 4096) {
    add("training.window", absl::StrCat("must be in [2, 4096] (got ", t.window(), ")"));
  }
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
  const double log2_space = ExposureLog2Space(e);
  if (log2_space > kMaxLog2Space) {
    add("canary", absl::StrCat("|R| = 2^", log2_space, " exceeds 2^", kMaxLog2Space));
  }
  if (e.repeats().empty() || e.repeats_size() > 64) {
    add("repeats", absl::StrCat("must list 1 to 64 insertion counts (got ", e.repeats_size(), ")"));
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
  ValidateSweep(e, add);
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
  return ExposureTaskSteps(e, e.training().batch_size(), /*with_canaries=*/true);
}

uint64_t ExposureTaskSteps(const v1::ExposureAudit& e, uint32_t batch_size, bool with_canaries) {
  uint64_t chars = e.corpus().max_chars();
  if (!e.corpus().text().empty()) {
    // The engine's cut: the corpus is kept up to its last line end <= max_chars.
    std::string text = e.corpus().text();
    if (e.corpus().max_chars() > 0 && text.size() > e.corpus().max_chars()) {
      text.resize(text.rfind('\n', e.corpus().max_chars()) + 1);
    }
    chars = CodePoints(text);
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
  return e.training().epochs() * ((windows + batch - 1) / batch);
}

}  // namespace memaudit::coordinator
