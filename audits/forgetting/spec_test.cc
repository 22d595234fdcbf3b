#include "audits/forgetting/spec.h"

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/planner.h"

namespace memaudit::spec {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::AuditSpec Defaulted() {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(9);
  spec.mutable_forgetting();
  ApplyDefaults(&spec);
  return spec;
}

TEST(ForgettingSpecTest, DefaultsMakeARunnableSpec) {
  const v1::AuditSpec spec = Defaulted();
  EXPECT_TRUE(KindImplemented(spec));
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  const v1::ForgettingAudit& f = spec.forgetting();
  EXPECT_EQ(f.strategy(), "inject");
  EXPECT_EQ(f.attack(), "checkpoint_calibrated");
  EXPECT_TRUE(f.paired());
  EXPECT_TRUE(f.injected().flip_labels());
  EXPECT_EQ(f.trials(), 3u);
  EXPECT_EQ(f.eval_points(0), 0u);
  EXPECT_EQ(f.eval_points(f.eval_points_size() - 1), f.training().steps_after_injection());
}

v1::AuditSpec Construction(const std::string& name) {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(9);
  spec.mutable_forgetting()->mutable_construction()->set_name(name);
  ApplyDefaults(&spec);
  return spec;
}

TEST(ForgettingSpecTest, ConstructionDefaultsAreThePapersSettings) {
  const v1::AuditSpec kmeans = Construction("kmeans");
  MEMAUDIT_EXPECT_OK(ValidateSpec(kmeans));
  const v1::ForgettingConstruction& k = kmeans.forgetting().construction();
  EXPECT_EQ(k.sigma(), 0.03);
  EXPECT_EQ(k.middle(), 0.03);
  EXPECT_EQ(k.outlier(), -0.01);
  EXPECT_EQ(k.initial_per_cluster(), 10u);
  EXPECT_EQ(k.update_per_cluster(), 100u);
  EXPECT_EQ(kmeans.forgetting().trials(), 200u);
  EXPECT_THAT(kmeans.forgetting().eval_points(), ElementsAre(0));
  // Unused image fields stay unset.
  EXPECT_FALSE(kmeans.forgetting().has_dataset());
  EXPECT_TRUE(kmeans.forgetting().attack().empty());
  // One task per trial, each counting a Lloyd pass of both arms.
  const auto plan = PlanAudit(kmeans);
  MEMAUDIT_ASSERT_OK(plan);
  ASSERT_EQ(plan->tasks.size(), 200u);
  EXPECT_EQ(plan->tasks[0].steps_total, 2u * (20 + 300 + 1));

  const v1::AuditSpec mean = Construction("mean_estimation");
  MEMAUDIT_EXPECT_OK(ValidateSpec(mean));
  EXPECT_EQ(mean.forgetting().construction().sampling(), "random");
  EXPECT_EQ(mean.forgetting().training().learning_rate(), 0.01);
  EXPECT_EQ(mean.forgetting().eval_points(mean.forgetting().eval_points_size() - 1), 1000u);
}

TEST(ForgettingSpecTest, ConstructionRefusesFieldsItDoesNotUseAndNamesBadOnes) {
  v1::AuditSpec spec = Construction("kmeans");
  v1::ForgettingAudit* f = spec.mutable_forgetting();
  f->set_attack("checkpoint_calibrated");
  f->mutable_dataset()->set_name("fashion_mnist");
  f->mutable_construction()->set_middle(1.5);
  f->mutable_construction()->set_sampling("random");
  f->mutable_training()->set_learning_rate(0.1);
  f->set_trials(20000);
  absl::Status status = ValidateSpec(spec);
  ASSERT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument));
  std::string message(status.message());
  for (const char* field :
       {"forgetting.attack", "forgetting.dataset", "forgetting.construction.middle",
        "forgetting.construction.sampling", "forgetting.training", "forgetting.trials"}) {
    EXPECT_THAT(message, HasSubstr(field));
  }

  spec = Construction("mean_estimation");
  f = spec.mutable_forgetting();
  f->mutable_training()->set_learning_rate(0.5);
  f->mutable_training()->set_batch_size(8);
  f->mutable_construction()->set_sampling("shuffled");
  f->mutable_construction()->set_outlier(0);
  status = ValidateSpec(spec);
  ASSERT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument));
  message = std::string(status.message());
  for (const char* field :
       {"forgetting.training.learning_rate", "forgetting.training.batch_size",
        "forgetting.construction.sampling", "forgetting.construction.outlier"}) {
    EXPECT_THAT(message, HasSubstr(field));
  }

  spec = Construction("gaussian_mixture");
  EXPECT_THAT(std::string(ValidateSpec(spec).message()), HasSubstr("forgetting.construction.name"));
}

