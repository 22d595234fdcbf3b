#include "engine/forgetting_run.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
#include "common/testing/status_matchers.h"
#include "engine/forgetting_lm_run.h"
#include "engine/text_corpus.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

using ::memaudit::testing::StatusIs;

// 10 classes of 16-pixel images: class c lights pixels around c, plus noise.
data::LabeledExamples TinyImages(uint32_t count, uint32_t features = 16) {
  data::LabeledExamples data;
  data.count = count;
  data.features = features;
  data.classes = 10;
  SplitMix64 rng(3);
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t label = static_cast<uint8_t>(rng.Uniform(10));
    data.labels.push_back(label);
    for (uint32_t f = 0; f < data.features; ++f) {
      const bool on = f == label || f == label + 3u;
      data.pixels.push_back(static_cast<uint8_t>((on ? 160 : 0) + rng.Uniform(90)));
    }
  }
  return data;
}

ForgettingRunSpec Spec() {
  ForgettingRunSpec spec;
  for (uint32_t i = 0; i < 200; ++i) spec.clean_rows.push_back(i);
  for (uint32_t i = 200; i < 220; ++i) {
    spec.injected_rows.push_back(i);
    spec.injected_labels.push_back(static_cast<uint8_t>(i % 10));
  }
  spec.optimizer.kind = OptimizerKind::kSgd;
  spec.optimizer.learning_rate = 0.5;
  spec.batch_size = 32;
  spec.steps_before = 20;
  spec.repeats = 2;
  spec.eval_points = {0, 3, 10};
  spec.init_seed = 1;
  spec.order_seed = 2;
  return spec;
}

TEST(ForgettingRunTest, ArmsMatchBeforeInjectionAndDifferRightAfter) {
  const data::LabeledExamples data = TinyImages(240);
  uint64_t reported = 0;
  auto result = RunForgetting(data, Spec(), [&](uint64_t steps) {
    reported = steps;
    return true;
  });
  MEMAUDIT_ASSERT_OK(result);
  EXPECT_EQ(result->injection_steps, 2u);  // r = 2 passes of one 20-row batch
  EXPECT_EQ(result->steps, ForgettingTrialSteps(Spec()));
  EXPECT_EQ(reported, result->steps);
  ASSERT_EQ(result->points.size(), 3u);
  const ForgettingPoint& first = result->points[0];
  // The baseline at 0 steps since injection is the shared checkpoint itself.
  EXPECT_EQ(first.phi_baseline, result->phi_checkpoint);
  EXPECT_EQ(first.loss_baseline, result->loss_checkpoint);
  // The injection raised phi of the injected examples on average.
  double gain = 0;
  for (size_t i = 0; i < first.phi_injected.size(); ++i) {
    gain += first.phi_injected[i] - first.phi_baseline[i];
  }
  EXPECT_GT(gain, 0);
  EXPECT_NE(result->points[2].phi_injected, result->points[2].phi_baseline);
}

TEST(ForgettingRunTest, DeterministicAndPairingOnlyMovesTheBaselineOrder) {
  const data::LabeledExamples data = TinyImages(240);
  auto a = RunForgetting(data, Spec(), nullptr);
  auto b = RunForgetting(data, Spec(), nullptr);
  MEMAUDIT_ASSERT_OK(a);
  MEMAUDIT_ASSERT_OK(b);
  EXPECT_EQ(a->points[2].phi_injected, b->points[2].phi_injected);
  EXPECT_EQ(a->points[2].phi_baseline, b->points[2].phi_baseline);
  ForgettingRunSpec unpaired = Spec();
  unpaired.paired = false;
  auto c = RunForgetting(data, unpaired, nullptr);
  MEMAUDIT_ASSERT_OK(c);
  EXPECT_EQ(a->points[2].phi_injected, c->points[2].phi_injected);
  EXPECT_NE(a->points[2].phi_baseline, c->points[2].phi_baseline);
}

