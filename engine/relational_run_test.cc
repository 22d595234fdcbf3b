#include "engine/relational_run.h"

#include <cmath>
#include <set>

#include "common/base/seeding.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

using ::memaudit::testing::StatusIs;

constexpr char kTemplate[] = "{name}'s number is {number}.";

bool AllDigits(const std::string& s) {
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

TEST(PhoneBookTest, GeneratorIsDeterministicAndDistinct) {
  auto a = GeneratePhoneBook(50, 30, kTemplate, 7, 11);
  auto b = GeneratePhoneBook(50, 30, kTemplate, 7, 11);
  auto c = GeneratePhoneBook(50, 30, kTemplate, 7, 12);
  MEMAUDIT_ASSERT_OK(a);
  MEMAUDIT_ASSERT_OK(b);
  MEMAUDIT_ASSERT_OK(c);
  ASSERT_EQ(a->train.size(), 50u);
  ASSERT_EQ(a->validation.size(), 30u);
  std::set<std::string> names;
  for (size_t i = 0; i < a->train.size(); ++i) {
    EXPECT_EQ(a->train[i].text, b->train[i].text);
    names.insert(a->train[i].name);
  }
  for (const PhoneBookRecord& r : a->validation) names.insert(r.name);
  EXPECT_EQ(names.size(), 80u) << "held-out names must be unseen";
  EXPECT_NE(a->train[0].text, c->train[0].text);
  const PhoneBookRecord& r = a->train[3];
  EXPECT_EQ(r.number.size(), 7u);
  EXPECT_TRUE(AllDigits(r.number));
  EXPECT_EQ(r.text, r.name + "'s number is " + r.number + ".");
  for (char ch : r.name) EXPECT_FALSE(ch >= '0' && ch <= '9');
}

TEST(PhoneBookTest, GeneratorRefusesBadArguments) {
  EXPECT_FALSE(GeneratePhoneBook(0, 5, kTemplate, 7, 1).ok());
  EXPECT_FALSE(GeneratePhoneBook(5, 5, kTemplate, 0, 1).ok());
  EXPECT_FALSE(GeneratePhoneBook(5, 5, "{number} belongs to {name}", 7, 1).ok());
}

TEST(PhoneBookTest, CorruptionKeepsOnlyTheTextBeforeTheNumberWithoutDigits) {
  EXPECT_EQ(CorruptedPrompt(kTemplate, "Bazo Kel"), "Bazo Kel's number is ");
  // Digits in the template itself are removed too (the paper's corruption
  // deletes every digit of the context); punctuation stays.
  EXPECT_EQ(CorruptedPrompt("Call {name} in area 0-41: {number} (mobile)", "Ana Ru"),
            "Call Ana Ru in area -: ");
}

TEST(PhoneBookTest, TinyBookIsMemorizedDeterministicallyAndStreamedPerEpoch) {
  PhoneBookRunSpec spec;
  spec.records = 8;
  spec.validation_records = 8;
  spec.digits = 4;
  spec.units = 64;
  spec.embedding = 16;
  spec.batch_size = 4;
  spec.epochs = 80;
  spec.optimizer.learning_rate = 2e-2;
  spec.book_seed = 3;
  spec.model_seed = 4;
  uint64_t last_step = 0;
  int epochs_seen = 0;
  auto run = RunPhoneBook(
      spec,
      [&](uint64_t s) {
        last_step = s;
        return true;
      },
      [&](const PhoneBookRunResult& so_far) {
        ++epochs_seen;
        EXPECT_EQ(so_far.epochs.size(), static_cast<size_t>(epochs_seen));
      });
  MEMAUDIT_ASSERT_OK(run);
  EXPECT_EQ(epochs_seen, 80);
  EXPECT_EQ(last_step, PhoneBookSteps(spec));
  EXPECT_EQ(run->steps, 160u);
  const PhoneBookEpoch& last = run->epochs.back();
  ASSERT_EQ(last.predicted_train.size(), 8u);
  ASSERT_EQ(last.predicted_val.size(), 8u);
  int exact_train = 0, exact_val = 0;
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(last.predicted_train[i].size(), 4u);
    EXPECT_TRUE(AllDigits(last.predicted_train[i]));
    exact_train += last.predicted_train[i] == run->book.train[i].number;
    exact_val += last.predicted_val[i] == run->book.validation[i].number;
  }
  EXPECT_GE(exact_train, 6) << "a 64-unit LSTM memorizes 8 records in 80 epochs";
  EXPECT_LE(exact_val, 1);
  EXPECT_GT(last.clean_train, last.clean_val);
  EXPECT_GT(last.clean_train, 0.6);

  auto again = RunPhoneBook(spec, nullptr);
  MEMAUDIT_ASSERT_OK(again);
  EXPECT_EQ(again->epochs.back().predicted_train, last.predicted_train);
  EXPECT_EQ(again->epochs.back().clean_val, last.clean_val);
}