TEST(ForgettingSpecTest, DefaultEvalPointsAreDenseThenSpaced) {
  EXPECT_THAT(DefaultForgettingEvalPoints(300), ElementsAre(0, 1, 2, 5, 10, 20, 50, 100, 200, 300));
  EXPECT_THAT(DefaultForgettingEvalPoints(1), ElementsAre(0, 1));
}

TEST(ForgettingSpecTest, EveryBadFieldIsNamedWithItsRule) {
  v1::AuditSpec spec = Defaulted();
  v1::ForgettingAudit* f = spec.mutable_forgetting();
  f->mutable_dataset()->set_format("cifar10");
  f->mutable_model()->set_architecture("resnet");
  f->mutable_training()->set_optimizer("adam");
  f->mutable_training()->set_learning_rate(-1);
  f->set_strategy("finetune");
  f->set_inject_mode("twice");
  f->mutable_injected()->set_size(0);
  f->set_trials(0);
  f->set_eval_points(1, 0);
  f->set_attack("lira");
  f->set_fpr(1.5);
  const absl::Status status = ValidateSpec(spec);
  ASSERT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument));
  const std::string message(status.message());
  for (const char* field :
       {"forgetting.dataset.format", "forgetting.model.architecture",
        "forgetting.training.optimizer", "forgetting.training.learning_rate", "forgetting.strategy",
        "forgetting.inject_mode", "forgetting.injected.size", "forgetting.trials",
        "forgetting.eval_points[1]", "forgetting.attack", "forgetting.fpr"}) {
    EXPECT_THAT(message, HasSubstr(field));
  }
}

TEST(ForgettingSpecTest, CrossFieldRules) {
  v1::AuditSpec spec = Defaulted();
  spec.mutable_forgetting()->set_strategy("poison");
  spec.mutable_forgetting()->set_repeats(4);
  spec.mutable_forgetting()->add_eval_points(5000);
  spec.mutable_forgetting()->mutable_model()->add_hidden(32);
  const std::string message(ValidateSpec(spec).message());
  EXPECT_THAT(message, HasSubstr("forgetting.repeats"));
  EXPECT_THAT(message, HasSubstr("forgetting.model.hidden"));
  EXPECT_THAT(message, HasSubstr("must be <= training.steps_after_injection"));
}

