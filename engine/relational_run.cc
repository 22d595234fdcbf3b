#include "engine/relational_run.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/base/status_macros.h"
#include "common/base/steps.h"
#include "engine/language_model.h"
#include "engine/lm_scorer.h"
#include "engine/schedule.h"
#include "engine/text_corpus.h"
#include "engine/torch_api.h"
#include "engine/torchscript_lm.h"
#include "engine/trainer.h"

namespace memaudit::engine {
namespace {

constexpr char kName[] = "{name}";
constexpr char kNumber[] = "{number}";
constexpr char kDigits[] = "0123456789";
// Targets the LM loss ignores (cross_entropy's default ignore_index): the
// padding after a record's end.
constexpr int64_t kIgnoreTarget = -100;

// Syllables of the generated names: pronounceable, ASCII, digit-free.
constexpr const char* kOnsets[] = {"b", "d", "f", "g", "k", "l",  "m",  "n", "p",
                                   "r", "s", "t", "v", "z", "sh", "ch", "j"};
constexpr const char* kVowels[] = {"a", "e", "i", "o", "u"};
constexpr const char* kCodas[] = {"", "", "", "n", "r", "s", "l"};

template <size_t N>
const char* Pick(const char* const (&options)[N], SplitMix64& rng) {
  return options[rng.Uniform(N)];
}

std::string Word(SplitMix64& rng, int syllables) {
  std::string w;
  for (int i = 0; i < syllables; ++i) absl::StrAppend(&w, Pick(kOnsets, rng), Pick(kVowels, rng));
  absl::StrAppend(&w, Pick(kCodas, rng));
  w[0] = static_cast<char>(w[0] - 'a' + 'A');
  return w;
}

std::string RemoveDigitChars(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c < '0' || c > '9') out.push_back(c);
  }
  return out;
}

// Token rows of `texts`, each "\n" + text + "\n": x = all but the last token,
// y = all but the first, padded to the longest row (x with newlines, y with
// ignored targets).
TensorDataset RecordSequences(const Tokenizer& vocab, const std::vector<std::string>& texts) {
  std::vector<std::vector<int64_t>> rows;
  size_t longest = 0;
  for (const std::string& t : texts) {
    rows.push_back(vocab.Encode("\n" + t + "\n"));
    longest = std::max(longest, rows.back().size() - 1);
  }
  const int64_t newline = vocab.Newline();
  torch::Tensor x = torch::full({static_cast<int64_t>(rows.size()), static_cast<int64_t>(longest)},
                                newline, torch::kLong);
  torch::Tensor y = torch::full_like(x, kIgnoreTarget);
  auto xa = x.accessor<int64_t, 2>();
  auto ya = y.accessor<int64_t, 2>();
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t i = 0; i + 1 < rows[r].size(); ++i) {
      xa[r][i] = rows[r][i];
      ya[r][i] = rows[r][i + 1];
    }
  }
  return TensorDataset(x, y);
}

// Next-character accuracy (argmax) over every non-ignored target.
double NextCharAccuracy(LanguageModel& lm, const TensorDataset& data, torch::Device device) {
  torch::NoGradGuard no_grad;
  int64_t correct = 0, total = 0;
  constexpr int64_t kChunk = 256;
  for (int64_t start = 0; start < data.size(); start += kChunk) {
    const int64_t end = std::min(data.size(), start + kChunk);
    torch::Tensor x = data.x().slice(0, start, end).to(device);
    torch::Tensor y = data.y().slice(0, start, end).to(device);
    torch::Tensor guess = lm.Forward(x).argmax(2);
    torch::Tensor valid = y.ne(kIgnoreTarget);
    correct += guess.eq(y).logical_and(valid).sum().item<int64_t>();
    total += valid.sum().item<int64_t>();
  }
  return total == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(total);
}

// The prompts' tokens, the context of a digits format after each (the
// tokens the record line shares with its prompt alone), and the ten digit
// tokens every digit position allows, in digit order. INVALID_ARGUMENT when
// the tokenizer does not spell each digit as a token of its own there, or
// spells digits differently in two records.
struct DigitPrompts {
  std::vector<std::vector<int64_t>> tokens;
  std::vector<int64_t> digit_ids;
};

