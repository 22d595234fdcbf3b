#include "engine/lm_search.h"

#include <cmath>
#include <cstdio>
#include <functional>

#include "common/testing/status_matchers.h"
#include "engine/char_lm.h"
#include "engine/lm_dataset.h"
#include "engine/test_util.h"
#include "engine/trainer.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

// A small LSTM trained on synthetic text with one 3-digit canary inserted
// often enough to be memorised.
class LmSearchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    format_ = new CanaryFormat(DigitsFormat("my pin is ", 3));
    std::string text = InsertCanaries(SyntheticText(6000, 1), *format_, {{"281", 40}}, 2);
    vocab_ = new CharVocab(CharVocab::Build(text + "0123456789"));
    ModelSpec spec;
    spec.kind = ModelKind::kLstmLm;
    spec.vocab = vocab_->size();
    spec.embedding = 16;
    spec.units = 64;
    TrainerOptions o;
    o.optimizer.kind = OptimizerKind::kAdam;
    o.optimizer.learning_rate = 0.01;
    auto trainer = Trainer::Create([spec] { return BuildModel(spec, 3); }, o);
    MEMAUDIT_ASSERT_OK(trainer);
    TensorDataset data = LmWindows(vocab_->Encode(text), 48);
    MEMAUDIT_ASSERT_OK(
        (*trainer)->Train(data, EpochSchedule(testing::Range(data.size()), 16, 4), 400));
    model_ = new std::shared_ptr<Model>((*trainer)->model_ptr());
  }
  static void TearDownTestSuite() {
    delete model_;
    delete vocab_;
    delete format_;
  }
  CharLm& lm() { return static_cast<CharLm&>(**model_); }
  TokenFormat Format() { return *ToTokenFormat(*vocab_, *format_); }
  std::vector<int64_t> Tokens(const std::string& s) {
    return *SecretTokens(*vocab_, Format(), *format_, s);
  }

  static CanaryFormat* format_;
  static CharVocab* vocab_;
  static std::shared_ptr<Model>* model_;
};
CanaryFormat* LmSearchTest::format_ = nullptr;
CharVocab* LmSearchTest::vocab_ = nullptr;
std::shared_ptr<Model>* LmSearchTest::model_ = nullptr;

TEST_F(LmSearchTest, TrieEnumerationEqualsNaiveScoring) {
  LmScorer scorer(lm());
  TokenFormat f = Format();
  auto px = EnumerateAllPx(scorer, f);
  MEMAUDIT_ASSERT_OK(px);
  ASSERT_EQ(px->size(), 1000u);
  EXPECT_EQ(scorer.queries(), 1u + 10 + 100);  // one step per internal node
  std::vector<std::vector<int64_t>> candidates;
  for (int i = 0; i < 1000; ++i) {
    char buf[4];
    std::snprintf(buf, sizeof(buf), "%03d", i);
    candidates.push_back(Tokens(buf));
  }
  std::vector<double> naive = NaivePxBits(scorer, f, candidates, 128);
  for (int i = 0; i < 1000; ++i) ASSERT_NEAR((*px)[i], naive[i], 1e-4 * (1 + naive[i])) << i;
  // Chunking the frontier changes memory, not the values.
  auto chunked = EnumerateAllPx(scorer, f, 7);
  for (int i = 0; i < 1000; ++i) ASSERT_NEAR((*px)[i], (*chunked)[i], 1e-5) << i;
  // And the path walk agrees with both.
  EXPECT_NEAR(PathPxBits(scorer, f, Tokens("281")), (*px)[281], 1e-5);
}

TEST_F(LmSearchTest, BranchAndBoundRankEqualsEnumerationRank) {
  TokenFormat f = Format();
  for (const char* s : {"281", "000", "555", "907", "123"}) {
    LmScorer a(lm()), b(lm());
    auto bnb = BranchAndBoundRank(a, f, Tokens(s), 1 << 20);
    auto en = EnumerationRank(b, f, Tokens(s));
    MEMAUDIT_ASSERT_OK(bnb);
    MEMAUDIT_ASSERT_OK(en);
    EXPECT_TRUE(bnb->exact);
    EXPECT_EQ(bnb->rank, en->rank) << s;
    EXPECT_LE(bnb->queries, en->queries) << s;
  }
  LmScorer scorer(lm());
  auto memorised = BranchAndBoundRank(scorer, f, Tokens("281"), 1 << 20);
  EXPECT_EQ(memorised->rank, 1u);
  EXPECT_LT(memorised->queries, 20u) << "a rank-1 canary needs about length steps";
  // A tiny budget gives a lower bound, flagged as inexact.
  LmScorer poor(lm());
  auto cut = BranchAndBoundRank(poor, f, Tokens("907"), 5);
  EXPECT_FALSE(cut->exact);
}