TEST(ForgettingSpecTest, PlanIsOneTaskPerTrialWithExactSteps) {
  v1::AuditSpec spec = Defaulted();
  v1::ForgettingAudit* f = spec.mutable_forgetting();
  f->set_trials(4);
  f->set_repeats(3);
  auto plan = PlanAudit(spec);
  MEMAUDIT_ASSERT_OK(plan);
  ASSERT_EQ(plan->tasks.size(), 4u);
  // T_I 1000 + 3 passes over 100 examples in batches of 128 + 2 x 1000.
  for (uint32_t t = 0; t < 4; ++t) {
    EXPECT_EQ(plan->tasks[t].role, "forgetting_trial");
    EXPECT_EQ(plan->tasks[t].index, t);
    EXPECT_EQ(plan->tasks[t].steps_total, 1000u + 3u + 2000u);
  }
  f->set_inject_mode("dup_in_batch");  // floor(128 / 3) = 42 unique per batch: 3 batches
  EXPECT_EQ(PlanAudit(spec)->tasks[0].steps_total, 1000u + 3u + 2000u);
  f->set_strategy("poison");
  f->set_repeats(1);
  EXPECT_EQ(PlanAudit(spec)->tasks[0].steps_total, 2000u + 2000u);
  auto again = PlanAudit(spec);
  auto once = PlanAudit(spec);
  MEMAUDIT_ASSERT_OK(again);
  MEMAUDIT_ASSERT_OK(once);
  for (size_t i = 0; i < again->tasks.size(); ++i) {
    EXPECT_EQ(again->tasks[i].steps_total, once->tasks[i].steps_total);
    EXPECT_EQ(again->tasks[i].index, once->tasks[i].index);
  }
}

TEST(ForgettingSpecTest, ReplayAttackIsValidAndAddsTheReplayRunToTheSteps) {
  v1::AuditSpec spec = Defaulted();
  v1::ForgettingAudit* f = spec.mutable_forgetting();
  f->set_attack("deterministic_replay");
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  // Inject: the replay forks at the checkpoint, so only the post-injection
  // steps repeat: 1000 + 1 + 3 x 1000.
  EXPECT_EQ(PlanAudit(spec)->tasks[0].steps_total, 1000u + 1u + 3000u);
  // Poison: the replay forks at theta_0 and retrains T_I too.
  f->set_strategy("poison");
  EXPECT_EQ(PlanAudit(spec)->tasks[0].steps_total, 3000u + 3000u);
}

TEST(ForgettingSpecTest, SelectionByLossDefaultsAndSteps) {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(9);
  spec.mutable_forgetting()->mutable_injected()->set_selection("hard");
  ApplyDefaults(&spec);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  const v1::InjectedSetSpec& in = spec.forgetting().injected();
  EXPECT_FALSE(in.flip_labels()) << "hardness is measured on true labels";
  EXPECT_EQ(in.candidates(), 1000u);       // 10 x size
  EXPECT_EQ(in.selection_steps(), 2000u);  // T_I + steps after
  // The reference model's steps come first: 2000 + 1000 + 1 + 2 x 1000.
  EXPECT_EQ(PlanAudit(spec)->tasks[0].steps_total, 2000u + 1000u + 1u + 2000u);
  // Random selection keeps today's defaults and plan.
  EXPECT_EQ(Defaulted().forgetting().injected().selection(), "random");
  EXPECT_EQ(Defaulted().forgetting().injected().candidates(), 0u);
  EXPECT_EQ(PlanAudit(Defaulted())->tasks[0].steps_total, 1000u + 1u + 2000u);
  // Candidates are capped by the rows left outside D.
  v1::AuditSpec big;
  big.set_name("test");
  big.mutable_forgetting()->mutable_dataset()->set_pool_size(59500);
  big.mutable_forgetting()->mutable_injected()->set_selection("easy");
  ApplyDefaults(&big);
  EXPECT_EQ(big.forgetting().injected().candidates(), 500u);
  MEMAUDIT_EXPECT_OK(ValidateSpec(big));
}

TEST(ForgettingSpecTest, BadSelectionFieldsAreNamed) {
  v1::AuditSpec spec = Defaulted();
  spec.mutable_forgetting()->mutable_injected()->set_selection("hardest");
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("forgetting.injected.selection: must be"));
  spec = Defaulted();
  v1::InjectedSetSpec* in = spec.mutable_forgetting()->mutable_injected();
  in->set_candidates(500);
  in->set_selection_steps(10);
  std::string message(ValidateSpec(spec).message());
  EXPECT_THAT(message, HasSubstr("forgetting.injected.candidates: applies to selection"));
  EXPECT_THAT(message, HasSubstr("forgetting.injected.selection_steps: applies to selection"));
  in->set_selection("medium");
  in->set_candidates(50);  // fewer than size 100
  in->set_selection_steps(0);
  in->set_flip_labels(true);
  message = std::string(ValidateSpec(spec).message());
  EXPECT_THAT(message, HasSubstr("forgetting.injected.candidates: must be in [injected.size"));
  EXPECT_THAT(message, HasSubstr("forgetting.injected.selection_steps: must be in [1"));
  EXPECT_THAT(message, HasSubstr("forgetting.injected.flip_labels: must be false"));
  in->set_candidates(55000);  // 10000 + 55000 > 60000
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("forgetting.injected.candidates"));
}

