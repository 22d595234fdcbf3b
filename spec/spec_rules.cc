#include "spec/spec_rules.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spec/dataset_rules.h"
#include "tokenizers/sentencepiece_tokenizer.h"

namespace memaudit::spec {

bool OneOf(const std::string& value, const std::vector<std::string>& allowed) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

void CheckOneOf(const std::string& field, const std::string& value,
                const std::vector<std::string>& allowed, const AddProblem& add) {
  if (OneOf(value, allowed)) return;
  add(field, absl::StrCat("must be one of ", absl::StrJoin(allowed, ", "), " (got ",
                          QuoteValue(value), ")"));
}

bool CheckArchitecture(const std::string& field, const std::string& value,
                       const std::vector<engine::ModelKind>& allowed, const AddProblem& add) {
  std::string names;
  for (size_t i = 0; i < allowed.size(); ++i) {
    if (value == engine::ModelKindName(allowed[i])) return true;
    const char* separator = i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ";
    absl::StrAppend(&names, separator, "\"", engine::ModelKindName(allowed[i]), "\"");
  }
  add(field, absl::StrCat("must be ", names, " (got ", QuoteValue(value), ")"));
  return false;
}

void CheckImageModel(const v1::ModelSpec& m, const std::vector<engine::ModelKind>& allowed,
                     bool dropout, const AddProblem& add) {
  const std::string& arch = m.architecture();
  CheckLength("model.torchscript_path", m.torchscript_path(), kMaxPathBytes, add);
  if (!CheckArchitecture("model.architecture", arch, allowed, add)) return;
  const engine::ModelKind kind = *engine::ParseModelKind(arch, "model.architecture");
  const bool layered = kind == engine::ModelKind::kMlp || kind == engine::ModelKind::kCnn;
  if (!layered && m.hidden_size() > 0) {
    add("model.hidden", absl::StrCat("must be empty for \"", arch, "\""));
  }
  if (kind == engine::ModelKind::kMlp && (m.hidden_size() == 0 || m.hidden_size() > 8)) {
    add("model.hidden", absl::StrCat("\"mlp\" needs 1 to 8 widths (got ", m.hidden_size(), ")"));
  }
  if (kind == engine::ModelKind::kCnn && m.hidden_size() != 0 && m.hidden_size() != 3) {
    add("model.hidden", absl::StrCat("\"cnn\" takes [conv1, conv2, fc] or nothing (got ",
                                     m.hidden_size(), " values)"));
  }
  for (int i = 0; layered && m.hidden_size() <= 8 && i < m.hidden_size(); ++i) {
    if (m.hidden(i) == 0 || m.hidden(i) > 65536) {
      add(absl::StrCat("model.hidden[", i, "]"),
          absl::StrCat("must be in [1, 65536] (got ", m.hidden(i), ")"));
    }
  }
  if (!(dropout && layered)) {
    if (m.dropout() != 0) add("model.dropout", absl::StrCat("must be 0 for \"", arch, "\""));
  } else if (!(m.dropout() >= 0 && m.dropout() < 1)) {
    add("model.dropout", absl::StrCat("must be in [0, 1) (got ", m.dropout(), ")"));
  }
  if (kind == engine::ModelKind::kTorchScript && m.torchscript_path().empty()) {
    add("model.torchscript_path", "required for \"torchscript\"");
  } else if (kind != engine::ModelKind::kTorchScript && !m.torchscript_path().empty()) {
    add("model.torchscript_path", "applies to architecture \"torchscript\" only");
  }
}

void ApplyLanguageModelDefaults(v1::LanguageModelSpec* m) {
  // Unset stays unset (characters), so specs without a tokenizer keep
  // their content keys.
  if (m->has_tokenizer() && m->tokenizer().kind() == kSentencePieceTokens &&
      m->tokenizer().model_path().empty()) {
    v1::TokenizerSpec* t = m->mutable_tokenizer();
    if (t->vocab_size() == 0) t->set_vocab_size(tokenizers::kDefaultVocabSize);
    if (t->model_type().empty()) t->set_model_type("bpe");
  }
  if (m->architecture().empty()) m->set_architecture("lstm");
  if (m->layers() == 0) m->set_layers(1);
  if (m->units() == 0) m->set_units(128);
  if (m->embedding() == 0) m->set_embedding(32);
  if (m->heads() == 0 &&
      m->architecture() == engine::ModelKindName(engine::ModelKind::kTransformerLm)) {
    m->set_heads(4);
  }
}

void CheckTokenizer(const std::string& prefix, const v1::TokenizerSpec& t, const AddProblem& add) {
  CheckLength(prefix + "model_path", t.model_path(), kMaxPathBytes, add);
  if (!t.kind().empty()) {
    CheckOneOf(prefix + "kind", t.kind(), {kCharacterTokens, kSentencePieceTokens}, add);
  }
  const bool sentencepiece = t.kind() == kSentencePieceTokens;
  const bool trained = sentencepiece && t.model_path().empty();
  const auto only = [&](bool set, const char* field, const char* when) {
    if (set) add(prefix + field, absl::StrCat("applies to ", when, " only"));
  };
  only(!sentencepiece && !t.model_path().empty(), "model_path", "kind \"sentencepiece\"");
  only(!trained && t.vocab_size() != 0, "vocab_size",
       "a trained tokenizer (kind \"sentencepiece\" without model_path)");
  only(!trained && !t.model_type().empty(), "model_type",
       "a trained tokenizer (kind \"sentencepiece\" without model_path)");
  if (trained) {
    if (t.vocab_size() < tokenizers::kMinVocabSize || t.vocab_size() > tokenizers::kMaxVocabSize) {
      add(prefix + "vocab_size",
          absl::StrCat("must be in [", tokenizers::kMinVocabSize, ", ", tokenizers::kMaxVocabSize,
                       "] (got ", t.vocab_size(), ")"));
    }
    CheckOneOf(prefix + "model_type", t.model_type(), {"bpe", "unigram"}, add);
  }
  if (sentencepiece && !t.model_path().empty() && t.content_hash().empty()) {
    add(prefix + "content_hash", kNotRecorded);
  }
  only(t.model_path().empty() && !t.content_hash().empty(), "content_hash",
       "a tokenizer read from model_path");
}

void ApplyExtractableDefaults(v1::ExtractableSpec* x, uint32_t chars) {
  if (x->prefix_chars() == 0) x->set_prefix_chars(chars);
  if (x->suffix_chars() == 0) x->set_suffix_chars(chars);
  if (x->duplicates().empty()) {
    for (uint32_t d : {1, 2, 4, 8, 16, 32, 64}) x->add_duplicates(d);
  }
  if (x->sequences() == 0) x->set_sequences(32);
}

bool CheckExtractable(const v1::ExtractableSpec& x, const AddProblem& add) {
  bool ok = true;
  const auto in_range = [&](const std::string& field, uint64_t value, uint64_t max) {
    if (value == 0 || value > max) {
      add(absl::StrCat("extractable.", field),
          absl::StrCat("must be in [1, ", max, "] (got ", value, ")"));
      ok = false;
    }
  };
  in_range("prefix_chars", x.prefix_chars(), kMaxExtractableChars);
  in_range("suffix_chars", x.suffix_chars(), kMaxExtractableChars);
  in_range("sequences", x.sequences(), kMaxExtractableSequences);
  if (!CheckListSize("extractable.duplicates", x.duplicates_size(), 1, kMaxExtractableGroups,
                     add)) {
    return false;
  }
  std::set<uint32_t> seen;
  for (int i = 0; i < x.duplicates_size(); ++i) {
    const std::string field = absl::StrCat("duplicates[", i, "]");
    in_range(field, x.duplicates(i), kMaxExtractableDuplicates);
    if (!seen.insert(x.duplicates(i)).second) {
      add(absl::StrCat("extractable.", field), absl::StrCat(x.duplicates(i), " is listed twice"));
      ok = false;
    }
  }
  return ok;
}

void CheckCorpus(const v1::CorpusSpec& c, const AddProblem& add) {
  if (c.name() != "fortunes") {
    add("corpus.name", absl::StrCat("must be \"fortunes\" (got ", QuoteValue(c.name()),
                                    "); use corpus.path or corpus.text for other text"));
  }
  if (!c.path().empty() && !c.text().empty()) {
    add("corpus.text", "set at most one of corpus.path and corpus.text");
  }
  if (c.max_chars() > 1'000'000'000) {
    add("corpus.max_chars", absl::StrCat("must be <= 1000000000 (got ", c.max_chars(), ")"));
  }
}

void CheckLmTraining(const v1::LanguageModelTraining& t, const AddProblem& add) {
  CheckOneOf("training.optimizer", t.optimizer(), {"adam", "sgd", "momentum", "rmsprop"}, add);
  CheckLearningRate(t.learning_rate(), add);
  CheckWeightDecay(t.weight_decay(), add);
  CheckEpochs(t.epochs(), add);
  CheckBatchSize(t.batch_size(), add);
}

bool CheckLanguageModel(const std::string& prefix, const v1::LanguageModelSpec& m,
                        const LmSizeLimits& limits, const AddProblem& add) {
  CheckTokenizer(prefix + "tokenizer.", m.tokenizer(), add);
  const std::string path_field = prefix + "torchscript_path";
  CheckLength(path_field, m.torchscript_path(), kMaxPathBytes, add);
  const bool known =
      CheckArchitecture(prefix + "architecture", m.architecture(),
                        {engine::ModelKind::kLstmLm, engine::ModelKind::kGruLm,
                         engine::ModelKind::kTransformerLm, engine::ModelKind::kTorchScript},
                        add);
  const bool transformer =
      m.architecture() == engine::ModelKindName(engine::ModelKind::kTransformerLm);
  if (transformer) {
    if (m.heads() == 0 || m.heads() > kMaxHeads) {
      add(prefix + "heads", absl::StrCat("must be in [1, ", kMaxHeads, "] (got ", m.heads(), ")"));
    } else if (m.embedding() % m.heads() != 0) {
      add(prefix + "heads", absl::StrCat("must divide embedding, the transformer's width (got ",
                                         m.heads(), " heads for width ", m.embedding(), ")"));
    }
  } else if (known && m.heads() != 0) {
    add(prefix + "heads", "applies to architecture \"transformer\" only");
  }
  if (m.architecture() != engine::ModelKindName(engine::ModelKind::kTorchScript)) {
    if (known && !m.torchscript_path().empty()) {
      add(path_field, "applies to architecture \"torchscript\" only");
    }
    const auto in_range = [&](const char* field, uint32_t value, uint32_t max) {
      if (value == 0 || value > max) {
        add(prefix + field, absl::StrCat("must be in [1, ", max, "] (got ", value, ")"));
      }
    };
    in_range("layers", m.layers(), limits.layers);
    in_range("units", m.units(), limits.units);
    in_range("embedding", m.embedding(), limits.embedding);
    if (!(m.dropout() >= 0 && m.dropout() < 1)) {
      add(prefix + "dropout", absl::StrCat("must be in [0, 1) (got ", m.dropout(), ")"));
    }
    return true;
  }
  if (m.torchscript_path().empty()) add(path_field, "required for \"torchscript\"");
  if (m.dropout() != 0) {
    add(prefix + "dropout",
        absl::StrCat("must be 0 for \"torchscript\": the module's own dropout applies (got ",
                     m.dropout(), ")"));
  }
  return false;
}

void CheckLearningRate(double learning_rate, const AddProblem& add) {
  if (!(learning_rate > 0) || !std::isfinite(learning_rate)) {
    add("training.learning_rate", absl::StrCat("must be > 0 (got ", learning_rate, ")"));
  } else if (learning_rate > kMaxLearningRate) {
    add("training.learning_rate",
        absl::StrCat("must be in (0, ", kMaxLearningRate, "] (got ", learning_rate, ")"));
  }
}

void CheckMomentum(double momentum, const AddProblem& add) {
  if (!(momentum >= 0 && momentum < 1)) {
    add("training.momentum", absl::StrCat("must be in [0, 1) (got ", momentum, ")"));
  }
}

void CheckWeightDecay(double weight_decay, const AddProblem& add) {
  if (!(weight_decay >= 0) || !std::isfinite(weight_decay)) {
    add("training.weight_decay", absl::StrCat("must be >= 0 (got ", weight_decay, ")"));
  } else if (weight_decay > kMaxWeightDecay) {
    add("training.weight_decay",
        absl::StrCat("must be in [0, ", kMaxWeightDecay, "] (got ", weight_decay, ")"));
  }
}

void CheckEpochs(uint32_t epochs, const AddProblem& add) {
  if (epochs == 0 || epochs > 10000) {
    add("training.epochs", absl::StrCat("must be in [1, 10000] (got ", epochs, ")"));
  }
}

void CheckBatchSize(uint32_t batch_size, const AddProblem& add) {
  if (batch_size == 0 || batch_size > 65536) {
    add("training.batch_size", absl::StrCat("must be in [1, 65536] (got ", batch_size, ")"));
  }
}

void CheckDpSgd(const v1::DpSgdSpec& dp, const std::string& prefix, DpSgdRules rules,
                const AddProblem& add) {
  const double noise = dp.noise_multiplier();
  if (!std::isfinite(noise) || !(rules.zero_noise ? noise >= 0 : noise > 0)) {
    add(prefix + "dp_sgd.noise_multiplier",
        absl::StrCat("must be ", rules.zero_noise ? ">= 0" : "> 0", " (got ", noise, ")"));
  }
  if (!(dp.clip_norm() > 0) || !std::isfinite(dp.clip_norm())) {
    add(prefix + "dp_sgd.clip_norm", absl::StrCat("must be > 0 (got ", dp.clip_norm(), ")"));
  }
  if (!(dp.delta() > 0 && dp.delta() < 1)) {
    add(prefix + "dp_sgd.delta", absl::StrCat("must be in (0, 1) (got ", dp.delta(), ")"));
  }
  if (rules.target_epsilon && !(dp.target_epsilon() >= 0 && dp.target_epsilon() <= 1000)) {
    add(prefix + "dp_sgd.target_epsilon",
        absl::StrCat("must be in [0, 1000]; 0 = use noise_multiplier (got ", dp.target_epsilon(),
                     ")"));
  }
}

bool CheckLength(const std::string& field, const std::string& value, size_t max,
                 const AddProblem& add) {
  if (value.size() <= max) return true;
  add(field, absl::StrCat("must be at most ", max, " bytes (got ", value.size(), ": ",
                          QuoteValue(value), ")"));
  return false;
}

bool CheckListSize(const std::string& field, int size, int min, int max, const AddProblem& add) {
  if (size >= min && size <= max) return true;
  add(field, absl::StrCat("must list ", min, " to ", max, " entries (got ", size, ")"));
  return false;
}

void CheckAuditName(const std::string& name, const AddProblem& add) {
  // Every listing shows it; the CLI fills it from the file's name, so only a
  // caller of the API can leave it empty.
  if (name.empty()) {
    add("name", "must not be empty");
    return;
  }
  if (!CheckLength("name", name, kMaxNameBytes, add)) return;
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) {
      add("name", absl::StrCat("must not contain control characters (got ", QuoteValue(name), ")"));
      return;
    }
  }
}