// Every candidate of the 3-digit space taken as the canary, both exact ranks
// against a brute force over the path walk's Px (a computation independent
// of the trie): never below the count of the others under the tie band less
// the two computations' disagreement, never above it plus that. `model`: the
// trained LSTM, and an untrained one whose near-uniform digits make the
// space full of near-ties.
void ExpectEveryRankBracketed(CharLm& model, const TokenFormat& f,
                              const std::function<std::vector<int64_t>(int)>& tokens) {
  // The trie and the path walk agree to ~1e-5 bits (TrieEnumerationEqualsNaiveScoring).
  constexpr double kDisagreement = 3e-5;
  LmScorer walk(model);
  std::vector<double> path(1000);
  for (int i = 0; i < 1000; ++i) path[i] = PathPxBits(walk, f, tokens(i));
  int near_ties = 0;
  for (int c = 0; c < 1000; ++c) {
    uint64_t surely = 1, maybe = 1;  // the canary itself, then the others
    for (int r = 0; r < 1000; ++r) {
      if (r == c) continue;
      surely += path[r] <= path[c] + kPxTieBits - kDisagreement;
      maybe += path[r] <= path[c] + kPxTieBits + kDisagreement;
      near_ties += r < c && std::abs(path[r] - path[c]) <= kPxTieBits;
    }
    LmScorer a(model);
    auto bnb =
        BranchAndBoundRank(a, f, tokens(c), 1 << 20, /*max_states=*/c % 3 == 0 ? 7 : 1 << 15);
    MEMAUDIT_ASSERT_OK(bnb);
    ASSERT_TRUE(bnb->exact);
    ASSERT_GE(bnb->rank, surely) << "candidate " << c;
    ASSERT_LE(bnb->rank, maybe) << "candidate " << c;
    if (c % 10 == 0) {  // enumeration costs the whole trie each time
      LmScorer b(model);
      auto en = EnumerationRank(b, f, tokens(c));
      MEMAUDIT_ASSERT_OK(en);
      ASSERT_GE(en->rank, surely) << "candidate " << c;
      ASSERT_LE(en->rank, maybe) << "candidate " << c;
    }
  }
  ::testing::Test::RecordProperty("near_ties", near_ties);
}

TEST_F(LmSearchTest, EveryRankOfASpaceMatchesABruteForce) {
  auto tokens = [&](int i) {
    char buf[4];
    std::snprintf(buf, sizeof(buf), "%03d", i);
    return Tokens(buf);
  };
  ExpectEveryRankBracketed(lm(), Format(), tokens);
  // Untrained: every digit about equally likely, Px values bunched together.
  ModelSpec spec;
  spec.kind = ModelKind::kLstmLm;
  spec.vocab = vocab_->size();
  spec.embedding = 16;
  spec.units = 64;
  auto fresh = BuildModel(spec, 5);
  MEMAUDIT_ASSERT_OK(fresh);
  (*fresh)->eval();
  ExpectEveryRankBracketed(static_cast<CharLm&>(**fresh), Format(), tokens);
}

// The canary counts once by identity, whatever Px its own entry holds.
TEST(RankAmongTest, CountsTheCanaryOnceAndTiesAgainstIt) {
  const std::vector<double> px = {5.0, 3.0, 7.0, 3.0 + kPxTieBits, 3.0 + 2 * kPxTieBits};
  EXPECT_EQ(RankAmong(px, 1, 3.0), 2u) << "itself, and index 3 at the band's edge";
  // Its entry computed a little higher than its own Px: still counted.
  std::vector<double> drifted = px;
  drifted[1] = 3.0 + 5 * kPxTieBits;
  EXPECT_EQ(RankAmong(drifted, 1, 3.0), 2u);
  EXPECT_EQ(RankAmong(px, 2, 7.0), 5u) << "the highest Px ranks last";
  EXPECT_EQ(RankAmong({}, 0, 1.0), 1u);
}

TEST_F(LmSearchTest, ExtractionFindsTheLowestPxCandidate) {
  TokenFormat f = Format();
  LmScorer enumerate(lm());
  auto px = *EnumerateAllPx(enumerate, f);
  const size_t best = std::min_element(px.begin(), px.end()) - px.begin();
  EXPECT_EQ(best, 281u);
  LmScorer scorer(lm());
  ExtractionResult exact = ShortestPathExtract(scorer, f, 1 << 20);
  ASSERT_TRUE(exact.found);
  EXPECT_EQ(vocab_->Decode(exact.tokens), "281");
  EXPECT_NEAR(exact.px_bits, px[best], 1e-5);
  EXPECT_LT(exact.queries, 111u);
  LmScorer batched_scorer(lm());
  ExtractionResult batched = ShortestPathExtract(batched_scorer, f, 1 << 20, 8);
  ASSERT_TRUE(batched.found);
  EXPECT_EQ(vocab_->Decode(batched.tokens), "281");
  // An exhaustive beam is exact; greedy can only be worse or equal.
  LmScorer beam_scorer(lm());
  Completion beam = BeamComplete(beam_scorer, f, 1000);
  EXPECT_EQ(vocab_->Decode(beam.tokens), "281");
  Completion greedy = GreedyComplete(beam_scorer, f);
  EXPECT_GE(greedy.px_bits, beam.px_bits - kPxTieBits);
  // Out of budget: nothing found.
  LmScorer starved(lm());
  EXPECT_FALSE(ShortestPathExtract(starved, f, 2).found);
}

TEST(TokenFormatTest, RejectsCharactersOutsideTheVocabulary) {
  CharVocab vocab = CharVocab::Build("abc\n");
  EXPECT_FALSE(ToTokenFormat(vocab, DigitsFormat("ab", 2)).ok());
  CanaryFormat f{"ab", {"abc", "c"}, "a"};
  auto tf = ToTokenFormat(vocab, f);
  MEMAUDIT_ASSERT_OK(tf);
  EXPECT_EQ(tf->context.size(), 3u);    // newline + prefix
  EXPECT_EQ(tf->positions.size(), 3u);  // two holes + suffix
  EXPECT_EQ(CandidateIndex(*tf, *SecretTokens(vocab, *tf, f, "bc")).value(), 1u);
}

}  // namespace
}  // namespace memaudit::engine