TEST(ForgettingSpecTest, LiraReferencesDefaultsRulesAndSteps) {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(9);
  spec.mutable_forgetting()->set_attack("lira_references");
  ApplyDefaults(&spec);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  v1::ForgettingAudit* f = spec.mutable_forgetting();
  EXPECT_EQ(f->reference_models(), 4u);
  // Inject: references fork at the checkpoint: 1000 + 1 + (2 + 4) x 1000.
  EXPECT_EQ(PlanAudit(spec)->tasks[0].steps_total, 1000u + 1u + 6000u);
  // Poison: they fork at theta_0: (2 + 4) x (1000 + 1000).
  f->set_strategy("poison");
  EXPECT_EQ(PlanAudit(spec)->tasks[0].steps_total, 6u * 2000u);
  f->set_reference_models(1);
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("forgetting.reference_models: must be in [2, 64]"));
  v1::AuditSpec other = Defaulted();
  other.mutable_forgetting()->set_reference_models(4);
  EXPECT_THAT(std::string(ValidateSpec(other).message()),
              HasSubstr("forgetting.reference_models: applies to attack lira_references"));
}

TEST(ForgettingSpecTest, LiraOnlineDefaultsRulesAndSteps) {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(9);
  spec.mutable_forgetting()->set_attack("lira_online");
  ApplyDefaults(&spec);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  v1::ForgettingAudit* f = spec.mutable_forgetting();
  EXPECT_EQ(f->reference_models(), 4u);
  EXPECT_FALSE(f->lira_per_example_variance());
  // Inject: 4 OUT references fork at the checkpoint; 4 IN references fork
  // there too and take the injection step: 1000 + (1 + 4) x 1 + (2 + 8) x 1000.
  EXPECT_EQ(PlanAudit(spec)->tasks[0].steps_total, 1000u + 5u + 10000u);
  EXPECT_EQ(ForgettingTrialSteps(*f), 1000u + 5u + 10000u);
  // r = 3 in dup_in_batch batches of 128: 42 Dp rows per batch, 3 steps each.
  f->set_repeats(3);
  f->set_inject_mode("dup_in_batch");
  EXPECT_EQ(ForgettingTrialSteps(*f), 1000u + 5u * 3u + 10000u);
  // Selection by hardness adds its reference model in front.
  f->mutable_injected()->set_selection("hard");
  f->mutable_injected()->set_flip_labels(false);
  f->mutable_injected()->set_candidates(1000);
  f->mutable_injected()->set_selection_steps(700);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  EXPECT_EQ(PlanAudit(spec)->tasks[0].steps_total, 700u + 1000u + 15u + 10000u);
  // Poison: every arm from theta_0: (2 + 4 + 4) x (1000 + 1000).
  f->set_strategy("poison");
  f->set_repeats(1);
  f->set_inject_mode("k_steps");
  f->mutable_injected()->set_selection("random");
  f->mutable_injected()->set_candidates(0);
  f->mutable_injected()->set_selection_steps(0);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  EXPECT_EQ(PlanAudit(spec)->tasks[0].steps_total, 10u * 2000u);
  // One model per side cannot be fitted: the field is named.
  f->set_reference_models(1);
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("forgetting.reference_models: must be in [2, 64] (got 1); lira_online "
                        "trains as many IN models again"));
  f->set_reference_models(65);
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("forgetting.reference_models: must be in [2, 64]"));
}