absl::StatusOr<DigitPrompts> PromptTokens(const Tokenizer& vocab,
                                          const std::vector<std::string>& prompts,
                                          uint32_t digits) {
  DigitPrompts out;
  const std::string zeros(digits, '0');
  for (const std::string& prompt : prompts) {
    if (out.digit_ids.empty()) {
      // The first record checks every digit in every position (lm_scorer.h).
      MEMAUDIT_ASSIGN_OR_RETURN(
          TokenFormat format, ToTokenFormat(vocab, DigitsFormat(prompt, static_cast<int>(digits))));
      for (size_t d = 0; d < digits; ++d) {
        if (format.positions[d] != format.positions[0]) {
          return absl::InvalidArgumentError(
              absl::StrCat("phone_book.model.tokenizer: ", vocab.Describe(),
                           " spells the number's digits differently by position"));
        }
      }
      out.digit_ids = format.positions[0];
      out.tokens.push_back(std::move(format.context));
      continue;
    }
    // The rest: the line's tokens past its prompt's are the digits', one each.
    const std::vector<int64_t> line = vocab.Encode("\n" + prompt + zeros);
    const size_t context = SharedPrefixLength(vocab.Encode("\n" + prompt), line);
    bool digit_tokens = line.size() == context + digits;
    for (size_t t = context; digit_tokens && t < line.size(); ++t) {
      digit_tokens = line[t] == out.digit_ids[0];
    }
    if (!digit_tokens) {
      return absl::InvalidArgumentError(absl::StrCat(
          "phone_book.model.tokenizer: ", vocab.Describe(),
          " does not spell the number's digits as tokens of their own after \"", prompt, "\""));
    }
    out.tokens.emplace_back(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(context));
  }
  return out;
}

// Greedy completion of every prompt with `digits` digits: prompts of equal
// length run as one batch from the zero state (the way records start in
// training), then each step takes the most likely digit.
std::vector<std::string> GreedyDigits(LanguageModel& lm, const DigitPrompts& prompts,
                                      uint32_t digits, torch::Device device) {
  torch::NoGradGuard no_grad;
  const torch::Tensor allowed = torch::tensor(prompts.digit_ids, torch::kLong).to(device);
  std::map<size_t, std::vector<size_t>> by_length;
  const std::vector<std::vector<int64_t>>& tokens = prompts.tokens;
  for (size_t i = 0; i < tokens.size(); ++i) by_length[tokens[i].size()].push_back(i);
  std::vector<std::string> out(tokens.size());
  for (const auto& [length, members] : by_length) {
    std::vector<int64_t> flat;
    for (size_t i : members) flat.insert(flat.end(), tokens[i].begin(), tokens[i].end());
    const int64_t m = static_cast<int64_t>(members.size());
    torch::Tensor x =
        torch::tensor(flat, torch::kLong).reshape({m, static_cast<int64_t>(length)}).to(device);
    LmState state;
    torch::Tensor logits = lm.Run(x, &state).select(1, static_cast<int64_t>(length) - 1);
    for (uint32_t d = 0; d < digits; ++d) {
      torch::Tensor pick = logits.index_select(1, allowed).argmax(1);  // [m] index into digits
      torch::Tensor next = allowed.index_select(0, pick);
      torch::Tensor cpu = pick.cpu();
      auto acc = cpu.accessor<int64_t, 1>();
      for (int64_t j = 0; j < m; ++j) out[members[j]].push_back(kDigits[acc[j]]);
      if (d + 1 < digits) logits = lm.StepLogProbs(next, &state);
    }
  }
  return out;
}

