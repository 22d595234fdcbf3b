// Torch-free facade for the relational audit (Differential Relational
// Privacy, Bombari et al. 2022). Two models:
//
// - Phone book: seeded names paired with seeded digit strings rendered
//   through a template. A character LM trains on the training records; after
//   every epoch it greedily completes each record's corrupted prompt (the
//   text before the number, digits removed) with `digits` digits, for the
//   training records and for held-out records it never saw.
// - Linear: N samples u = (a, x), t = a_1, gradient descent from w = 0 on
//   (1/2N)||Uw - t||^2, evaluated in closed form at the requested steps; the
//   adversary recovers t_i from <w, (0, x_i)> / (1 - w_1).
//
// The facade returns raw predictions; success rates and RM_norm are the
// scorer's (scoring/relational.h).
#ifndef MEMAUDIT_ENGINE_RELATIONAL_RUN_H_
#define MEMAUDIT_ENGINE_RELATIONAL_RUN_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/seeding.h"
#include "common/training/model_spec.h"
#include "common/training/tokenizer.h"
#include "engine/optimizer_spec.h"

namespace memaudit::engine {

// ---- Phone book ----

struct PhoneBookRecord {
  std::string name;
  std::string number;  // `digits` decimal digits, leading zeros allowed
  std::string text;    // the template filled in: the training line
};

struct PhoneBook {
  std::vector<PhoneBookRecord> train;
  std::vector<PhoneBookRecord> validation;
};

// Distinct seeded names ("Bazo Kelimun") with uniform digit strings: the
// first `records` train, the next `validation_records` are held out. A pure
// function of its arguments.
absl::StatusOr<PhoneBook> GeneratePhoneBook(uint32_t records, uint32_t validation_records,
                                            const std::string& tmpl, uint32_t digits,
                                            uint64_t seed);

// The adversary's input x for a record: the template text before {number}
// with `name` filled in and every digit removed (the paper's corruption; a
// left-to-right model cannot use what follows the number).
std::string CorruptedPrompt(const std::string& tmpl, const std::string& name);

struct PhoneBookRunSpec {
  uint32_t records = 128;
  uint32_t validation_records = 128;
  std::string tmpl = "{name}'s number is {number}.";
  uint32_t digits = 7;
  // kLstmLm, kGruLm, kTransformerLm, or kTorchScript: a team's module at torchscript_path
  // (torchscript_lm.h), whose vocabulary must hold the digits, the newline
  // and the template's own characters (name letters it lacks become the
  // unknown symbol); layers, units, embedding and dropout then unused.
  ModelKind lm = ModelKind::kLstmLm;
  std::string torchscript_path;
  // The tokenizer (a SentencePiece model, given or trained on the book's
  // text); empty = characters (exposure_run.h).
  TokenizerFactory tokenizer;
  int64_t layers = 1;
  int64_t units = 128;
  int64_t embedding = 32;
  int64_t heads = 4;  // kTransformerLm
  double dropout = 0.0;
  OptimizerSpec optimizer{OptimizerKind::kAdam, 5e-3};  // weight decay included
  uint32_t batch_size = 16;                             // records per step
  uint32_t epochs = 80;
  uint64_t book_seed = 0;   // the phone book, shared by every variant
  uint64_t model_seed = 0;  // init, order and dropout of this variant
  uint32_t threads = 1;
};

struct PhoneBookEpoch {
  uint32_t epoch = 0;
  // Greedy completions (digits only) of the corrupted prompts, in record order.
  std::vector<std::string> predicted_train, predicted_val;
  // Next-character accuracy (argmax) over every character of the clean
  // records, training and held-out.
  double clean_train = 0, clean_val = 0;
  double loss = 0;  // mean training loss of the epoch, nats/char
};

struct PhoneBookRunResult {
  PhoneBook book;
  std::vector<PhoneBookEpoch> epochs;
  uint64_t steps = 0;
};

// epochs * ceil(records / batch_size): each record is one training sequence.
uint64_t PhoneBookSteps(const PhoneBookRunSpec& spec);

// Called after every optimizer step; false stops training (CANCELLED).
using RelationalStepCallback = std::function<bool(uint64_t steps_done)>;
// Called with the result so far after each epoch's measurement.
using PhoneBookEpochCallback = std::function<void(const PhoneBookRunResult& so_far)>;

absl::StatusOr<PhoneBookRunResult> RunPhoneBook(const PhoneBookRunSpec& spec,
                                                const RelationalStepCallback& on_step,
                                                const PhoneBookEpochCallback& on_epoch = nullptr);

// ---- Linear model ----

struct LinearRelationalRunSpec {
  uint32_t samples = 100;   // N training samples, and N held-out ones
  uint32_t label_dims = 5;  // d_a
  uint32_t key_dims = 95;   // d_x
  std::vector<uint64_t> steps = {1, 10, 100, 1000, 10000, 100000};  // ascending
  double step_fraction = 1.0;  // eta = step_fraction / lambda_max(U^T U / N)
  // a (hence t) derives from label_seed, x from key_seed: variants that
  // share label_seed share the training and held-out labels.
  uint64_t label_seed = 0;
  uint64_t key_seed = 0;
  uint32_t threads = 1;
};

struct LinearRelationalPoint {
  uint64_t step = 0;
  // The adversary's t_hat_i = <w, (0, x_i)> / (1 - w_1); 0 (the prior mean)
  // when |1 - w_1| <= 1e-9, where the inversion only amplifies rounding.
  std::vector<double> recovered_train, recovered_val;
  double w1 = 0;
  // Mean squared error of <w, u_i> against t_i.
  double mse_train = 0, mse_val = 0;
};

struct LinearRelationalRunResult {
  std::vector<double> target_train, target_val;  // t_i = a_i1
  double lambda_max = 0;                         // of U^T U / N
  double learning_rate = 0;                      // eta
  std::vector<LinearRelationalPoint> points;
};

using LinearPointCallback = std::function<void(const LinearRelationalRunResult& so_far)>;

absl::StatusOr<LinearRelationalRunResult> RunLinearRelational(
    const LinearRelationalRunSpec& spec, const LinearPointCallback& on_point = nullptr);

// Gradient descent from w = 0 on (1/2n)||Uw - t||^2 with step `learning_rate`
// after `steps` steps; U is n x d row-major. Closed form through the
// eigendecomposition of U U^T: w_t = U^T sum_k (1 - (1 - eta l_k / n)^t) /
// l_k (p_k^T t) p_k.
std::vector<double> GdWeightsClosedForm(const std::vector<double>& u, size_t n, size_t d,
                                        const std::vector<double>& t, double learning_rate,
                                        uint64_t steps);
// The same by explicit iteration (the reference for tests).
std::vector<double> GdWeightsExplicit(const std::vector<double>& u, size_t n, size_t d,
                                      const std::vector<double>& t, double learning_rate,
                                      uint64_t steps);

// A standard normal from two uniforms (Box-Muller, cosine branch only), so
// the draws are identical on every platform (std::normal_distribution is not).
double StandardNormal(SplitMix64& rng);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_RELATIONAL_RUN_H_