TEST(ForgettingSpecTest, PerExampleVarianceAppliesToLiraAttacksOnly) {
  for (const char* attack : {"lira_references", "lira_online"}) {
    v1::AuditSpec spec;
    spec.set_name("test");
    spec.set_seed(9);
    spec.mutable_forgetting()->set_attack(attack);
    spec.mutable_forgetting()->set_lira_per_example_variance(true);
    ApplyDefaults(&spec);
    MEMAUDIT_EXPECT_OK(ValidateSpec(spec)) << attack << ": " << ValidateSpec(spec);
  }
  v1::AuditSpec other = Defaulted();
  other.mutable_forgetting()->set_lira_per_example_variance(true);
  EXPECT_THAT(std::string(ValidateSpec(other).message()),
              HasSubstr("forgetting.lira_per_example_variance: applies to attack lira_references "
                        "or lira_online only"));
  v1::AuditSpec canaries;
  canaries.set_name("test");
  canaries.set_seed(9);
  canaries.mutable_forgetting()->mutable_canaries();
  ApplyDefaults(&canaries);
  canaries.mutable_forgetting()->set_lira_per_example_variance(true);
  EXPECT_THAT(std::string(ValidateSpec(canaries).message()),
              HasSubstr("forgetting.lira_per_example_variance: not used with canaries"));
}

TEST(ForgettingSpecTest, CanaryDefaultsValidationAndSteps) {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(9);
  spec.mutable_forgetting()->mutable_canaries();
  ApplyDefaults(&spec);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  const v1::ForgettingAudit& f = spec.forgetting();
  EXPECT_FALSE(f.has_dataset()) << "image fields stay unset";
  EXPECT_FALSE(f.has_injected());
  EXPECT_EQ(f.attack(), "exposure");
  EXPECT_EQ(f.training().optimizer(), "adam");
  EXPECT_EQ(f.canaries().corpus().name(), "fortunes");
  EXPECT_EQ(f.canaries().canary().digits(), 5u);
  EXPECT_EQ(f.canaries().repeats_size(), 4);
  EXPECT_EQ(f.canaries().controls(), 8u);
  // 4 groups x 4 canaries with 1 + 4 + 16 + 64 copies each = 340 windows,
  // 11 batches of 32 per pass, 4 passes: 1000 + 44 + 2 x 2000.
  EXPECT_EQ(PlanAudit(spec)->tasks[0].steps_total, 1000u + 44u + 4000u);
  EXPECT_EQ(PlanAudit(spec)->tasks.size(), f.trials());
}

TEST(ForgettingSpecTest, ExtractableSequencesJoinTheCanaryBatch) {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(9);
  spec.mutable_forgetting()->mutable_canaries()->mutable_extractable();
  ApplyDefaults(&spec);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  const v1::ExtractableSpec& x = spec.forgetting().canaries().extractable();
  EXPECT_EQ(x.prefix_chars(), 16u) << "16 + 16 and the newlines fit the window";
  EXPECT_EQ(x.sequences(), 32u);
  EXPECT_EQ(x.duplicates_size(), 7);
  // 340 canary windows and 32 x (1 + 2 + ... + 64) = 4064 sequence windows:
  // 138 batches of 32 per pass, 4 passes.
  EXPECT_EQ(PlanAudit(spec)->tasks[0].steps_total, 1000u + 4u * 138u + 4000u);
  v1::AuditSpec small = spec;
  small.mutable_forgetting()->mutable_canaries()->set_window(30);
  small.mutable_forgetting()->mutable_canaries()->mutable_extractable()->add_duplicates(64);
  const std::string problems(ValidateSpec(small).message());
  EXPECT_THAT(problems, HasSubstr("forgetting.canaries.extractable.duplicates[7]: 64 is listed "
                                  "twice"));
  small.mutable_forgetting()
      ->mutable_canaries()
      ->mutable_extractable()
      ->mutable_duplicates()
      ->RemoveLast();
  EXPECT_THAT(std::string(ValidateSpec(small).message()),
              HasSubstr("forgetting.canaries.extractable.suffix_chars: prefix_chars + "
                        "suffix_chars + 2 (the newlines) must fit canaries.window = 30"));
}

