// Rule checks every audit kind's validator shares. Each reports through
// `add(field, rule)` with the field relative to the kind ("training.epochs"),
// so messages read the same whichever kind they come from.
#ifndef MEMAUDIT_SPEC_SPEC_RULES_H_
#define MEMAUDIT_SPEC_SPEC_RULES_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/messages/spec_yaml.h"
#include "common/training/held_out_lines.h"
#include "common/training/model_limits.h"
#include "common/training/model_spec.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit::spec {

using AddProblem = std::function<void(std::string field, std::string rule)>;

// Limits every kind shares (docs/spec.md, "Limits"). Strings and lists are
// bounded before anything is computed from them.
inline constexpr size_t kMaxNameBytes = 128;                // the audit's name
inline constexpr size_t kMaxPathBytes = 4096;               // file and folder paths
inline constexpr size_t kMaxTextBytes = 1 << 20;            // inline corpus text
inline constexpr size_t kMaxPrefixBytes = 1024;             // canary prefixes, record templates
inline constexpr size_t kMaxAlphabetBytes = 4096;           // one canary hole's characters
inline constexpr int kMaxAlphabets = 64;                    // canary holes
inline constexpr int kMaxNameLists = 16;                    // attacks, metrics, features, ...
inline constexpr double kMaxLearningRate = 100;             // training.learning_rate
inline constexpr double kMaxWeightDecay = 100;              // training.weight_decay
inline constexpr uint64_t kMaxQueryBudget = 1'000'000'000;  // model steps per query budget
// An audit's training cost: models x parameters x optimizer steps, summed
// over every model (one model's bound: kMaxModelParameters, model_limits.h).
inline constexpr double kMaxAuditCost = 1e15;
// This many model queries (a query: one character's forward pass, to rank or
// extract a canary) count as one optimizer step (a batch of sequences forward
// and backward) in the cost. Conservative: a step of batch 32 x 64 characters
// costs about 6,000 queries.
inline constexpr double kQueriesPerStep = 1000;

// `value` at most `max` bytes: "must be at most 4096 bytes (got 52428800)".
// Returns whether it is.
bool CheckLength(const std::string& field, const std::string& value, size_t max,
                 const AddProblem& add);

// A list of `size` entries in [min, max]: "must list 1 to 64 entries (got
// 5000000)". Returns whether it is, that is, whether its entries may be
// checked one by one (a list too long is one problem, not millions).
bool CheckListSize(const std::string& field, int size, int min, int max, const AddProblem& add);

// The name: 1 … kMaxNameBytes bytes, no control characters.
void CheckAuditName(const std::string& name, const AddProblem& add);

// A language model's parameters over a vocabulary of `vocab` tokens (0 for
// torchscript, whose size the spec does not say; its load bounds it).
double CharLmParameters(const std::string& architecture, uint32_t layers, uint32_t units,
                        uint32_t embedding, double vocab = 256);

// The most tokens a language model's vocabulary can hold: 256 for
// characters (as the cost estimate counts them), a trained tokenizer's
// vocab_size + 1, kMaxVocabSize + 1 for a given model file.
double LmVocabularyBound(const v1::LanguageModelSpec& m);

// The LSTM/GRU sizes a kind allows: each in [1, max].
inline constexpr uint32_t kMaxHeads = 64;

struct LmSizeLimits {
  uint32_t layers = 8;
  uint32_t units = 4096;
  uint32_t embedding = 4096;
};

// The language-model defaults every LM kind shares: lstm, 1 layer, 128
// units, embedding 32; a transformer 4 heads.
// model.tokenizer.kind's values.
inline constexpr char kCharacterTokens[] = "characters";
inline constexpr char kSentencePieceTokens[] = "sentencepiece";

void ApplyLanguageModelDefaults(v1::LanguageModelSpec* m);

// A tokenizer: kind "characters" or "sentencepiece"; model_path for a given
// model (its content_hash recorded at Submit), else vocab_size and
// model_type for one trained on the corpus; each only where it applies.
void CheckTokenizer(const std::string& prefix, const v1::TokenizerSpec& t, const AddProblem& add);

// A language model's architecture ("lstm", "gru", "transformer" or
// "torchscript"), its
// torchscript_path (required for, and only for, "torchscript") and, for
// torchscript, dropout 0: the module's own dropout applies; heads (for and
// only for "transformer") in [1, kMaxHeads] dividing embedding. `prefix` names
// the message ("model.", "canaries.model."). For every architecture but
// "torchscript" (which ignores them), an unknown one too, so that all of a
// bad spec's problems are reported at once: layers, units and embedding
// within `limits`, dropout in [0, 1). Returns whether those sizes apply.
bool CheckLanguageModel(const std::string& prefix, const v1::LanguageModelSpec& m,
                        const LmSizeLimits& limits, const AddProblem& add);

