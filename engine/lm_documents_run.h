// Torch-free facade for membership of documents in a language model: the
// corpus's tokens cut into consecutive sequences of `sequence_tokens` (each
// distinct sequence one example), the audit's pool and population drawn
// from them as a dataset's rows are (common/base/seeding.h), and each model
// trained on its half of the pool, one training row per sequence, then
// scoring every pool and population sequence (docs/scoring.md, "Membership
// of documents").
#ifndef MEMAUDIT_ENGINE_LM_DOCUMENTS_RUN_H_
#define MEMAUDIT_ENGINE_LM_DOCUMENTS_RUN_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/training/model_spec.h"
#include "common/training/tokenizer.h"
#include "engine/lm_membership_signals.h"
#include "engine/optimizer_spec.h"

namespace memaudit::engine {

// One model of the task: its seeds and which pool sequences it trains on.
struct LmDocumentModel {
  uint64_t init_seed = 0;
  uint64_t order_seed = 0;
  uint64_t dropout_seed = 0;
  std::vector<uint8_t> in_pool;  // per pool sequence: 1 = a training row
};

struct LmDocumentsRunSpec {
  std::string corpus_path;  // empty: corpus_text, else the fortunes package
  std::string corpus_text;
  uint64_t max_corpus_chars = 0;
  // kLstmLm, kGruLm, kTransformerLm or kTorchScript (torchscript_lm.h).
  ModelKind lm = ModelKind::kTransformerLm;
  std::string torchscript_path;
  // A SentencePiece model (given, or trained on the corpus as loaded);
  // empty = characters.
  TokenizerFactory tokenizer;
  int64_t layers = 2;
  int64_t units = 256;
  int64_t embedding = 64;
  int64_t heads = 4;
  double dropout = 0.0;
  OptimizerSpec optimizer{OptimizerKind::kAdam, 3e-3};
  uint32_t batch_size = 32;
  uint32_t epochs = 1;
  uint32_t sequence_tokens = 64;
  // Draws the pool and the population among the distinct sequences.
  uint64_t pool_seed = 0;
  uint32_t pool_size = 0;
  uint32_t population_size = 0;
  std::vector<LmDocumentModel> models;
  // Set: a model trained outside memaudit (a TorchScript module, the
  // contract of torchscript_lm.h) is scored as it is, in eval mode, instead
  // of training `models`: over the tokenizer's ids, or with characters its
  // own vocabulary's. The sequences are still cut with the audit's
  // tokenizer (the one `lm` and `tokenizer` give its reference models).
  std::string given_model_path;
  // With given_model_path: the text it trained on. A pool sequence is a
  // member when its tokens occur in this text's (encoded the same way).
  std::string members_text;
  uint32_t threads = 1;
  std::string device;  // empty: the process default (engine/device.h)
};

// A model's scores of every pool sequence, then every population sequence
// (each scored after a newline token, as it trained).
struct LmDocumentScores {
  std::vector<LmMembershipScores> pool;
  std::vector<LmMembershipScores> population;
};

struct LmDocumentsRunResult {
  std::vector<LmDocumentScores> models;  // one per spec model, or the given one
  std::vector<uint8_t> members;          // given model: per pool sequence, 1 = in its text
};

// Called after every optimizer step with the steps of the task so far (its
// models' summed); false cancels.
using LmDocumentsStepCallback = std::function<bool(uint64_t steps)>;

absl::StatusOr<LmDocumentsRunResult> RunLmDocuments(const LmDocumentsRunSpec& spec,
                                                    const LmDocumentsStepCallback& on_step);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_LM_DOCUMENTS_RUN_H_