TEST(ForgettingSpecTest, CanaryPoisonDefaultsValidationAndSteps) {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(9);
  spec.mutable_forgetting()->mutable_canaries();
  spec.mutable_forgetting()->set_strategy("poison");
  ApplyDefaults(&spec);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  const v1::ForgettingAudit& f = spec.forgetting();
  EXPECT_EQ(f.repeats(), 1u) << "no injection passes with poison";
  EXPECT_EQ(f.attack(), "exposure");
  // Both arms train T_I from the shared init, then run to the last point:
  // 2 x 1000 + 2 x 2000, whatever the canary batch holds.
  auto plan = PlanAudit(spec);
  MEMAUDIT_ASSERT_OK(plan);
  EXPECT_EQ(plan->tasks.size(), f.trials());
  EXPECT_EQ(plan->tasks[0].steps_total, 2u * 1000u + 2u * 2000u);
  EXPECT_EQ(ForgettingTrialSteps(f), 2u * 1000u + 2u * 2000u);
  // Passes over the canary batch are Inject's: refused with the field named.
  spec.mutable_forgetting()->set_repeats(4);
  const absl::Status bad = ValidateSpec(spec);
  EXPECT_THAT(bad, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(bad.message()),
              HasSubstr("forgetting.repeats: passes over the canary batch apply to strategy "
                        "\"inject\" only"));
}

TEST(ForgettingSpecTest, BadCanaryFieldsAreNamed) {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(9);
  v1::ForgettingAudit* f = spec.mutable_forgetting();
  f->mutable_canaries();
  ApplyDefaults(&spec);
  f->mutable_injected()->set_size(10);
  f->set_strategy("alg3");
  f->set_attack("checkpoint_calibrated");
  f->set_inject_mode("dup_in_batch");
  v1::ForgettingCanaries* c = f->mutable_canaries();
  c->mutable_model()->set_architecture("mamba");
  c->mutable_canary()->set_digits(30);
  c->set_repeats(1, 0);
  c->set_per_group(0);
  c->set_window(8);
  const std::string message(ValidateSpec(spec).message());
  for (const char* field : {"forgetting.injected: not used with canaries",
                            "forgetting.strategy: must be \"inject\" or \"poison\" (got \"alg3\")",
                            "forgetting.attack: must be \"exposure\"", "forgetting.inject_mode",
                            "forgetting.canaries.model.architecture",
                            "forgetting.canaries.canary.digits", "forgetting.canaries.repeats[1]",
                            "forgetting.canaries.per_group", "forgetting.canaries.window"}) {
    EXPECT_THAT(message, HasSubstr(field));
  }
  // Adam is allowed for canaries only.
  v1::AuditSpec images = Defaulted();
  images.mutable_forgetting()->mutable_training()->set_optimizer("adam");
  EXPECT_THAT(std::string(ValidateSpec(images).message()),
              HasSubstr("forgetting.training.optimizer"));
}

TEST(ForgettingSpecTest, CanaryTorchScriptModelNeedsItsPath) {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(9);
  v1::LanguageModelSpec* m = spec.mutable_forgetting()->mutable_canaries()->mutable_model();
  m->set_architecture("torchscript");
  ApplyDefaults(&spec);
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("forgetting.canaries.model.torchscript_path: required for"));
  m->set_torchscript_path("/models/char_gru.pt");
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  m->set_architecture("gru");
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("forgetting.canaries.model.torchscript_path: applies to architecture "
                        "\"torchscript\" only"));
}

}  // namespace
}  // namespace memaudit::spec