// A corpus block ("corpus.*"): the name "fortunes" (path or text replace
// it), at most one of path and text, max_chars <= 10^9. Their byte lengths
// are the caller's to check first.
void CheckCorpus(const v1::CorpusSpec& c, const AddProblem& add);

// An LM recipe ("training.*"): optimizer, learning rate, weight decay,
// epochs and batch size; the window is the kind's to check.
void CheckLmTraining(const v1::LanguageModelTraining& t, const AddProblem& add);

// Extractable memorization's block (exposure.extractable,
// forgetting.canaries.extractable): its limits, the lines it holds out of the
// corpus (every group's sequences and the controls), its defaults (`chars`
// + `chars` tokens, duplicates 1, 2, 4, … 64, 32 sequences) and its rules
// ("extractable.*": sizes, distinct duplicates; returns whether they hold).
inline constexpr uint32_t kMaxExtractableChars = 256;
inline constexpr uint32_t kMaxExtractableSequences = 1000;
inline constexpr int kMaxExtractableGroups = 16;
inline constexpr uint32_t kMaxExtractableDuplicates = 1000;
inline size_t ExtractableHeldOut(const v1::ExtractableSpec& x) {
  return memaudit::ExtractableHeldOut(x.duplicates_size(), x.sequences());
}
void ApplyExtractableDefaults(v1::ExtractableSpec* x, uint32_t chars);
bool CheckExtractable(const v1::ExtractableSpec& x, const AddProblem& add);

// One group of identical models for the cost estimate.
struct ModelGroup {
  double models = 0;
  double parameters = 0;  // per model
  double steps = 0;       // optimizer steps per model
};

// Each group's models at most kMaxModelParameters (the problem is reported at
// `parameters_field`, the fields that size the model), and the sum of models
// x parameters x steps at most kMaxAuditCost (reported at "cost", naming
// `cost_fields`, the fields that would lower it).
void CheckCost(const std::vector<ModelGroup>& groups, const std::string& parameters_field,
               const std::string& cost_fields, const AddProblem& add);

bool OneOf(const std::string& value, const std::vector<std::string>& allowed);

// `value` must be one of `allowed`: "must be one of a, b (got "x")".
void CheckOneOf(const std::string& field, const std::string& value,
                const std::vector<std::string>& allowed, const AddProblem& add);

// `field` (a model.architecture) must name one of `allowed` (engine's
// ModelKindName): "must be \"lstm\" or \"gru\" (got \"x\")". Returns whether it does.
bool CheckArchitecture(const std::string& field, const std::string& value,
                       const std::vector<engine::ModelKind>& allowed, const AddProblem& add);

// An image classifier's `model` (relative field names "model.*"): the
// architecture is one of `allowed`, then the widths, dropout and TorchScript
// path suit it. `dropout` says whether the kind trains with dropout; if not,
// model.dropout must be 0 rather than silently ignored.
void CheckImageModel(const v1::ModelSpec& m, const std::vector<engine::ModelKind>& allowed,
                     bool dropout, const AddProblem& add);

// training.learning_rate in (0, kMaxLearningRate].
void CheckLearningRate(double learning_rate, const AddProblem& add);
// training.momentum in [0, 1).
void CheckMomentum(double momentum, const AddProblem& add);
// training.weight_decay in [0, kMaxWeightDecay].
void CheckWeightDecay(double weight_decay, const AddProblem& add);
// training.epochs in [1, 10000].
void CheckEpochs(uint32_t epochs, const AddProblem& add);
// training.batch_size in [1, 65536].
void CheckBatchSize(uint32_t batch_size, const AddProblem& add);

// What a kind allows of dp_sgd beyond the common rules (noise_multiplier > 0,
// clip_norm > 0, delta in (0, 1)).
struct DpSgdRules {
  // noise_multiplier 0: clipping without noise (a dp_audit's ceiling);
  // elsewhere it would report epsilon = infinity, and clipping alone is not DP.
  bool zero_noise = false;
  // target_epsilon in [0, 1000] (0 = use noise_multiplier) is checked.
  bool target_epsilon = false;
};
// dp_sgd's fields, reported as `prefix` + "dp_sgd.<field>".
void CheckDpSgd(const v1::DpSgdSpec& dp, const std::string& prefix, DpSgdRules rules,
                const AddProblem& add);

}  // namespace memaudit::spec

#endif  // MEMAUDIT_SPEC_SPEC_RULES_H_
