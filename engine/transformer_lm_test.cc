#include "engine/transformer_lm.h"

#include <cstdio>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "engine/lm_dataset.h"
#include "engine/lm_search.h"
#include "engine/recomputing_lm.h"
#include "engine/test_util.h"
#include "engine/trainer.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

ModelSpec SmallTransformer(int64_t vocab) {
  ModelSpec spec;
  spec.kind = ModelKind::kTransformerLm;
  spec.vocab = vocab;
  spec.embedding = 32;
  spec.layers = 2;
  spec.heads = 4;
  spec.units = 64;
  spec.context = 64;
  return spec;
}

TransformerLm& AsTransformer(Model& model) { return static_cast<TransformerLm&>(model); }

TEST(TransformerLmTest, CachedStepsGiveTheLogitsOfTheWholeSequence) {
  auto model = BuildModel(SmallTransformer(12), 7);
  MEMAUDIT_ASSERT_OK(model);
  TransformerLm& lm = AsTransformer(**model);
  lm.eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor tokens = torch::randint(0, 12, {3, 10}, torch::kLong);
  LmState whole;
  const torch::Tensor full = lm.Run(tokens, &whole);
  ASSERT_EQ(full.sizes(), (std::vector<int64_t>{3, 10, 12}));
  EXPECT_EQ(whole.Length(), 10);
  // A prefix of 4, then one token at a time from the cache.
  LmState state;
  std::vector<torch::Tensor> pieces = {lm.Run(tokens.slice(1, 0, 4), &state)};
  for (int64_t t = 4; t < 10; ++t) pieces.push_back(lm.Run(tokens.slice(1, t, t + 1), &state));
  EXPECT_TRUE(torch::allclose(torch::cat(pieces, 1), full, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(state.keys, whole.keys, 1e-5, 1e-5));
  // Rows selected and reordered from the cache continue as their own rows.
  LmState prefix;
  lm.Run(tokens.slice(1, 0, 9), &prefix);
  LmState picked = prefix.Select(torch::tensor({2, 0}, torch::kLong));
  const torch::Tensor last =
      lm.Run(tokens.index_select(0, torch::tensor({2, 0})).slice(1, 9), &picked);
  EXPECT_TRUE(torch::allclose(
      last.squeeze(1), full.select(1, 9).index_select(0, torch::tensor({2, 0})), 1e-5, 1e-5));
}

// Rows selected from a one-row state share its cache instead of copying it;
// states of two different shared prefixes concatenate by giving each row the
// whole cache. Either way a step gives the whole sequence's logits.
TEST(TransformerLmTest, ASharedPrefixIsStoredOnceAndConcatenatesWithAnother) {
  auto model = BuildModel(SmallTransformer(12), 7);
  MEMAUDIT_ASSERT_OK(model);
  TransformerLm& lm = AsTransformer(**model);
  lm.eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor a = torch::randint(0, 12, {1, 6}, torch::kLong);
  const torch::Tensor b = torch::randint(0, 12, {1, 6}, torch::kLong);
  const torch::Tensor next = torch::tensor({{3}, {5}}, torch::kLong);
  const auto whole = [&](const torch::Tensor& prefix) {  // [2, 12]: each next token after it
    LmState fresh;
    return lm.Run(torch::cat({prefix.expand({2, 6}), next}, 1), &fresh).select(1, 6);
  };
  LmState sa, sb;
  lm.Run(a, &sa);
  lm.Run(b, &sb);
  LmState rows_a = sa.Select(torch::tensor({0, 0}, torch::kLong));
  EXPECT_TRUE(rows_a.shared_keys.is_same(sa.keys)) << "shared, not copied";
  EXPECT_EQ(rows_a.keys.size(2), 0);
  EXPECT_EQ(rows_a.Length(), 6);
  LmState rows_b = sb.Select(torch::tensor({0, 0}, torch::kLong));
  LmState step_a = rows_a;
  EXPECT_TRUE(torch::allclose(lm.Run(next, &step_a).squeeze(1), whole(a), 1e-5, 1e-5));
  EXPECT_TRUE(step_a.shared_keys.is_same(sa.keys));
  EXPECT_EQ(step_a.keys.size(2), 1);
  // Two prefixes in one batch: no shared part left, the same logits.
  LmState both = LmState::Cat({rows_a, rows_b});
  EXPECT_FALSE(both.shared_keys.defined());
  EXPECT_EQ(both.keys.size(1), 4);
  const torch::Tensor stepped = lm.Run(torch::cat({next, next}, 0), &both).squeeze(1);
  EXPECT_TRUE(torch::allclose(stepped, torch::cat({whole(a), whole(b)}, 0), 1e-5, 1e-5));
}

TEST(TransformerLmTest, RefusesSequencesPastItsContextAndHeadsThatDoNotDivideTheWidth) {
  auto model = BuildModel(SmallTransformer(12), 7);
  MEMAUDIT_ASSERT_OK(model);
  LmState state;
  AsTransformer(**model).Run(torch::zeros({1, 60}, torch::kLong), &state);
  EXPECT_THROW(AsTransformer(**model).Run(torch::zeros({1, 5}, torch::kLong), &state), c10::Error);
  ModelSpec bad = SmallTransformer(12);
  bad.heads = 5;
  EXPECT_FALSE(BuildModel(bad, 7).ok());
}

TEST(TransformerLmTest, TheSameSeedBuildsTheSameWeights) {
  auto a = BuildModel(SmallTransformer(12), 3), b = BuildModel(SmallTransformer(12), 3),
       c = BuildModel(SmallTransformer(12), 4);
  const auto pa = (*a)->parameters(), pb = (*b)->parameters(), pc = (*c)->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  bool differs = false;
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(torch::equal(pa[i], pb[i])) << i;
    differs |= !torch::equal(pa[i], pc[i]);
  }
  EXPECT_TRUE(differs);
  // The output layer is the token embedding (tied): no separate head.
  EXPECT_EQ((*a)->named_parameters().size(), 2u + 2 * 12 + 2);
}

