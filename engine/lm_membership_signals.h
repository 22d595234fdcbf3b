// Reference-free membership scores of one text under a language model, from
// its per-token log-probabilities: the attacks the literature runs on
// documents in LLMs. Every score is higher for a text the model is more
// likely to have trained on (docs/scoring.md, "Membership of sequences").
// Torch-free: the engine fills TokenLogProbs, these do the arithmetic.
#ifndef MEMAUDIT_ENGINE_LM_MEMBERSHIP_SIGNALS_H_
#define MEMAUDIT_ENGINE_LM_MEMBERSHIP_SIGNALS_H_

#include <cstddef>
#include <string>
#include <vector>

namespace memaudit::engine {

// For each predicted token t of a text: log p(x_t | x_<t) (natural log), and
// the mean and standard deviation of log p(z | x_<t) over z drawn from that
// same distribution (Min-K%++'s normalisation).
struct TokenLogProbs {
  std::vector<double> log_prob;
  std::vector<double> mean;
  std::vector<double> stddev;
};

// The fraction of tokens Min-K% and Min-K%++ average over (their papers' 20%).
inline constexpr double kMinKFraction = 0.2;

// The attacks' papers: loss, Privacy Risk in Machine Learning: Analyzing the
// Connection to Overfitting; zlib, Extracting Training Data from Large
// Language Models; Min-K%, Detecting Pretraining Data from Large Language
// Models; Min-K%++, Min-K%++: Improved Baseline for Detecting Pre-Training
// Data from Large Language Models.
struct LmMembershipScores {
  double loss = 0;        // mean log p(x_t | x_<t): minus the loss
  double zlib = 0;        // sum log p / zlib-compressed bytes of the text
  double min_k = 0;       // mean of the lowest 20% of log p
  double min_k_plus = 0;  // mean of the lowest 20% of (log p - mean) / stddev
};

// The four scores of `text` (its UTF-8 bytes are what zlib compresses).
// Needs at least one token.
LmMembershipScores MembershipScores(const TokenLogProbs& tokens, const std::string& text);

// Bytes zlib (level 9) compresses `text` to.
size_t ZlibBytes(const std::string& text);

// The mean of the lowest ceil(fraction * n) of `values` (at least one).
double MeanOfLowest(std::vector<double> values, double fraction);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_LM_MEMBERSHIP_SIGNALS_H_