TEST(ForgettingRunTest, PoisonTrainsBothArmsFromTheSameInit) {
  const data::LabeledExamples data = TinyImages(240);
  ForgettingRunSpec spec = Spec();
  spec.strategy = ForgettingStrategy::kPoison;
  auto result = RunForgetting(data, spec, nullptr);
  MEMAUDIT_ASSERT_OK(result);
  EXPECT_EQ(result->steps, 2 * 20u + 2 * 10u);
  EXPECT_EQ(result->points[0].phi_baseline, result->phi_checkpoint);
  EXPECT_NE(result->points[0].phi_injected, result->points[0].phi_baseline);
}

TEST(ForgettingRunTest, ReplayReproducesTheBaselineArmBitForBit) {
  const data::LabeledExamples data = TinyImages(240);
  for (ForgettingStrategy strategy : {ForgettingStrategy::kInject, ForgettingStrategy::kPoison}) {
    ForgettingRunSpec spec = Spec();
    spec.strategy = strategy;
    spec.repeats = strategy == ForgettingStrategy::kPoison ? 1 : 2;
    spec.replay = true;
    uint64_t reported = 0;
    auto result = RunForgetting(data, spec, [&](uint64_t steps) {
      reported = steps;
      return true;
    });
    MEMAUDIT_ASSERT_OK(result);
    // The replay is a real third run: Inject 20 + 2 + 3 x 10, Poison 3 x (20 + 10).
    EXPECT_EQ(result->steps, strategy == ForgettingStrategy::kPoison ? 90u : 52u);
    EXPECT_EQ(result->steps, ForgettingTrialSteps(spec));
    EXPECT_EQ(reported, result->steps);
    for (const ForgettingPoint& p : result->points) {
      EXPECT_EQ(p.phi_replay, p.phi_baseline) << p.steps_since_injection;
      EXPECT_NE(p.phi_replay, p.phi_injected) << p.steps_since_injection;
    }
    // Without replay nothing is measured for it.
    spec.replay = false;
    auto plain = RunForgetting(data, spec, nullptr);
    MEMAUDIT_ASSERT_OK(plain);
    EXPECT_TRUE(plain->points[0].phi_replay.empty());
    EXPECT_EQ(plain->points[2].phi_baseline, result->points[2].phi_baseline);
  }
}

