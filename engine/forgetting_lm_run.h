// Torch-free facade for the forgetting audit on language-model canaries (the
// paper's C4 setup at CPU scale), over a canary batch in which canary i
// appears copies[i] times. Inject (Alg. 2): per trial a character LM trains on
// a corpus for T_I steps (the checkpoint), the injected arm takes `passes`
// passes over the canary batch, the baseline arm does not, and both continue
// on the corpus. Poison (Alg. 1): both arms start from the same
// initialization; the injected arm trains T_I steps of epochs over the corpus
// windows plus the canary batch, the baseline T_I steps over the corpus alone
// (its state at T_I is the checkpoint); then the canaries are removed and both
// continue on the corpus. At the checkpoint and at every evaluation point the
// facade measures each canary's exposure (Secret Sharer rank over the whole
// canary space) under both arms, never-inserted controls included.
#ifndef MEMAUDIT_ENGINE_FORGETTING_LM_RUN_H_
#define MEMAUDIT_ENGINE_FORGETTING_LM_RUN_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/training/model_spec.h"
#include "common/training/tokenizer.h"
#include "engine/extractable.h"
#include "engine/optimizer_spec.h"

namespace memaudit::engine {

struct ForgettingLmRunSpec {
  std::string corpus_path;  // empty: corpus_text, else the fortunes package
  std::string corpus_text;
  uint64_t max_corpus_chars = 0;  // 0 = the whole corpus (cut at a line end)
  std::string prefix = "my secret code is ";
  uint32_t digits = 5;
  std::vector<std::string> alphabets;  // set: one hole per entry, replacing digits
  // Copies of each inserted canary in the canary batch, one entry per canary;
  // then `controls` never-inserted canaries from the same space.
  std::vector<uint32_t> copies;
  uint32_t controls = 8;
  // kLstmLm, kGruLm, kTransformerLm, or kTorchScript: a team's module at torchscript_path
  // (torchscript_lm.h), whose vocabulary must hold every canary character;
  // layers, units, embedding and dropout then unused.
  ModelKind lm = ModelKind::kLstmLm;
  std::string torchscript_path;
  // The tokenizer (a SentencePiece model, given or trained on the corpus);
  // empty = characters (exposure_run.h).
  TokenizerFactory tokenizer;
  int64_t layers = 1;
  int64_t units = 128;
  int64_t embedding = 32;
  int64_t heads = 4;  // kTransformerLm
  double dropout = 0;
  OptimizerSpec optimizer{OptimizerKind::kAdam, 2e-3};
  uint32_t window = 64;
  uint32_t batch_size = 32;
  uint64_t steps_before = 1000;  // T_I
  // Poison: the canary batch is part of the training set for the first T_I
  // steps (no injection steps); else Inject.
  bool poison = false;
  uint32_t passes = 1;  // Inject: passes over the canary batch at T_I
  bool paired = true;
  std::vector<uint64_t> eval_points;  // corpus steps since injection, ascending
  // Model queries per model and point: the whole space is enumerated when its
  // trie needs at most this many, else each canary is ranked by
  // branch-and-bound within it (a lower bound on the rank when it runs out).
  uint64_t rank_query_budget = 2'000'000;
  // Extractable memorization as a forgetting curve (sequences > 0): corpus
  // lines held out of the text, group g's inserted duplicates[g] times into
  // the canary batch beside the canaries, each measured at every point in
  // both arms (extractable.h).
  ExtractableSetup extractable;
  uint64_t canary_seed = 0;  // secrets and canary-batch windows: the trial's own
  uint64_t init_seed = 0;
  uint64_t order_seed = 0;
  uint32_t threads = 1;
};

// Per canary (inserted in spec order, then controls).
struct CanaryExposures {
  std::vector<double> exposure;  // log2|R| - log2 rank
  std::vector<uint8_t> exact;    // 0: the rank is a lower bound
};

struct ForgettingLmPoint {
  uint64_t steps_since_injection = 0;
  CanaryExposures injected, baseline;
  // Per held-out sequence (groups in order, then the controls): 1 when greedy
  // decoding from its prefix gives its suffix back, in each arm.
  std::vector<uint8_t> extracted_injected, extracted_baseline;
};

struct ForgettingLmRunResult {
  double log2_space = 0;
  std::vector<std::string> secrets;
  // Inject: both arms at T_I, before the injection. Poison: the baseline arm
  // at T_I (the arms share no prefix).
  CanaryExposures checkpoint;
  std::vector<ForgettingLmPoint> points;
  uint64_t injection_steps = 0;  // 0 with Poison
  uint64_t steps = 0;            // optimizer steps, both arms
};

// Injection steps: passes x ceil(sum(copies) / batch_size); 0 with Poison.
uint64_t ForgettingLmInjectionSteps(const ForgettingLmRunSpec& spec);
// Inject: T_I + injection steps + 2 x the last evaluation point.
// Poison: 2 x T_I + 2 x the last evaluation point.
uint64_t ForgettingLmTrialSteps(const ForgettingLmRunSpec& spec);

using ForgettingLmStepCallback = std::function<bool(uint64_t steps_done)>;
using ForgettingLmPointCallback = std::function<void(const ForgettingLmRunResult& so_far)>;

absl::StatusOr<ForgettingLmRunResult> RunForgettingLm(
    const ForgettingLmRunSpec& spec, const ForgettingLmStepCallback& on_step,
    const ForgettingLmPointCallback& on_point = nullptr);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_FORGETTING_LM_RUN_H_
