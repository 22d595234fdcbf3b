// Torch-free facade for the Secret Sharer audit: train a character LM on a
// corpus with canaries inserted r times (plus never-inserted controls), then
// measure each canary's Px, exact rank (branch-and-bound) and exposure, and
// try to extract the most-inserted canary by shortest-path search.
#ifndef MEMAUDIT_ENGINE_EXPOSURE_RUN_H_
#define MEMAUDIT_ENGINE_EXPOSURE_RUN_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/training/model_spec.h"
#include "common/training/tokenizer.h"
#include "engine/extractable.h"
#include "engine/optimizer_spec.h"

namespace memaudit::engine {

struct ExposureRunSpec {
  std::string corpus_path;  // empty: corpus_text, else the fortunes package
  std::string corpus_text;
  uint64_t max_corpus_chars = 0;  // 0 = the whole corpus (a prefix otherwise)
  std::string prefix = "the random number is ";
  uint32_t digits = 6;
  // Per-position alphabets (UTF-8 characters allowed in each hole); when set
  // they replace `digits`.
  std::vector<std::string> alphabets;
  std::vector<uint32_t> repeats = {1, 4, 16, 64};  // one inserted canary per entry
  uint32_t controls = 2;                           // never-inserted canaries
  // kLstmLm, kGruLm, kTransformerLm, or kTorchScript: a team's module at torchscript_path
  // (torchscript_lm.h), whose vocabulary must hold every canary character;
  // layers, units, embedding and dropout then unused.
  ModelKind lm = ModelKind::kLstmLm;
  std::string torchscript_path;
  // A model trained outside memaudit: torchscript_path (kTorchScript) is
  // measured as it is, with no corpus and no training (steps 0), and the
  // inserted canaries are these secrets (repeats[i] the times secrets[i]
  // was in its training data); the controls are drawn from `seed` among the
  // other fillings.
  bool given_model = false;
  // The tokenizer (a SentencePiece model, given or trained on the corpus as
  // loaded); empty = characters (CanaryVocab, or a TorchScript module's own).
  TokenizerFactory tokenizer;
  std::vector<std::string> given_secrets;
  int64_t layers = 1;
  int64_t units = 128;
  int64_t embedding = 32;
  int64_t heads = 4;  // kTransformerLm
  double dropout = 0.0;
  OptimizerSpec optimizer{OptimizerKind::kAdam, 3e-3};
  uint32_t window = 64;
  uint32_t batch_size = 32;
  uint32_t epochs = 1;
  // Canaries, insertion positions and the reference sample derive from
  // `seed`; init, batch order, dropout and DP noise from `model_seed` (unset:
  // `seed`). Models of one audit share `seed`, so they score the same
  // canaries and the same S.
  uint64_t seed = 0;
  std::optional<uint64_t> model_seed;
  // false: train on the corpus alone (baseline and reference models); the
  // canaries are still drawn and scored.
  bool insert_canaries = true;
  // false: Px only, no exact rank (rank 0, exact false).
  bool rank_canaries = true;
  // DP-SGD: every training window clipped to dp_clip_norm, Gaussian noise of
  // std dp_noise_multiplier * dp_clip_norm; epsilon reported at dp_delta.
  bool dp = false;
  double dp_clip_norm = 1.0;
  double dp_noise_multiplier = 1.0;
  double dp_delta = 1e-5;
  uint64_t rank_query_budget = 2'000'000;  // per canary; past it the rank is a bound
  uint64_t extraction_query_budget = 100'000;
  bool extract = true;
  // |S|: Px of this many seeded uniform candidates that equal no canary, for
  // the sampled and extrapolated estimators (0 = none).
  uint32_t reference_samples = 0;
  // Px of every candidate of R, in lexicographic order (lm_search.h's
  // EnumerateAllPx), for the exact calibrated rank; |R| <= 2^27.
  bool enumerate_space = false;
  // Evaluation points (at most one of the two; neither = the final model
  // only): measure every canary's Px and exact rank every `eval_every_steps`
  // steps, or at the end of every epoch, in eval mode between steps (the
  // training is bit-identical with or without them). The points are
  // exposure::IntermediateEvalSteps plus the final model.
  uint64_t eval_every_steps = 0;
  bool eval_every_epoch = false;
  // Extractable memorization (Quantifying Memorization Across Neural
  // Language Models), on when extractable.sequences > 0: corpus lines held
  // out of every model's text (extractable.h), group g's inserted again
  // duplicates[g] times (where insert_canaries), the controls never. The
  // final model is prompted with each one's first `prefix` tokens after a
  // newline and continues greedily for `suffix` tokens; a model without
  // insertions (a reference model) only scores every sequence
  // (ExtractableSequence::membership), for the reference attacks.
  ExtractableSetup extractable;
  uint32_t threads = 1;
  std::string device;  // empty: the process default (engine/device.h)
};

struct CanaryExposure {
  std::string secret;
  uint32_t repeats = 0;  // 0 = control
  double px_bits = 0;
  uint64_t rank = 0;
  bool exact = false;   // false: rank is a lower bound, exposure an upper bound
  double exposure = 0;  // log2|R| - log2 rank
  uint64_t queries = 0;
};

// The canaries measured at one evaluation point.
struct ExposurePoint {
  uint64_t steps = 0;  // optimizer steps done
  bool final = false;  // the final model (its canaries are the result's)
  std::vector<CanaryExposure> canaries;
};

struct ExposureRunResult {
  double log2_space = 0;
  std::vector<CanaryExposure> canaries;
  uint64_t steps = 0;
  double final_loss = 0;   // mean training loss of the last epoch, nats/char
  bool extracted = false;  // shortest-path search returned the most-inserted canary
  std::string extraction;
  uint64_t extraction_queries = 0;
  std::vector<double> reference_px;  // bits, one per reference sample
  // enumerate_space: Px of all of R (bits, lexicographic order) and each
  // canary's index in it, in canary order.
  std::vector<double> space_px;
  std::vector<uint64_t> space_index;
  uint64_t windows = 0;  // training windows (DP's unit of privacy)
  // DP-SGD only: epsilon at dp_delta (RDP accountant, sampling rate
  // batch / windows, as TF-Privacy's compute_dp_sgd_privacy).
  double dp_epsilon = 0;
  // With evaluation points: every point, ascending steps, the last the final
  // model (its canaries equal `canaries`). Empty without.
  std::vector<ExposurePoint> points;
  // Extractable memorization: the inserted groups' sequences in spec order,
  // then the controls. Empty when off.
  std::vector<ExtractableSequence> extractable;
};

// Called after every step; false stops training (CANCELLED).
using ExposureStepCallback = std::function<bool(uint64_t steps_done)>;

// Called with each evaluation point as it is measured (the final one too,
// after the final measurement); a non-OK status stops the run with it.
using ExposurePointCallback = std::function<absl::Status(const ExposurePoint& point)>;

absl::StatusOr<ExposureRunResult> RunExposure(const ExposureRunSpec& spec,
                                              const ExposureStepCallback& on_step,
                                              const ExposurePointCallback& on_point = nullptr);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_EXPOSURE_RUN_H_