TEST(ForgettingRunTest, ReferenceModelsForkWithTheBaselineButTakeTheirOwnOrder) {
  const data::LabeledExamples data = TinyImages(240);
  for (ForgettingStrategy strategy : {ForgettingStrategy::kInject, ForgettingStrategy::kPoison}) {
    ForgettingRunSpec spec = Spec();
    spec.strategy = strategy;
    spec.repeats = strategy == ForgettingStrategy::kPoison ? 1 : 2;
    spec.reference_models = 3;
    uint64_t reported = 0;
    auto result = RunForgetting(data, spec, [&](uint64_t steps) {
      reported = steps;
      return true;
    });
    MEMAUDIT_ASSERT_OK(result);
    // Inject: 20 + 2 + (2 + 3) x 10; Poison: (2 + 3) x (20 + 10).
    EXPECT_EQ(result->steps, strategy == ForgettingStrategy::kPoison ? 150u : 72u);
    EXPECT_EQ(result->steps, ForgettingTrialSteps(spec));
    EXPECT_EQ(reported, result->steps);
    for (const ForgettingPoint& p : result->points) {
      ASSERT_EQ(p.phi_references.size(), 3u);
      for (const std::vector<double>& ref : p.phi_references) {
        EXPECT_EQ(ref.size(), spec.injected_rows.size());
      }
    }
    const ForgettingPoint& first = result->points[0];
    const ForgettingPoint& last = result->points[2];
    if (strategy == ForgettingStrategy::kInject) {
      // At k = 0 every reference is still the checkpoint.
      for (const std::vector<double>& ref : first.phi_references) {
        EXPECT_EQ(ref, result->phi_checkpoint);
      }
    }
    // Afterwards each has its own order: different from the baseline and
    // from each other.
    EXPECT_NE(last.phi_references[0], last.phi_baseline);
    EXPECT_NE(last.phi_references[0], last.phi_references[1]);
    // The references change nothing about the arms.
    spec.reference_models = 0;
    auto plain = RunForgetting(data, spec, nullptr);
    MEMAUDIT_ASSERT_OK(plain);
    EXPECT_TRUE(plain->points[2].phi_references.empty());
    EXPECT_EQ(plain->points[2].phi_baseline, last.phi_baseline);
    EXPECT_EQ(plain->points[2].phi_injected, last.phi_injected);
  }
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

TEST(ForgettingRunTest, InReferenceModelsForkWithTheInjectedArmButTakeTheirOwnOrder) {
  const data::LabeledExamples data = TinyImages(240);
  for (ForgettingStrategy strategy : {ForgettingStrategy::kInject, ForgettingStrategy::kPoison}) {
    const bool poison = strategy == ForgettingStrategy::kPoison;
    ForgettingRunSpec spec = Spec();
    spec.strategy = strategy;
    spec.repeats = poison ? 1 : 2;
    spec.reference_models = 3;
    spec.in_reference_models = 2;
    uint64_t reported = 0;
    auto result = RunForgetting(data, spec, [&](uint64_t steps) {
      reported = steps;
      return true;
    });
    MEMAUDIT_ASSERT_OK(result);
    // Inject: 20 + (1 + 2) x 2 injection steps + (2 + 3 + 2) x 10;
    // Poison: (2 + 3 + 2) x (20 + 10).
    EXPECT_EQ(result->steps, poison ? 210u : 96u);
    EXPECT_EQ(result->steps, ForgettingTrialSteps(spec));
    EXPECT_EQ(reported, result->steps);
    for (const ForgettingPoint& p : result->points) {
      ASSERT_EQ(p.phi_in_references.size(), 2u);
      ASSERT_EQ(p.phi_references.size(), 3u);
      for (const std::vector<double>& ref : p.phi_in_references) {
        EXPECT_EQ(ref.size(), spec.injected_rows.size());
      }
    }
    const ForgettingPoint& first = result->points[0];
    const ForgettingPoint& last = result->points[2];
    if (!poison) {
      // k_steps injection batches are Dp in a fixed order: at k = 0 every IN
      // reference is the injected arm, bit for bit.
      for (const std::vector<double>& ref : first.phi_in_references) {
        EXPECT_EQ(ref, first.phi_injected);
      }
    } else {
      // Poison: their own epochs over D u Dp since theta_0.
      EXPECT_NE(first.phi_in_references[0], first.phi_injected);
      EXPECT_NE(first.phi_in_references[0], first.phi_in_references[1]);
    }
    // Afterwards each has its own order: different from the injected arm,
    // the OUT references and each other.
    EXPECT_NE(last.phi_in_references[0], last.phi_injected);
    EXPECT_NE(last.phi_in_references[0], last.phi_in_references[1]);
    EXPECT_NE(last.phi_in_references[0], last.phi_references[0]);
    // They saw Dp: its phi stands higher under them than under the OUT
    // references (averaged over Dp and the models).
    for (const ForgettingPoint* p : {&first, &last}) {
      double in = 0, out = 0;
      for (const auto& ref : p->phi_in_references) in += Mean(ref) / 2;
      for (const auto& ref : p->phi_references) out += Mean(ref) / 3;
      EXPECT_GT(in, out) << p->steps_since_injection;
    }
    // Deterministic, and they change nothing about the arms or the OUT
    // references.
    auto again = RunForgetting(data, spec, nullptr);
    MEMAUDIT_ASSERT_OK(again);
    EXPECT_EQ(again->points[2].phi_in_references, last.phi_in_references);
    spec.in_reference_models = 0;
    auto plain = RunForgetting(data, spec, nullptr);
    MEMAUDIT_ASSERT_OK(plain);
    EXPECT_TRUE(plain->points[2].phi_in_references.empty());
    EXPECT_EQ(plain->points[2].phi_baseline, last.phi_baseline);
    EXPECT_EQ(plain->points[2].phi_injected, last.phi_injected);
    EXPECT_EQ(plain->points[2].phi_references, last.phi_references);
  }
}

TEST(ForgettingRunTest, InReferencesFillDupInBatchInjectionsFromTheirOwnSeed) {
  const data::LabeledExamples data = TinyImages(240);
  ForgettingRunSpec spec = Spec();
  spec.dup_in_batch = true;  // 16 Dp rows x 2 copies per batch of 32: 2 steps
  spec.in_reference_models = 1;
  auto result = RunForgetting(data, spec, nullptr);
  MEMAUDIT_ASSERT_OK(result);
  EXPECT_EQ(result->injection_steps, 2u);
  EXPECT_EQ(result->steps, 20u + 2u * 2u + 3u * 10u);
  EXPECT_EQ(result->steps, ForgettingTrialSteps(spec));
  // The batches' D fill is drawn from the IN reference's own seed.
  EXPECT_NE(result->points[0].phi_in_references[0], result->points[0].phi_injected);
}

TEST(ForgettingRunTest, PackedArmsEqualArmsTrainedOneAtATime) {
  // 784 features and 64 hidden units put the GEMMs on the blocked kernels
  // Fashion-MNIST runs use.
  const data::LabeledExamples small = TinyImages(240), wide = TinyImages(240, 784);
  for (ForgettingStrategy strategy : {ForgettingStrategy::kInject, ForgettingStrategy::kPoison}) {
    for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kMomentum, OptimizerKind::kAdam,
                               OptimizerKind::kRmsProp}) {
      const bool is_wide = kind == OptimizerKind::kMomentum;
      const data::LabeledExamples& data = is_wide ? wide : small;
      ForgettingRunSpec spec = Spec();
      if (is_wide) spec.batch_size = 64;
      spec.strategy = strategy;
      spec.repeats = strategy == ForgettingStrategy::kPoison ? 1 : 2;
      spec.hidden = {is_wide ? 64u : 12u};
      spec.optimizer.kind = kind;
      spec.optimizer.momentum = 0.9;
      spec.optimizer.learning_rate = kind == OptimizerKind::kAdam ? 0.01 : 0.1;
      spec.optimizer.weight_decay = 1e-3;
      spec.replay = true;
      spec.reference_models = 2;
      spec.in_reference_models = 2;
      const std::string what =
          absl::StrCat(strategy == ForgettingStrategy::kPoison, "/", static_cast<int>(kind));
      uint64_t reported = 0;
      auto packed = RunForgetting(data, spec, [&](uint64_t steps) {
        reported = steps;
        return true;
      });
      spec.pack_arms = false;
      auto alone = RunForgetting(data, spec, nullptr);
      MEMAUDIT_ASSERT_OK(packed);
      MEMAUDIT_ASSERT_OK(alone);
      // Adam counts steps for its bias correction: after the injected arm's
      // two extra steps its state no longer stacks with the baseline's.
      const bool packable = !(kind == OptimizerKind::kAdam || kind == OptimizerKind::kRmsProp) ||
                            strategy == ForgettingStrategy::kPoison;
      EXPECT_EQ(packed->packed, packable) << what;
      EXPECT_FALSE(alone->packed);
      EXPECT_EQ(packed->steps, alone->steps) << what;
      EXPECT_EQ(reported, packed->steps) << what;
      ASSERT_EQ(packed->points.size(), alone->points.size());
      for (size_t i = 0; i < packed->points.size(); ++i) {
        const ForgettingPoint& p = packed->points[i];
        const ForgettingPoint& q = alone->points[i];
        EXPECT_EQ(p.phi_injected, q.phi_injected) << what << " point " << i;
        EXPECT_EQ(p.loss_injected, q.loss_injected) << what << " point " << i;
        EXPECT_EQ(p.phi_baseline, q.phi_baseline) << what << " point " << i;
        EXPECT_EQ(p.loss_baseline, q.loss_baseline) << what << " point " << i;
        EXPECT_EQ(p.phi_replay, q.phi_replay) << what << " point " << i;
        EXPECT_EQ(p.phi_references, q.phi_references) << what << " point " << i;
        EXPECT_EQ(p.phi_in_references, q.phi_in_references) << what << " point " << i;
        EXPECT_EQ(p.phi_in_references.size(), 2u) << what << " point " << i;
      }
      EXPECT_NE(packed->points[2].phi_injected, packed->points[2].phi_baseline) << what;
    }
  }
}