// Rows of a seeded standard-normal matrix, one generator per row so a row's
// values do not depend on how columns are blocked.
class NormalRows {
 public:
  NormalRows(uint64_t seed, const std::string& role, size_t rows) {
    for (size_t i = 0; i < rows; ++i) rngs_.emplace_back(DeriveSeed(seed, role, i));
  }
  // The next `cols` values of every row: a [rows, cols] float64 tensor.
  torch::Tensor Next(int64_t cols) {
    torch::Tensor out = torch::empty({static_cast<int64_t>(rngs_.size()), cols}, torch::kFloat64);
    auto a = out.accessor<double, 2>();
    for (size_t i = 0; i < rngs_.size(); ++i) {
      for (int64_t j = 0; j < cols; ++j) a[i][j] = StandardNormal(rngs_[i]);
    }
    return out;
  }

 private:
  std::vector<SplitMix64> rngs_;
};

// OpenBLAS's LAPACK (eigh) and its matrix-vector products round differently
// with more than one thread; its matrix products (the Gram matrices) do
// not. What follows the Gram matrices runs on one thread, so the numbers do
// not depend on threads_per_task (it is O(n^3) for n <= 2000 samples,
// against the Gram's O(n^2 d)).
class OneThread {
 public:
  OneThread() : threads_(torch::get_num_threads()) { torch::set_num_threads(1); }
  ~OneThread() { torch::set_num_threads(threads_); }
  OneThread(const OneThread&) = delete;
  OneThread& operator=(const OneThread&) = delete;

 private:
  int threads_;
};

// GD from zero in closed form, from the eigendecomposition of K = U U^T:
// w_s = U^T alpha_s with alpha_s = sum_k (1 - (1 - eta l_k / n)^s) / l_k
// (p_k^T t) p_k. Directions with l_k ~ 0 are dropped: t lies in U's column
// space there, so their coefficient is 0 in exact arithmetic.
class ClosedFormGd {
 public:
  ClosedFormGd(const torch::Tensor& gram, const torch::Tensor& t) : n_(gram.size(0)) {
    auto [values, vectors] = at::linalg_eigh(gram, "L");
    lambda_ = values.clamp_min(0);
    p_ = vectors;
    proj_ = vectors.transpose(0, 1).matmul(t);
    lambda_max_ = lambda_.max().item<double>();
  }
  // Largest eigenvalue of U U^T (= n * lambda_max(U^T U / n)).
  double lambda_max() const { return lambda_max_; }

  torch::Tensor Alpha(double learning_rate, uint64_t steps) const {
    torch::Tensor coef = torch::zeros_like(lambda_);
    auto c = coef.accessor<double, 1>();
    auto l = lambda_.accessor<double, 1>();
    for (int64_t k = 0; k < n_; ++k) {
      if (!(l[k] > lambda_max_ * 1e-10)) continue;
      const double x = learning_rate * l[k] / static_cast<double>(n_);
      const double s = static_cast<double>(steps);
      // 1 - (1 - x)^s without cancellation for small x.
      const double g = x < 0.5 ? -std::expm1(s * std::log1p(-x)) : 1.0 - std::pow(1.0 - x, s);
      c[k] = g / l[k];
    }
    return p_.matmul(coef * proj_);
  }

 private:
  int64_t n_;
  torch::Tensor lambda_, p_, proj_;
  double lambda_max_ = 0;
};

torch::Tensor FromRows(const std::vector<double>& u, size_t n, size_t d) {
  return torch::tensor(u, torch::kFloat64)
      .reshape({static_cast<int64_t>(n), static_cast<int64_t>(d)});
}

std::vector<double> ToVector(const torch::Tensor& t) {
  torch::Tensor c = t.contiguous().cpu().to(torch::kFloat64);
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

}  // namespace

