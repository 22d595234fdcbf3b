#include "engine/lm_documents_run.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "engine/language_model.h"
#include "engine/lm_scorer.h"
#include "engine/schedule.h"
#include "engine/text_corpus.h"
#include "engine/torch_api.h"
#include "engine/torchscript_lm.h"
#include "engine/trainer.h"

namespace memaudit::engine {
namespace {

absl::Status CheckSpec(const LmDocumentsRunSpec& spec) {
  if (spec.sequence_tokens < 2) return absl::InvalidArgumentError("sequence_tokens: must be >= 2");
  if (spec.batch_size == 0) return absl::InvalidArgumentError("batch_size: must be > 0");
  if (spec.epochs == 0) return absl::InvalidArgumentError("epochs: must be > 0");
  if (spec.pool_size == 0) return absl::InvalidArgumentError("pool_size: must be > 0");
  if (!spec.given_model_path.empty() && !spec.models.empty()) {
    return absl::InvalidArgumentError("models: a given model trains none");
  }
  for (const LmDocumentModel& m : spec.models) {
    if (m.in_pool.size() != spec.pool_size) {
      return absl::InvalidArgumentError("models: in_pool needs one entry per pool sequence");
    }
  }
  return absl::OkStatus();
}

// The corpus's tokens cut into consecutive sequences of `n`, each distinct
// one kept once (where it first occurs): a sequence both in and out of a
// model's training set would have no membership to infer.
std::vector<std::vector<int64_t>> DistinctSequences(const std::vector<int64_t>& tokens, size_t n) {
  std::vector<std::vector<int64_t>> out;
  std::set<std::vector<int64_t>> seen;
  for (size_t at = 0; at + n <= tokens.size(); at += n) {
    std::vector<int64_t> s(tokens.begin() + static_cast<std::ptrdiff_t>(at),
                           tokens.begin() + static_cast<std::ptrdiff_t>(at + n));
    if (seen.insert(s).second) out.push_back(std::move(s));
  }
  return out;
}

// Training rows: each sequence after a newline token, predicting its every
// token: x = [newline, s_0 … s_{n-2}], y = s.
TensorDataset SequenceRows(const std::vector<std::vector<int64_t>>& sequences, int64_t newline) {
  const int64_t rows = static_cast<int64_t>(sequences.size());
  const int64_t n = rows == 0 ? 0 : static_cast<int64_t>(sequences[0].size());
  std::vector<int64_t> xs, ys;
  xs.reserve(static_cast<size_t>(rows * n));
  ys.reserve(static_cast<size_t>(rows * n));
  for (const std::vector<int64_t>& s : sequences) {
    xs.push_back(newline);
    xs.insert(xs.end(), s.begin(), s.end() - 1);
    ys.insert(ys.end(), s.begin(), s.end());
  }
  return TensorDataset(torch::tensor(xs, torch::kLong).reshape({rows, n}),
                       torch::tensor(ys, torch::kLong).reshape({rows, n}));
}

std::vector<LmMembershipScores> ScoreSequences(LanguageModel& lm, const Tokenizer& vocab,
                                               const std::vector<std::vector<int64_t>>& texts) {
  const bool was_training = lm.is_training();
  lm.eval();
  const std::vector<TokenLogProbs> log_probs = TextLogProbs(lm, texts, vocab.Newline());
  std::vector<LmMembershipScores> out;
  out.reserve(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    out.push_back(MembershipScores(log_probs[i], vocab.Decode(texts[i])));
  }
  if (was_training) lm.train();
  return out;
}

// Whether each of `sequences` (all of one length n) occurs in `text`'s
// tokens: every n-token window of the text is hashed (polynomial, 64-bit)
// with its start, sorted, and a hash match is confirmed token by token.
std::vector<uint8_t> OccurIn(const std::vector<std::vector<int64_t>>& sequences,
                             const std::vector<int64_t>& text) {
  std::vector<uint8_t> out(sequences.size(), 0);
  if (sequences.empty() || text.size() < sequences[0].size()) return out;
  const size_t n = sequences[0].size();
  constexpr uint64_t kBase = 1'000'003;
  uint64_t top = 1;  // kBase^(n-1)
  for (size_t i = 1; i < n; ++i) top *= kBase;
  const auto token = [](int64_t t) { return static_cast<uint64_t>(t) + 1; };
  std::vector<std::pair<uint64_t, size_t>> windows;
  windows.reserve(text.size() - n + 1);
  uint64_t h = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (i >= n) h -= token(text[i - n]) * top;
    h = h * kBase + token(text[i]);
    if (i + 1 >= n) windows.emplace_back(h, i + 1 - n);
  }
  std::sort(windows.begin(), windows.end());
  for (size_t s = 0; s < sequences.size(); ++s) {
    uint64_t key = 0;
    for (int64_t t : sequences[s]) key = key * kBase + token(t);
    for (auto it = std::lower_bound(windows.begin(), windows.end(), std::make_pair(key, size_t{0}));
         it != windows.end() && it->first == key && !out[s]; ++it) {
      out[s] = std::equal(sequences[s].begin(), sequences[s].end(),
                          text.begin() + static_cast<std::ptrdiff_t>(it->second));
    }
  }
  return out;
}

// A team's model, scored as it is: the module over the audit tokenizer's
// ids, or over its own characters (each sequence's text encoded again).
absl::Status ScoreGivenModel(const LmDocumentsRunSpec& spec, const Tokenizer& vocab,
                             const std::vector<std::vector<int64_t>>& pool_texts,
                             const std::vector<std::vector<int64_t>>& population_texts,
                             LmDocumentsRunResult* result) {
  std::optional<CharVocab> chars;
  if (!spec.tokenizer) {
    MEMAUDIT_ASSIGN_OR_RETURN(chars, TorchScriptLmVocabulary(spec.given_model_path));
  }
  const Tokenizer* own = chars.has_value() ? &*chars : &vocab;
  MEMAUDIT_ASSIGN_OR_RETURN(
      std::shared_ptr<TorchScriptLm> lm,
      LoadTorchScriptLm(spec.given_model_path, false, spec.tokenizer ? vocab.size() : 0));
  lm->eval();
  const auto reencode = [&](const std::vector<std::vector<int64_t>>& texts) {
    if (spec.tokenizer) return texts;
    std::vector<std::vector<int64_t>> out;
    for (const std::vector<int64_t>& t : texts) out.push_back(own->Encode(vocab.Decode(t)));
    return out;
  };
  LmDocumentScores& scores = result->models.emplace_back();
  scores.pool = ScoreSequences(*lm, *own, reencode(pool_texts));
  scores.population = ScoreSequences(*lm, *own, reencode(population_texts));
  result->members = OccurIn(pool_texts, vocab.Encode(spec.members_text));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LmDocumentsRunResult> RunLmDocuments(const LmDocumentsRunSpec& spec,
                                                    const LmDocumentsStepCallback& on_step) {
  MEMAUDIT_RETURN_IF_ERROR(CheckSpec(spec));
  MEMAUDIT_ASSIGN_OR_RETURN(const std::string corpus,
                            LoadCorpus(spec.corpus_text, spec.corpus_path, spec.max_corpus_chars));
  // Every model of the audit encodes with the same tokenizer: trained on the
  // corpus as loaded, or characters of the whole corpus.
  MEMAUDIT_ASSIGN_OR_RETURN(const std::shared_ptr<const Tokenizer> tokenizer,
                            LmTokenizer(spec.lm, spec.torchscript_path, spec.tokenizer, corpus,
                                        CanaryFormat{}, "the corpus's newline"));
  const Tokenizer& vocab = *tokenizer;
  const std::vector<std::vector<int64_t>> sequences =
      DistinctSequences(vocab.Encode(corpus), spec.sequence_tokens);
  const uint32_t count = static_cast<uint32_t>(std::min<size_t>(sequences.size(), UINT32_MAX));
  const std::vector<uint32_t> pool = AuditPool(spec.pool_seed, count, spec.pool_size);
  const std::vector<uint32_t> population = AuditPopulation(
      spec.pool_seed, count, static_cast<uint32_t>(pool.size()), spec.population_size);
  if (pool.size() != spec.pool_size || population.size() != spec.population_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("pool_size: ", spec.pool_size, " + population_size ", spec.population_size,
                     " exceeds the corpus's ", count, " distinct sequences of ",
                     spec.sequence_tokens, " tokens (", vocab.Describe(), ")"));
  }
  std::vector<std::vector<int64_t>> pool_texts, population_texts;
  for (uint32_t i : pool) pool_texts.push_back(sequences[i]);
  for (uint32_t i : population) population_texts.push_back(sequences[i]);
  LmDocumentsRunResult result;
  if (!spec.given_model_path.empty()) {
    // No trainer sets the threads for a model scored as it is.
    if (spec.threads > 0) torch::set_num_threads(static_cast<int>(spec.threads));
    MEMAUDIT_RETURN_IF_ERROR(ScoreGivenModel(spec, vocab, pool_texts, population_texts, &result));
    return result;
  }
  const TensorDataset rows = SequenceRows(pool_texts, vocab.Newline());

  ModelSpec model =
      CharLmSpec(spec.lm, vocab.size(), spec.embedding, spec.layers, spec.units, spec.dropout,
                 spec.torchscript_path, spec.heads, spec.sequence_tokens);
  model.token_ids = spec.tokenizer != nullptr;
  uint64_t steps_before = 0;
  for (const LmDocumentModel& m : spec.models) {
    TrainerOptions options;
    options.optimizer = spec.optimizer;
    options.dropout_seed = m.dropout_seed;
    options.threads = spec.threads == 0 ? 1 : spec.threads;
    options.device = spec.device;
    const uint64_t init = m.init_seed;
    MEMAUDIT_ASSIGN_OR_RETURN(
        auto trainer, Trainer::Create([model, init] { return BuildModel(model, init); }, options));
    std::vector<int64_t> members;
    for (uint32_t j = 0; j < spec.pool_size; ++j) {
      if (m.in_pool[j] != 0) members.push_back(j);
    }
    if (members.empty()) return absl::InvalidArgumentError("models: a model trains on nothing");
    EpochSchedule schedule(members, spec.batch_size, m.order_seed);
    const uint64_t steps = uint64_t{spec.epochs} * schedule.steps_per_epoch();
    MEMAUDIT_RETURN_IF_ERROR(trainer->Train(rows, schedule, steps, [&](uint64_t done, double) {
      return !on_step || on_step(steps_before + done);
    }));
    steps_before += steps;
    LanguageModel& lm = static_cast<LanguageModel&>(trainer->model());
    LmDocumentScores& scores = result.models.emplace_back();
    scores.pool = ScoreSequences(lm, vocab, pool_texts);
    scores.population = ScoreSequences(lm, vocab, population_texts);
  }
  return result;
}

}  // namespace memaudit::engine