TEST(ForgettingRunTest, PickByLossTakesTheLowestMiddleOrHighestLosses) {
  const std::vector<double> losses = {0.5, 3.0, 0.1, 2.0, 0.5, 9.0, 1.0};
  // Ascending: 0.1 (2), 0.5 (0), 0.5 (4), 1.0 (6), 2.0 (3), 3.0 (1), 9.0 (5).
  EXPECT_EQ(PickByLoss(losses, 3, ForgettingSelection::kEasy), (std::vector<size_t>{2, 0, 4}));
  // Medium starts at (7 - 3) / 2 = 2 in loss order.
  EXPECT_EQ(PickByLoss(losses, 3, ForgettingSelection::kMedium), (std::vector<size_t>{4, 6, 3}));
  EXPECT_EQ(PickByLoss(losses, 3, ForgettingSelection::kHard), (std::vector<size_t>{3, 1, 5}));
  EXPECT_EQ(PickByLoss(losses, 3, ForgettingSelection::kRandom), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(PickByLoss(losses, 1, ForgettingSelection::kMedium), (std::vector<size_t>{6}));
  EXPECT_EQ(PickByLoss(losses, 99, ForgettingSelection::kHard).size(), losses.size());
}

TEST(ForgettingRunTest, CandidateLossesComeFromOneSeededReferenceModel) {
  const data::LabeledExamples data = TinyImages(300);
  ForgettingReferenceSpec spec;
  for (uint32_t i = 0; i < 200; ++i) spec.clean_rows.push_back(i);
  for (uint32_t i = 200; i < 300; ++i) spec.candidate_rows.push_back(i);
  spec.optimizer.kind = OptimizerKind::kSgd;
  spec.optimizer.learning_rate = 0.5;
  spec.batch_size = 32;
  spec.steps = 30;
  spec.init_seed = 4;
  spec.order_seed = 5;
  uint64_t steps = 0;
  auto a = ForgettingCandidateLosses(data, spec, [&](uint64_t done) {
    steps = done;
    return true;
  });
  MEMAUDIT_ASSERT_OK(a);
  EXPECT_EQ(steps, 30u);
  ASSERT_EQ(a->size(), 100u);
  auto b = ForgettingCandidateLosses(data, spec, nullptr);
  MEMAUDIT_ASSERT_OK(b);
  EXPECT_EQ(*a, *b) << "a pure function of the seeds";
  // The model learned D's pattern, which the candidates share: their mean
  // loss is below chance (ln 10), and easy picks sit far below hard ones.
  double mean = 0, easy = 0, hard = 0;
  for (double l : *a) mean += l / 100;
  for (size_t i : PickByLoss(*a, 10, ForgettingSelection::kEasy)) easy += (*a)[i];
  for (size_t i : PickByLoss(*a, 10, ForgettingSelection::kHard)) hard += (*a)[i];
  EXPECT_LT(mean, std::log(10.0));
  EXPECT_LT(easy * 2, hard);
  spec.candidate_rows.push_back(999);
  EXPECT_THAT(ForgettingCandidateLosses(data, spec, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

ForgettingLmRunSpec LmSpec() {
  ForgettingLmRunSpec spec;
  spec.corpus_text = SyntheticText(20000, 7);
  spec.prefix = "code ";
  spec.digits = 3;
  spec.copies = {1, 16};
  spec.controls = 3;
  spec.units = 32;
  spec.embedding = 8;
  spec.optimizer.learning_rate = 1e-2;
  spec.window = 32;
  spec.batch_size = 16;
  spec.steps_before = 50;
  spec.passes = 3;
  spec.eval_points = {0, 20};
  spec.canary_seed = 3;
  spec.init_seed = 4;
  spec.order_seed = 5;
  return spec;
}

TEST(ForgettingLmRunTest, InjectedCanariesGainExposureTheBaselineDoesNot) {
  uint64_t reported = 0;
  auto result = RunForgettingLm(LmSpec(), [&](uint64_t steps) {
    reported = steps;
    return true;
  });
  MEMAUDIT_ASSERT_OK(result);
  // 17 canary windows in batches of 16: 2 steps per pass, 3 passes.
  EXPECT_EQ(result->injection_steps, 6u);
  EXPECT_EQ(result->steps, 50u + 6u + 2u * 20u);
  EXPECT_EQ(result->steps, ForgettingLmTrialSteps(LmSpec()));
  EXPECT_EQ(reported, result->steps);
  EXPECT_NEAR(result->log2_space, 3 * std::log2(10.0), 1e-12);
  ASSERT_EQ(result->secrets.size(), 5u);
  ASSERT_EQ(result->checkpoint.exposure.size(), 5u);
  ASSERT_EQ(result->points.size(), 2u);
  const ForgettingLmPoint& first = result->points[0];
  // At k = 0 the baseline is the checkpoint.
  EXPECT_EQ(first.baseline.exposure, result->checkpoint.exposure);
  // Enumeration of 1000 candidates: every rank exact, every exposure in range.
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(first.injected.exact[i], 1);
    EXPECT_GE(first.injected.exposure[i], 0);
    EXPECT_LE(first.injected.exposure[i], result->log2_space + 1e-9);
  }
  // The 16-copy canary became far more exposed than before the injection.
  EXPECT_GT(first.injected.exposure[1], result->checkpoint.exposure[1] + 2);
  // Deterministic: the same spec gives the same exposures.
  auto again = RunForgettingLm(LmSpec(), nullptr);
  MEMAUDIT_ASSERT_OK(again);
  EXPECT_EQ(again->points[1].injected.exposure, result->points[1].injected.exposure);
  EXPECT_EQ(again->points[1].baseline.exposure, result->points[1].baseline.exposure);
}

TEST(ForgettingLmRunTest, BranchAndBoundAgreesWithEnumerationWhereExact) {
  ForgettingLmRunSpec spec = LmSpec();
  spec.digits = 4;
  spec.eval_points = {0};
  auto enumerated = RunForgettingLm(spec, nullptr);
  MEMAUDIT_ASSERT_OK(enumerated);
  // The trie needs 1 + 10 + 100 + 1000 steps: one fewer ranks each canary by
  // branch-and-bound instead, exact while its pruned search fits.
  spec.rank_query_budget = 1110;
  auto bounded = RunForgettingLm(spec, nullptr);
  MEMAUDIT_ASSERT_OK(bounded);
  const CanaryExposures& e = enumerated->points[0].injected;
  const CanaryExposures& b = bounded->points[0].injected;
  size_t exact = 0;
  for (size_t i = 0; i < e.exposure.size(); ++i) {
    if (b.exact[i]) {
      ++exact;
      EXPECT_NEAR(b.exposure[i], e.exposure[i], 1e-9) << i;
    } else {
      // A lower bound on the rank: an upper bound on the exposure.
      EXPECT_GE(b.exposure[i], e.exposure[i] - 1e-9) << i;
    }
  }
  EXPECT_GE(exact, 1u) << "the memorized canary prunes well";
}

TEST(ForgettingLmRunTest, BadInputsAreRefused) {
  ForgettingLmRunSpec spec = LmSpec();
  spec.copies = {};
  EXPECT_THAT(RunForgettingLm(spec, nullptr), StatusIs(absl::StatusCode::kInvalidArgument));
  spec = LmSpec();
  spec.window = 6;  // "\ncode 123\n" does not fit
  EXPECT_THAT(RunForgettingLm(spec, nullptr), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ForgettingRunTest, BadInputsAreRefused) {
  const data::LabeledExamples data = TinyImages(240);
  ForgettingRunSpec spec = Spec();
  spec.eval_points = {5, 2};
  EXPECT_THAT(RunForgetting(data, spec, nullptr), StatusIs(absl::StatusCode::kInvalidArgument));
  spec = Spec();
  spec.injected_rows.push_back(999);
  EXPECT_THAT(RunForgetting(data, spec, nullptr), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace memaudit::engine