double StandardNormal(SplitMix64& rng) {
  const double u1 = 1.0 - rng.UniformDouble();  // (0, 1]: log stays finite
  const double u2 = rng.UniformDouble();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

absl::StatusOr<PhoneBook> GeneratePhoneBook(uint32_t records, uint32_t validation_records,
                                            const std::string& tmpl, uint32_t digits,
                                            uint64_t seed) {
  if (records == 0) return absl::InvalidArgumentError("records: must be > 0");
  if (validation_records == 0) return absl::InvalidArgumentError("validation_records: must be > 0");
  if (digits == 0 || digits > 20) return absl::InvalidArgumentError("digits: must be in [1, 20]");
  const size_t name_at = tmpl.find(kName), number_at = tmpl.find(kNumber);
  if (name_at == std::string::npos || number_at == std::string::npos || number_at < name_at) {
    return absl::InvalidArgumentError("template: needs {name} before {number}");
  }
  SplitMix64 names(DeriveSeed(seed, "names", 0));
  SplitMix64 numbers(DeriveSeed(seed, "numbers", 0));
  std::set<std::string> seen;
  PhoneBook book;
  const uint64_t total = static_cast<uint64_t>(records) + validation_records;
  // The name space holds ~10^9 names; the bound only guards against a loop.
  for (uint64_t attempts = 0; seen.size() < total; ++attempts) {
    if (attempts > 100 * total + 1000) {
      return absl::ResourceExhaustedError("records: could not draw enough distinct names");
    }
    std::string name = Word(names, 2) + " " + Word(names, 2 + static_cast<int>(names.Uniform(2)));
    if (!seen.insert(name).second) continue;
    PhoneBookRecord r;
    r.name = std::move(name);
    for (uint32_t i = 0; i < digits; ++i) r.number.push_back(kDigits[numbers.Uniform(10)]);
    r.text = absl::StrReplaceAll(tmpl, {{kName, r.name}, {kNumber, r.number}});
    (book.train.size() < records ? book.train : book.validation).push_back(std::move(r));
  }
  return book;
}

std::string CorruptedPrompt(const std::string& tmpl, const std::string& name) {
  const std::string before = tmpl.substr(0, tmpl.find(kNumber));
  return RemoveDigitChars(absl::StrReplaceAll(before, {{kName, name}}));
}

uint64_t PhoneBookSteps(const PhoneBookRunSpec& spec) {
  return static_cast<uint64_t>(spec.epochs) * StepsPerEpoch(spec.records, spec.batch_size);
}

absl::StatusOr<PhoneBookRunResult> RunPhoneBook(const PhoneBookRunSpec& spec,
                                                const RelationalStepCallback& on_step,
                                                const PhoneBookEpochCallback& on_epoch) {
  if (spec.batch_size == 0) return absl::InvalidArgumentError("batch_size: must be > 0");
  if (spec.epochs == 0) return absl::InvalidArgumentError("epochs: must be > 0");
  PhoneBookRunResult result;
  MEMAUDIT_ASSIGN_OR_RETURN(PhoneBook book,
                            GeneratePhoneBook(spec.records, spec.validation_records, spec.tmpl,
                                              spec.digits, spec.book_seed));
  result.book = std::move(book);

  std::vector<std::string> train_text, val_text, train_prompts, val_prompts;
  std::string all = std::string(kDigits) + "\n";
  for (const PhoneBookRecord& r : result.book.train) {
    train_text.push_back(r.text);
    train_prompts.push_back(CorruptedPrompt(spec.tmpl, r.name));
    all += r.text;
  }
  for (const PhoneBookRecord& r : result.book.validation) {
    val_text.push_back(r.text);
    val_prompts.push_back(CorruptedPrompt(spec.tmpl, r.name));
    all += r.text;
  }
  // Held-out names share the syllable alphabet; building the vocabulary over
  // them too only keeps rare letters from mapping to the unknown symbol. A
  // trained tokenizer learns from the same text: the whole book.
  // The adversary reads digits after the template's text: a record spells
  // like a canary of the template's text and the number's digits (`all`
  // holds both already, so its characters are the vocabulary).
  MEMAUDIT_ASSIGN_OR_RETURN(
      const std::shared_ptr<const Tokenizer> tokenizer,
      LmTokenizer(spec.lm, spec.torchscript_path, spec.tokenizer, all,
                  DigitsFormat(absl::StrReplaceAll(spec.tmpl, {{kName, ""}, {kNumber, ""}}),
                               static_cast<int>(spec.digits)),
                  "the phone book (digits, newline, template)"));
  const Tokenizer& vocab = *tokenizer;
  const TensorDataset train = RecordSequences(vocab, train_text);
  const TensorDataset validation = RecordSequences(vocab, val_text);
  MEMAUDIT_ASSIGN_OR_RETURN(const DigitPrompts train_digits,
                            PromptTokens(vocab, train_prompts, spec.digits));
  MEMAUDIT_ASSIGN_OR_RETURN(const DigitPrompts val_digits,
                            PromptTokens(vocab, val_prompts, spec.digits));

  ModelSpec model = CharLmSpec(spec.lm, vocab.size(), spec.embedding, spec.layers, spec.units,
                               spec.dropout, spec.torchscript_path, spec.heads, 0);
  model.token_ids = spec.tokenizer != nullptr;
  const TrainerOptions options =
      SeededTrainerOptions(spec.optimizer, spec.threads, spec.model_seed);
  const uint64_t init = DeriveSeed(spec.model_seed, "init", 0);
  MEMAUDIT_ASSIGN_OR_RETURN(
      auto trainer, Trainer::Create([model, init] { return BuildModel(model, init); }, options));
  std::vector<int64_t> pool(train.size());
  for (int64_t i = 0; i < train.size(); ++i) pool[i] = i;
  EpochSchedule schedule(pool, spec.batch_size, DeriveSeed(spec.model_seed, "order", 0));
  const uint64_t per_epoch = schedule.steps_per_epoch();
  LanguageModel& lm = static_cast<LanguageModel&>(trainer->model());
  const torch::Device device = trainer->device();

  for (uint32_t e = 1; e <= spec.epochs; ++e) {
    double loss_sum = 0;
    MEMAUDIT_RETURN_IF_ERROR(
        trainer->Train(train, schedule, e * per_epoch, [&](uint64_t done, double loss) {
          loss_sum += loss;
          return !on_step || on_step(done);
        }));
    lm.eval();
    PhoneBookEpoch m;
    m.epoch = e;
    m.loss = loss_sum / static_cast<double>(per_epoch);
    m.predicted_train = GreedyDigits(lm, train_digits, spec.digits, device);
    m.predicted_val = GreedyDigits(lm, val_digits, spec.digits, device);
    m.clean_train = NextCharAccuracy(lm, train, device);
    m.clean_val = NextCharAccuracy(lm, validation, device);
    lm.train();
    result.epochs.push_back(std::move(m));
    result.steps = e * per_epoch;
    if (on_epoch) on_epoch(result);
  }
  return result;
}

absl::StatusOr<LinearRelationalRunResult> RunLinearRelational(const LinearRelationalRunSpec& spec,
                                                              const LinearPointCallback& on_point) {
  if (spec.samples < 2) return absl::InvalidArgumentError("samples: must be >= 2");
  if (spec.label_dims == 0) return absl::InvalidArgumentError("label_dims: must be >= 1");
  if (spec.key_dims == 0) return absl::InvalidArgumentError("key_dims: must be >= 1");
  if (!(spec.step_fraction > 0 && spec.step_fraction < 2)) {
    return absl::InvalidArgumentError("step_fraction: must be in (0, 2)");
  }
  for (size_t i = 1; i < spec.steps.size(); ++i) {
    if (spec.steps[i] <= spec.steps[i - 1]) {
      return absl::InvalidArgumentError("steps: must be strictly ascending");
    }
  }
  torch::set_num_threads(static_cast<int>(spec.threads == 0 ? 1 : spec.threads));
  torch::NoGradGuard no_grad;
  const int64_t n = spec.samples;
  // Rows 0..n-1 train, n..2n-1 are held out; only Gram matrices are kept,
  // which is all GD from zero needs (w stays in the row space of U).
  NormalRows a_rows(spec.label_seed, "relational/a", 2 * n);
  const torch::Tensor a = a_rows.Next(spec.label_dims);
  const torch::Tensor gram_a = a.matmul(a.transpose(0, 1));
  NormalRows x_rows(spec.key_seed, "relational/x", 2 * n);
  torch::Tensor gram_x = torch::zeros({2 * n, 2 * n}, torch::kFloat64);
  constexpr int64_t kBlock = 2048;  // columns of X generated at a time
  for (int64_t done = 0; done < spec.key_dims; done += kBlock) {
    const torch::Tensor block = x_rows.Next(std::min<int64_t>(kBlock, spec.key_dims - done));
    gram_x += block.matmul(block.transpose(0, 1));
  }
  const torch::Tensor t_all = a.select(1, 0).contiguous();
  const torch::Tensor t = t_all.slice(0, 0, n);
  const torch::Tensor gram = gram_a + gram_x;
  const torch::Tensor k_train = gram.slice(0, 0, n).slice(1, 0, n);
  const torch::Tensor k_val = gram.slice(0, n, 2 * n).slice(1, 0, n);
  const torch::Tensor kx_train = gram_x.slice(0, 0, n).slice(1, 0, n);
  const torch::Tensor kx_val = gram_x.slice(0, n, 2 * n).slice(1, 0, n);

  const OneThread one_thread;
  ClosedFormGd gd(k_train, t);
  LinearRelationalRunResult result;
  result.target_train = ToVector(t);
  result.target_val = ToVector(t_all.slice(0, n, 2 * n));
  result.lambda_max = gd.lambda_max() / static_cast<double>(n);
  if (!(result.lambda_max > 0)) return absl::InternalError("U is zero: no step size");
  result.learning_rate = spec.step_fraction / result.lambda_max;
  const torch::Tensor t_val = t_all.slice(0, n, 2 * n);
  for (uint64_t s : spec.steps) {
    const torch::Tensor alpha = gd.Alpha(result.learning_rate, s);
    LinearRelationalPoint p;
    p.step = s;
    p.w1 = t.dot(alpha).item<double>();  // w_1 = sum_i alpha_i a_i1
    const double denom = 1.0 - p.w1;
    // Once w_1 has converged to 1 (d < N), 1 - w_1 is rounding noise and the
    // ratio would be noise over noise: the adversary falls back to the mean.
    const bool invertible = std::abs(denom) > 1e-9;
    auto recover = [&](const torch::Tensor& key) {
      return invertible ? ToVector(key / denom) : std::vector<double>(key.size(0), 0.0);
    };
    p.recovered_train = recover(kx_train.matmul(alpha));
    p.recovered_val = recover(kx_val.matmul(alpha));
    p.mse_train = (k_train.matmul(alpha) - t).pow(2).mean().item<double>();
    p.mse_val = (k_val.matmul(alpha) - t_val).pow(2).mean().item<double>();
    result.points.push_back(std::move(p));
    if (on_point) on_point(result);
  }
  return result;
}

std::vector<double> GdWeightsClosedForm(const std::vector<double>& u, size_t n, size_t d,
                                        const std::vector<double>& t, double learning_rate,
                                        uint64_t steps) {
  torch::NoGradGuard no_grad;
  const torch::Tensor um = FromRows(u, n, d);
  const torch::Tensor tv = torch::tensor(t, torch::kFloat64);
  const torch::Tensor gram = um.matmul(um.transpose(0, 1));
  const OneThread one_thread;
  ClosedFormGd gd(gram, tv);
  return ToVector(um.transpose(0, 1).matmul(gd.Alpha(learning_rate, steps)));
}

std::vector<double> GdWeightsExplicit(const std::vector<double>& u, size_t n, size_t d,
                                      const std::vector<double>& t, double learning_rate,
                                      uint64_t steps) {
  std::vector<double> w(d, 0.0), residual(n);
  for (uint64_t s = 0; s < steps; ++s) {
    for (size_t i = 0; i < n; ++i) {
      double dot = 0;
      for (size_t j = 0; j < d; ++j) dot += u[i * d + j] * w[j];
      residual[i] = dot - t[i];
    }
    for (size_t j = 0; j < d; ++j) {
      double g = 0;
      for (size_t i = 0; i < n; ++i) g += u[i * d + j] * residual[i];
      w[j] -= learning_rate * g / static_cast<double>(n);
    }
  }
  return w;
}

}  // namespace memaudit::engine