// The built-in transformer trains on the phone book like the LSTM and
// memorizes a tiny one: every training number completed, deterministically.
TEST(PhoneBookTest, ATransformerMemorizesATinyBook) {
  PhoneBookRunSpec spec;
  spec.records = 8;
  spec.validation_records = 8;
  spec.digits = 4;
  spec.lm = ModelKind::kTransformerLm;
  spec.layers = 2;
  spec.embedding = 32;
  spec.heads = 4;
  spec.units = 64;
  spec.batch_size = 4;
  spec.epochs = 80;
  spec.optimizer.learning_rate = 5e-3;
  spec.book_seed = 3;
  spec.model_seed = 4;
  auto run = RunPhoneBook(spec, nullptr);
  MEMAUDIT_ASSERT_OK(run);
  const PhoneBookEpoch& last = run->epochs.back();
  int right = 0;
  for (size_t i = 0; i < last.predicted_train.size(); ++i) {
    right += last.predicted_train[i] == run->book.train[i].number;
  }
  EXPECT_GE(right, 6) << "of 8 training numbers";
  auto again = RunPhoneBook(spec, nullptr);
  MEMAUDIT_ASSERT_OK(again);
  EXPECT_EQ(again->epochs.back().loss, last.loss);
}

TEST(PhoneBookTest, StopsWhenTheStepCallbackSaysSo) {
  PhoneBookRunSpec spec;
  spec.records = 4;
  spec.validation_records = 4;
  spec.units = 8;
  spec.batch_size = 2;
  spec.epochs = 3;
  auto run = RunPhoneBook(spec, [](uint64_t s) { return s < 3; });
  EXPECT_THAT(run, StatusIs(absl::StatusCode::kCancelled));
}

// A small U (n x d, row-major) with standard-normal entries.
std::vector<double> RandomRows(size_t n, size_t d, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<double> u(n * d);
  for (double& v : u) v = StandardNormal(rng);
  return u;
}

double LambdaMaxOverN(const std::vector<double>& u, size_t n, size_t d) {
  // Power iteration on U^T U / n, enough for a step size.
  std::vector<double> v(d, 1.0), uv(n);
  double lambda = 0;
  for (int it = 0; it < 2000; ++it) {
    for (size_t i = 0; i < n; ++i) {
      uv[i] = 0;
      for (size_t j = 0; j < d; ++j) uv[i] += u[i * d + j] * v[j];
    }
    std::vector<double> next(d, 0.0);
    for (size_t j = 0; j < d; ++j) {
      for (size_t i = 0; i < n; ++i) next[j] += u[i * d + j] * uv[i] / n;
    }
    double norm = 0;
    for (double x : next) norm += x * x;
    norm = std::sqrt(norm);
    lambda = norm;
    for (size_t j = 0; j < d; ++j) v[j] = next[j] / norm;
  }
  return lambda;
}

void ExpectClosedFormMatchesExplicit(size_t n, size_t d, double fraction) {
  const std::vector<double> u = RandomRows(n, d, 7 + n + d);
  std::vector<double> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = u[i * d];  // t = U e_1
  const double lr = fraction / LambdaMaxOverN(u, n, d);
  for (uint64_t steps : {1, 7, 60, 300}) {
    const std::vector<double> closed = GdWeightsClosedForm(u, n, d, t, lr, steps);
    const std::vector<double> iterated = GdWeightsExplicit(u, n, d, t, lr, steps);
    ASSERT_EQ(closed.size(), d);
    double worst = 0;
    for (size_t j = 0; j < d; ++j) worst = std::max(worst, std::abs(closed[j] - iterated[j]));
    EXPECT_LT(worst, 1e-9) << "n=" << n << " d=" << d << " steps=" << steps;
  }
}