// A transformer trained on synthetic text with one 3-digit canary inserted
// often enough to be memorised.
class TransformerSearchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    format_ = new CanaryFormat(DigitsFormat("my pin is ", 3));
    std::string text = InsertCanaries(SyntheticText(6000, 1), *format_, {{"281", 40}}, 2);
    vocab_ = new CharVocab(CharVocab::Build(text + "0123456789"));
    TrainerOptions o;
    o.optimizer.kind = OptimizerKind::kAdam;
    o.optimizer.learning_rate = 3e-3;
    const ModelSpec spec = SmallTransformer(vocab_->size());
    auto trainer = Trainer::Create([spec] { return BuildModel(spec, 3); }, o);
    MEMAUDIT_ASSERT_OK(trainer);
    TensorDataset data = LmWindows(vocab_->Encode(text), 48);
    MEMAUDIT_ASSERT_OK(
        (*trainer)->Train(data, EpochSchedule(testing::Range(data.size()), 16, 6), 600));
    model_ = new std::shared_ptr<Model>((*trainer)->model_ptr());
    (*model_)->eval();
  }
  static void TearDownTestSuite() {
    delete model_;
    delete vocab_;
    delete format_;
  }
  TransformerLm& lm() { return AsTransformer(**model_); }
  TokenFormat Format() { return *ToTokenFormat(*vocab_, *format_); }
  std::vector<int64_t> Tokens(int i) {
    char buf[4];
    std::snprintf(buf, sizeof(buf), "%03d", i);
    return *SecretTokens(*vocab_, Format(), *format_, buf);
  }

  static CanaryFormat* format_;
  static CharVocab* vocab_;
  static std::shared_ptr<Model>* model_;
};
CanaryFormat* TransformerSearchTest::format_ = nullptr;
CharVocab* TransformerSearchTest::vocab_ = nullptr;
std::shared_ptr<Model>* TransformerSearchTest::model_ = nullptr;

TEST_F(TransformerSearchTest, CachedSearchRanksEqualFullRecomputationAndABruteForce) {
  const TokenFormat f = Format();
  RecomputingLm recomputing(lm());
  LmScorer cached_scorer(lm()), full_scorer(recomputing);
  auto cached = EnumerateAllPx(cached_scorer, f);
  auto full = EnumerateAllPx(full_scorer, f);
  MEMAUDIT_ASSERT_OK(cached);
  MEMAUDIT_ASSERT_OK(full);
  ASSERT_EQ(cached->size(), 1000u);
  for (int i = 0; i < 1000; ++i) ASSERT_NEAR((*cached)[i], (*full)[i], 1e-4) << i;
  // The brute force: every candidate's Px walked on its own path.
  std::vector<double> brute(1000);
  LmScorer walk(lm());
  for (int i = 0; i < 1000; ++i) brute[i] = PathPxBits(walk, f, Tokens(i));
  // Ranks agree up to candidates within the two computations' disagreement
  // of the tie band (none, for most canaries).
  constexpr double kDisagreement = 1e-4;
  for (int c : {281, 0, 555, 907, 123, 999}) {
    uint64_t surely = 1, maybe = 1;
    for (int r = 0; r < 1000; ++r) {
      if (r == c) continue;
      surely += brute[r] <= brute[c] + kPxTieBits - kDisagreement;
      maybe += brute[r] <= brute[c] + kPxTieBits + kDisagreement;
    }
    LmScorer a(lm()), b(recomputing);
    auto with_cache = BranchAndBoundRank(a, f, Tokens(c), 1 << 20);
    auto without = BranchAndBoundRank(b, f, Tokens(c), 1 << 20);
    MEMAUDIT_ASSERT_OK(with_cache);
    MEMAUDIT_ASSERT_OK(without);
    EXPECT_TRUE(with_cache->exact);
    for (uint64_t rank : {with_cache->rank, without->rank}) {
      EXPECT_GE(rank, surely) << c;
      EXPECT_LE(rank, maybe) << c;
    }
  }
  // The canary inserted 40 times is memorised: rank 1, found by extraction
  // whose popped batches mix depths (a cache of each length steps apart).
  LmScorer scorer(lm());
  EXPECT_EQ(BranchAndBoundRank(scorer, f, Tokens(281), 1 << 20)->rank, 1u);
  for (size_t pops : {1, 8}) {
    LmScorer extractor(lm());
    ExtractionResult found = ShortestPathExtract(extractor, f, 1 << 20, pops);
    ASSERT_TRUE(found.found) << pops;
    EXPECT_EQ(vocab_->Decode(found.tokens), "281") << pops;
  }
}

}  // namespace
}  // namespace memaudit::engine
