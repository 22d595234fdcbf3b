// Scoring sequences with a character LM (any LanguageModel): log-perplexity Px in bits,
// Px(x) = sum_i -log2 Pr(x_i | x_<i), of canary candidates given a context,
// plus greedy and beam completion. Every model step is counted as a query.
#ifndef MEMAUDIT_ENGINE_LM_SCORER_H_
#define MEMAUDIT_ENGINE_LM_SCORER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/extractable.h"
#include "engine/language_model.h"
#include "engine/lm_membership_signals.h"
#include "engine/text_corpus.h"
#include "engine/torch_api.h"

namespace memaudit::engine {

// A canary format in token ids: the context (start token + prefix) and the
// allowed tokens of every scored position (holes, then suffix characters as
// one-token positions, since they vary with the hole through conditioning).
struct TokenFormat {
  std::vector<int64_t> context;
  std::vector<std::vector<int64_t>> positions;
  size_t length() const { return positions.size(); }
};

// How many leading tokens `a` and `b` share.
size_t SharedPrefixLength(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

// Start-of-sequence convention: every canary is scored after a newline, the
// way it appears in the corpus (on its own line). The context is the tokens
// the line shares with "\n" + prefix spelled alone; the positions are the
// rest of the line, each hole one token (INVALID_ARGUMENT naming the
// alphabet where the tokenizer joins a hole character with a neighbour).
absl::StatusOr<TokenFormat> ToTokenFormat(const Tokenizer& tokenizer, const CanaryFormat& format);

// Token ids of the canary line's positions (holes, then the rest) for `secret`.
absl::StatusOr<std::vector<int64_t>> SecretTokens(const Tokenizer& tokenizer,
                                                  const TokenFormat& tokens,
                                                  const CanaryFormat& format,
                                                  const std::string& secret);

inline constexpr double kLn2 = 0.69314718055994530942;

class LmScorer {
 public:
  explicit LmScorer(LanguageModel& model);

  // Feeds `context` from the zero state; returns next-token log-probs [1, V]
  // (float64, CPU) and the state. Counts one query.
  torch::Tensor Context(const std::vector<int64_t>& context, LmState* state);
  // Advances M states by one token each; returns log-probs [M, V] (float64,
  // CPU). Counts M queries.
  torch::Tensor Step(const std::vector<int64_t>& tokens, LmState* state);

  uint64_t queries() const { return queries_; }
  void reset_queries() { queries_ = 0; }
  LanguageModel& model() { return model_; }

 private:
  LanguageModel& model_;
  torch::Device device_;
  uint64_t queries_ = 0;
};

// Px in bits of `tokens` at the format's positions, walking the path one step
// at a time (the same arithmetic the trie search uses).
double PathPxBits(LmScorer& scorer, const TokenFormat& format, const std::vector<int64_t>& tokens);

// Naive scoring: each candidate's full sequence run through the model in
// batches of `batch`, independently of every other candidate.
std::vector<double> NaivePxBits(LmScorer& scorer, const TokenFormat& format,
                                const std::vector<std::vector<int64_t>>& candidates,
                                size_t batch = 256);

struct Completion {
  std::vector<int64_t> tokens;
  double px_bits = 0;
};

// Teacher-forced log-probabilities of each text (token ids, all of one
// length) after `start`, `batch` texts at a time: for every token its log p
// and the mean and stddev of log p under the model's distribution there.
std::vector<TokenLogProbs> TextLogProbs(LanguageModel& model,
                                        const std::vector<std::vector<int64_t>>& texts,
                                        int64_t start, size_t batch = 64);

// Each held-out sequence's first setup.prefix tokens, after a newline as
// every line starts in training, continued greedily (`decode`): extracted
// when the next setup.suffix tokens are the sequence's own. Its membership
// scores always (a model trained without any of the sequences scores them
// for the reference attacks). Eval mode, restored after.
std::vector<ExtractableSequence> MeasureExtractable(LanguageModel& lm, const Tokenizer& vocab,
                                                    const ExtractableSetup& setup,
                                                    const std::vector<std::string>& held_out,
                                                    bool decode);

// Greedy decoding of `length` tokens after each prompt (all of one length),
// `batch` prompts at a time: the most likely token at every step, through the
// model's state (for the transformer, its key/value cache).
std::vector<std::vector<int64_t>> GreedyContinuations(
    LanguageModel& model, const std::vector<std::vector<int64_t>>& prompts, size_t length,
    size_t batch = 256);

// Greedy: the most likely allowed token at each position.
Completion GreedyComplete(LmScorer& scorer, const TokenFormat& format);
// Beam search keeping the `width` lowest partial Px.
Completion BeamComplete(LmScorer& scorer, const TokenFormat& format, size_t width);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_LM_SCORER_H_