TEST(LinearRelationalTest, ClosedFormEqualsExplicitGradientDescent) {
  ExpectClosedFormMatchesExplicit(20, 40, 1.0);  // d > n: many minimizers
  ExpectClosedFormMatchesExplicit(30, 10, 1.0);  // d < n: U U^T is singular
  ExpectClosedFormMatchesExplicit(25, 25, 0.5);
  ExpectClosedFormMatchesExplicit(16, 24, 1.9);  // oscillating but stable
}

// Fraction of |t_hat - t| < tol.
double Success(const std::vector<double>& t_hat, const std::vector<double>& t, double tol) {
  int ok = 0;
  for (size_t i = 0; i < t.size(); ++i) ok += std::abs(t_hat[i] - t[i]) < tol;
  return static_cast<double>(ok) / t.size();
}

LinearRelationalRunResult RunLinear(uint32_t key_dims, uint32_t threads = 1) {
  LinearRelationalRunSpec spec;
  spec.samples = 100;
  spec.label_dims = 5;
  spec.key_dims = key_dims;
  spec.label_seed = 1;
  spec.key_seed = 2;
  spec.threads = threads;
  auto run = RunLinearRelational(spec);
  MEMAUDIT_EXPECT_OK(run);
  return *run;
}

TEST(LinearRelationalTest, MemorizationNeedsMoreKeyDimensionsThanSamples) {
  const LinearRelationalRunResult low = RunLinear(20);     // d = 25 < N
  const LinearRelationalRunResult high = RunLinear(2000);  // d >> N
  ASSERT_EQ(low.points.size(), 6u);
  const LinearRelationalPoint& lo = low.points.back();
  const LinearRelationalPoint& hi = high.points.back();
  // The same labels: variants share the label seed.
  EXPECT_EQ(low.target_train, high.target_train);
  EXPECT_NEAR(lo.w1, 1.0, 1e-3) << "d < N: GD reaches w = e_1";
  EXPECT_LT(lo.mse_val, 1e-6);
  const double rm_low = Success(lo.recovered_train, low.target_train, 0.25) -
                        Success(lo.recovered_val, low.target_val, 0.25);
  EXPECT_LT(std::abs(rm_low), 0.15);
  EXPECT_LT(hi.w1, 0.2) << "d >> N: overfitting with no learning";
  EXPECT_LT(hi.mse_train, 1e-6);
  EXPECT_GT(hi.mse_val, 0.5);
  const double s_train = Success(hi.recovered_train, high.target_train, 0.25);
  const double s_val = Success(hi.recovered_val, high.target_val, 0.25);
  EXPECT_GT(s_train, 0.95);
  EXPECT_GT(s_train - s_val, 0.6);
}

// OpenBLAS's eigh and matrix-vector products round otherwise on two
// threads; the run keeps them on one, so threads_per_task changes no bit.
TEST(LinearRelationalTest, TheThreadCountChangesNoBit) {
  for (uint32_t key_dims : {20u, 2000u}) {
    const LinearRelationalRunResult one = RunLinear(key_dims, 1), two = RunLinear(key_dims, 2);
    ASSERT_EQ(one.points.size(), two.points.size());
    for (size_t i = 0; i < one.points.size(); ++i) {
      EXPECT_EQ(one.points[i].mse_train, two.points[i].mse_train) << key_dims << " " << i;
      EXPECT_EQ(one.points[i].recovered_val, two.points[i].recovered_val) << key_dims << " " << i;
    }
  }
}

TEST(LinearRelationalTest, DeterministicAndRefusesBadSteps) {
  const LinearRelationalRunResult a = RunLinear(95), b = RunLinear(95);
  EXPECT_EQ(a.points[3].recovered_val, b.points[3].recovered_val);
  LinearRelationalRunSpec spec;
  spec.steps = {10, 10};
  EXPECT_THAT(RunLinearRelational(spec), StatusIs(absl::StatusCode::kInvalidArgument));
  spec.steps = {1};
  spec.step_fraction = 2.5;
  EXPECT_THAT(RunLinearRelational(spec), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace memaudit::engine