double LmVocabularyBound(const v1::LanguageModelSpec& m) {
  const v1::TokenizerSpec& t = m.tokenizer();
  if (t.kind() != kSentencePieceTokens) return 256;
  // Its pieces and the newline; a given file's size is known only once read.
  return (t.model_path().empty() ? t.vocab_size() : tokenizers::kMaxVocabSize) + 1.0;
}

double CharLmParameters(const std::string& architecture, uint32_t layers, uint32_t units,
                        uint32_t embedding, double vocab) {
  if (architecture == engine::ModelKindName(engine::ModelKind::kTorchScript)) return 0;
  const double kVocab = vocab;
  if (architecture == engine::ModelKindName(engine::ModelKind::kTransformerLm)) {
    // Tied token embedding, positions, per block two layer norms, the
    // query/key/value and output projections and the feed-forward pair, a
    // final layer norm (transformer_lm.h).
    const double d = embedding, f = units;
    const double block = 4 * d + (3 * d * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d);
    return kVocab * d + static_cast<double>(engine::kMinTransformerContext) * d + layers * block +
           2 * d;
  }
  const double gates = architecture == "gru" ? 3 : 4;
  const double h = units;
  double params = kVocab * embedding + (h + 1) * kVocab;
  for (uint32_t l = 0; l < layers; ++l) {
    const double in = l == 0 ? embedding : h;
    params += gates * (in * h + h * h + 2 * h);
  }
  return params;
}

void CheckCost(const std::vector<ModelGroup>& groups, const std::string& parameters_field,
               const std::string& cost_fields, const AddProblem& add) {
  double cost = 0, models = 0;
  for (const ModelGroup& g : groups) {
    if (g.parameters > kMaxModelParameters) {
      add(parameters_field, absl::StrCat("gives a model of ", g.parameters, " parameters; at most ",
                                         kMaxModelParameters));
      return;
    }
    cost += g.models * g.parameters * g.steps;
    models += g.models;
  }
  if (cost > kMaxAuditCost) {
    add("cost", absl::StrCat("the audit trains ", models, " models for ", cost,
                             " parameter-steps (models x parameters x optimizer steps); at most ",
                             kMaxAuditCost, ": lower ", cost_fields));
  }
}

}  // namespace memaudit::spec
