#include "spec/spec_validator.h"

#include <chrono>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "audits/exposure/spec.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/spec_rules.h"
#include "spec/test_specs.h"

namespace memaudit::spec {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(SpecValidatorTest, SmallSpecIsValid) {
  MEMAUDIT_EXPECT_OK(ValidateSpec(SmallMembershipSpec()));
}

TEST(SpecValidatorTest, DefaultsAreFilledIn) {
  v1::AuditSpec spec = SmallMembershipSpec();
  EXPECT_EQ(spec.resources().threads_per_task(), 1u);
  EXPECT_EQ(spec.resources().max_attempts(), 3u);
  EXPECT_EQ(SmallMembershipSpec(6).membership().attacks_size(), 6);
  EXPECT_EQ(spec.membership().population_size(), 1000u) << "rmia is among the defaults";
  EXPECT_EQ(spec.membership().fpr_points_size(), 2);
}

TEST(SpecValidatorTest, EveryBadFieldIsNamedWithItsRule) {
  v1::AuditSpec spec = SmallMembershipSpec(6);  // all six default attacks
  v1::MembershipAudit* m = spec.mutable_membership();
  m->set_reference_models(3);
  m->mutable_training()->set_learning_rate(-1);
  m->mutable_training()->set_momentum(1.5);
  m->mutable_training()->set_epochs(0);
  m->mutable_dataset()->set_pool_size(70000);
  m->mutable_model()->set_architecture("transformer");
  m->mutable_model()->add_hidden(0);
  m->add_attacks("magic");
  m->add_fpr_points(1.5);
  absl::Status status = ValidateSpec(spec);
  ASSERT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument));
  const std::string message(status.message());
  EXPECT_THAT(message, HasSubstr("membership.reference_models: must be an even number"));
  EXPECT_THAT(message, HasSubstr("(got 3)"));
  EXPECT_THAT(message, HasSubstr("membership.training.learning_rate: must be > 0"));
  EXPECT_THAT(message, HasSubstr("membership.training.momentum"));
  EXPECT_THAT(message, HasSubstr("membership.training.epochs"));
  EXPECT_THAT(message, HasSubstr("membership.dataset.pool_size"));
  EXPECT_THAT(message, HasSubstr("membership.model.architecture"));
  EXPECT_THAT(message, HasSubstr("membership.attacks[6]: unknown attack \"magic\""));
  EXPECT_THAT(message, HasSubstr("membership.fpr_points[2]"));
  EXPECT_EQ(FindProblems(spec).size(), 8u);
}

TEST(SpecValidatorTest, RmiaPopulationAndTargetModelAreChecked) {
  v1::AuditSpec spec = SmallMembershipSpec();
  v1::MembershipAudit* m = spec.mutable_membership();
  m->set_population_size(60000);
  m->set_target_model(4);
  const std::string message(ValidateSpec(spec).message());
  EXPECT_THAT(message, HasSubstr("membership.population_size: pool_size + population_size must "
                                 "be <= 60000"));
  EXPECT_THAT(message,
              HasSubstr("membership.target_model: must be < reference_models = 4 (got 4)"));
  m->set_population_size(0);
  m->set_target_model(3);
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("membership.population_size: must be >= 1 when the \"rmia\" attack"));
  m->clear_attacks();
  m->add_attacks("loss");
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec)) << "no population needed without rmia";
}

TEST(SpecValidatorTest, PriorityIsBounded) {
  v1::AuditSpec spec = SmallMembershipSpec();
  EXPECT_EQ(spec.resources().priority(), 0);
  for (int32_t ok : {-100, -1, 0, 7, 100}) {
    spec.mutable_resources()->set_priority(ok);
    MEMAUDIT_EXPECT_OK(ValidateSpec(spec)) << ok;
  }
  spec.mutable_resources()->set_priority(101);
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("resources.priority: must be in [-100, 100] (got 101)"));
  spec.mutable_resources()->set_priority(-101);
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("resources.priority: must be in [-100, 100] (got -101)"));
}

// Several GPUs per task train each model data-parallel: membership audits
// of cnn and torchscript models only, at most 8.
TEST(SpecValidatorTest, SeveralGpusPerTaskAreForModelsThatTrainDataParallel) {
  v1::AuditSpec spec = SmallMembershipSpec();
  spec.mutable_resources()->set_gpus_per_task(2);
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("resources.gpus_per_task: more than 1 trains each model data-parallel"));
  spec.mutable_membership()->mutable_model()->set_architecture("cnn");
  spec.mutable_membership()->mutable_model()->clear_hidden();
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  spec.mutable_resources()->set_gpus_per_task(9);
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("resources.gpus_per_task: must be in [0, 8]"));
  spec.mutable_resources()->set_gpus_per_task(1);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
}

TEST(SpecValidatorTest, NumericsArePortableByDefaultAndANativeClassNeedsNativeMode) {
  v1::AuditSpec spec = SmallMembershipSpec();
  ApplyDefaults(&spec);
  EXPECT_EQ(spec.resources().numerics(), "portable");
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  spec.mutable_resources()->set_numerics("native");
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  spec.mutable_resources()->set_numeric_class("native/GenuineIntel-6-143/DNNL_MAX_CPU_ISA=AVX2");
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec)) << "a team may name the class it wants";

  spec.mutable_resources()->set_numerics("fastest");
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("resources.numerics: must be portable or native (got \"fastest\")"));
  spec.mutable_resources()->set_numerics("portable");
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("resources.numeric_class: names a native class"));
  spec.mutable_resources()->set_numerics("native");
  spec.mutable_resources()->set_numeric_class("native/<x>");
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("resources.numeric_class: may hold only"));
}

TEST(SpecValidatorTest, NumericEnvironmentsAreTheCoordinatorsRecordNotASpecs) {
  v1::AuditSpec spec = SmallMembershipSpec();
  spec.mutable_resources()->add_numeric_environments("cpu; LibTorch 1.13.0");
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("resources.numeric_environments: is recorded by the coordinator"));
}

// The reference code's variant is accepted when named, never added by default.
TEST(SpecValidatorTest, ReferenceAttackVariantsAreNamedNotDefault) {
  v1::AuditSpec spec = SmallMembershipSpec(6);
  EXPECT_EQ(spec.membership().attacks_size(), 6);
  for (const std::string& a : spec.membership().attacks()) {
    EXPECT_NE(a, "lira_offline_two_sided");
  }
  spec.mutable_membership()->add_attacks("lira_offline_two_sided");
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  spec.mutable_membership()->add_attacks("lira_offline_three_sided");
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("membership.attacks[7]: unknown attack \"lira_offline_three_sided\""));
}

// Per-example-variance LiRA needs two references on each side of every
// example: N/2 - 1 >= 2. With fewer models the defaults leave it out, and a
// spec that names it is refused, naming the attack and the minimum.
TEST(SpecValidatorTest, AttacksUndefinedAtThisManyModelsAreLeftOutOrRefused) {
  v1::AuditSpec four = SmallMembershipSpec(4);
  EXPECT_THAT(four.membership().attacks(),
              ::testing::ElementsAre("lira_online_fixed_variance", "lira_offline_fixed_variance",
                                     "rmia", "loss"));
  MEMAUDIT_EXPECT_OK(ValidateSpec(four));
  four.mutable_membership()->add_attacks("lira_online");
  EXPECT_THAT(std::string(ValidateSpec(four).message()),
              HasSubstr("membership.attacks[4]: \"lira_online\" fits a per-example variance"));
  EXPECT_THAT(std::string(ValidateSpec(four).message()),
              HasSubstr("reference_models must be >= 6 (got 4)"));
  v1::AuditSpec six = SmallMembershipSpec(6);
  six.mutable_membership()->add_attacks("lira_offline_two_sided");
  MEMAUDIT_EXPECT_OK(ValidateSpec(six));
}

TEST(SpecValidatorTest, ModelsPerTaskIsBounded) {
  v1::AuditSpec spec = SmallMembershipSpec();
  spec.mutable_resources()->set_models_per_task(64);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  spec.mutable_resources()->set_models_per_task(65);
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("resources.models_per_task: must be in [1, 64] (got 65)"));
  // Other kinds train one model per task.
  v1::AuditSpec exposure;
  exposure.set_name("test");
  exposure.mutable_exposure();
  ApplyDefaults(&exposure);
  EXPECT_EQ(exposure.resources().models_per_task(), 0u) << "left unset outside membership";
  exposure.mutable_resources()->set_models_per_task(2);
  EXPECT_THAT(std::string(ValidateSpec(exposure).message()),
              HasSubstr("resources.models_per_task: only membership audits pack models"));
}

TEST(SpecValidatorTest, MissingKindIsInvalid) {
  v1::AuditSpec spec;
  spec.set_name("test");
  ApplyDefaults(&spec);
  absl::Status status = ValidateSpec(spec);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(status.message()), HasSubstr("kind: set exactly one of"));
}

TEST(SpecValidatorTest, EveryKindInTheApiIsRunnable) {
  // An unset spec of each kind is checked field by field, not refused whole.
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.mutable_unlearning();
  EXPECT_TRUE(KindImplemented(spec));
  EXPECT_THAT(ValidateSpec(spec), StatusIs(absl::StatusCode::kInvalidArgument));
  spec.mutable_relational();
  EXPECT_TRUE(KindImplemented(spec));
}

TEST(SpecValidatorTest, ExposureDefaultsMakeARunnableSpec) {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.mutable_exposure();
  ApplyDefaults(&spec);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  const v1::ExposureAudit& e = spec.exposure();
  EXPECT_EQ(e.corpus().name(), "fortunes");
  EXPECT_EQ(e.corpus().max_chars(), 1000000u);
  EXPECT_EQ(e.model().architecture(), "lstm");
  EXPECT_EQ(e.training().optimizer(), "adam");
  EXPECT_EQ(e.canary().digits(), 6u);
  EXPECT_EQ(e.repeats_size(), 4);
  EXPECT_EQ(e.controls(), 2u);
  EXPECT_EQ(e.estimator(), "all");
  EXPECT_EQ(e.reference_samples(), 1000u);
  EXPECT_TRUE(e.extraction());
  EXPECT_NEAR(ExposureLog2Space(e), 6 * std::log2(10.0), 1e-12);
}

TEST(SpecValidatorTest, ExposureEveryBadFieldIsNamedWithItsRule) {
  v1::AuditSpec spec;
  spec.set_name("test");
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->mutable_corpus()->set_name("wikipedia");
  e->mutable_corpus()->set_path("/tmp/x");
  e->mutable_corpus()->set_text("inline");
  e->mutable_model()->set_architecture("mamba");
  e->mutable_model()->set_layers(9);
  e->mutable_model()->set_dropout(1.0);
  e->mutable_training()->set_optimizer("lion");
  e->mutable_training()->set_learning_rate(-1);
  e->mutable_training()->set_window(1);
  e->mutable_canary()->set_prefix("two\nlines");
  e->mutable_canary()->set_digits(3);
  e->mutable_canary()->add_alphabets("ab");
  e->mutable_canary()->add_alphabets("xx");
  for (uint32_t r : {1, 4, 0}) e->add_repeats(r);
  e->set_controls(5000);
  e->set_estimator("magic");
  ApplyDefaults(&spec);
  absl::Status status = ValidateSpec(spec);
  ASSERT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument));
  const std::string message(status.message());
  for (const char* field :
       {"exposure.corpus.name: must be \"fortunes\"", "exposure.corpus.text: set at most one",
        "exposure.model.architecture", "exposure.model.layers: must be in [1, 8] (got 9)",
        "exposure.model.dropout", "exposure.training.optimizer",
        "exposure.training.learning_rate: must be > 0", "exposure.training.window",
        "exposure.canary.prefix", "exposure.canary.digits: set canary.digits or canary.alphabets",
        "exposure.canary.alphabets[1]", "exposure.repeats[2]: must be in [1, 100000] (got 0)",
        "exposure.controls: must be in [0, 1000]", "exposure.estimator: must be one of"}) {
    EXPECT_THAT(message, HasSubstr(field));
  }
  // The alphabets' space (2 x 2) cannot hold 5003 distinct canaries either.
  EXPECT_THAT(message, HasSubstr("exposure.controls: the 5003 canaries"));
  EXPECT_EQ(FindProblems(spec).size(), 15u);

  v1::AuditSpec exact;

  exact.set_name("test");
  exact.mutable_exposure()->set_estimator("exact");
  exact.mutable_exposure()->set_reference_samples(10);
  ApplyDefaults(&exact);
  EXPECT_THAT(std::string(ValidateSpec(exact).message()),
              HasSubstr("exposure.reference_samples: must be unset"));
  exact.mutable_exposure()->set_estimator("sampled");
  EXPECT_THAT(std::string(ValidateSpec(exact).message()),
              HasSubstr("exposure.reference_samples: must be in [16, 1000000] (got 10)"));
  exact.mutable_exposure()->mutable_canary()->set_digits(19);
  EXPECT_THAT(std::string(ValidateSpec(exact).message()), HasSubstr("exposure.canary.digits"));
}

TEST(SpecValidatorTest, ExposureEvaluationPointsAreBoundedAndExclusive) {
  v1::AuditSpec spec;
  spec.set_name("test");
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->mutable_corpus()->set_text(std::string(6400, 'a'));  // 100 windows of 64
  e->mutable_training()->set_epochs(10);
  ApplyDefaults(&spec);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec)) << "neither: the final model only";
  e->set_eval_every_epoch(true);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  e->set_eval_every_steps(5);
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("exposure.eval_every_epoch: set at most one of eval_every_steps and "
                        "eval_every_epoch"));
  e->set_eval_every_epoch(false);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  e->set_eval_every_steps(0);
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("exposure.eval_every_steps: must be > 0"));
  // The tiny corpus plus 85 canary lines of 28 characters: 8780 characters,
  // 137 windows, 5 steps per epoch, 50 steps; k = 1 gives 50 points.
  e->set_eval_every_steps(1);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  e->mutable_training()->set_epochs(13);  // 65 steps: 65 points
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("exposure.eval_every_steps: gives 65 evaluation points over the 65 steps "
                        "of \"base\"; at most 64: use k >= 2"));
  e->clear_eval_every_steps();
  e->set_eval_every_epoch(true);
  e->mutable_training()->set_epochs(65);
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("exposure.eval_every_epoch: gives one evaluation point per epoch, at most "
                        "64 (\"base\" trains 65 epochs)"));
}

TEST(SpecValidatorTest, ExposureSweepDefaultsNameEachVariant) {
  v1::AuditSpec spec;
  spec.set_name("test");
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->add_sweep();
  v1::ExposureVariant* wide = e->add_sweep();
  wide->set_batch_size(8);
  wide->set_units(64);
  e->add_sweep()->mutable_dp_sgd()->set_noise_multiplier(1.5);
  e->mutable_sweep(2)->mutable_dp_sgd()->set_clip_norm(2);
  e->set_baseline(true);
  e->set_reference_models(2);
  ApplyDefaults(&spec);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  EXPECT_EQ(e->sweep(0).name(), "base");
  EXPECT_EQ(e->sweep(1).name(), "batch=8 units=64");
  EXPECT_EQ(e->sweep(2).name(), "dp_sigma=1.5 dp_clip=2");
  EXPECT_DOUBLE_EQ(e->sweep(2).dp_sgd().delta(), 1e-5);
}

TEST(SpecValidatorTest, ExposureSweepEveryBadFieldIsNamedWithItsRule) {
  v1::AuditSpec spec;
  spec.set_name("test");
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->add_sweep()->set_batch_size(0);
  e->mutable_sweep(0)->set_units(5000);
  e->mutable_sweep(0)->set_dropout(1);
  e->add_sweep()->set_name("a,b");
  e->add_sweep()->set_name("same");
  e->add_sweep()->set_name("same");
  v1::DpSgdSpec* dp = e->mutable_sweep(3)->mutable_dp_sgd();
  dp->set_clip_norm(-1);
  dp->set_delta(2);
  e->set_reference_models(65);
  ApplyDefaults(&spec);
  const std::string message(ValidateSpec(spec).message());
  for (const char* field :
       {"exposure.sweep[0].batch_size: must be in [1, 65536] (got 0)",
        "exposure.sweep[0].units: must be in [1, 4096] (got 5000)", "exposure.sweep[0].dropout",
        "exposure.sweep[1].name: must be 1 to 64 of letters", "exposure.sweep[3].name: \"same\"",
        "exposure.sweep[3].dp_sgd.noise_multiplier: must be > 0",
        "exposure.sweep[3].dp_sgd.clip_norm: must be > 0", "exposure.sweep[3].dp_sgd.delta",
        "exposure.reference_models: must be in [0, 64] (got 65)"}) {
    EXPECT_THAT(message, HasSubstr(field));
  }
  EXPECT_EQ(FindProblems(spec).size(), 9u);

  v1::AuditSpec exact;

  exact.set_name("test");
  exact.mutable_exposure()->set_estimator("exact");
  exact.mutable_exposure()->set_reference_models(2);
  ApplyDefaults(&exact);
  EXPECT_THAT(std::string(ValidateSpec(exact).message()),
              HasSubstr("exposure.reference_models: needs the reference sample S"));
  v1::AuditSpec many;
  many.set_name("test");
  for (int i = 0; i < 17; ++i) many.mutable_exposure()->add_sweep()->set_units(8 + i);
  ApplyDefaults(&many);
  EXPECT_THAT(std::string(ValidateSpec(many).message()),
              HasSubstr("exposure.sweep: must list at most 16 variants (got 17)"));
}

// Hostile sizes (issue 12): each is one problem, named, found without
// computing anything from the oversized value, with a short message.

TEST(SpecLimitsTest, NameIsBoundedAndPrintable) {
  v1::AuditSpec spec = SmallMembershipSpec();
  spec.set_name(std::string(50'000'000, 'n'));
  const absl::Status status = ValidateSpec(spec);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("name: must be at most 128 bytes (got 50000000: ")));
  EXPECT_LT(status.message().size(), 300u);
  spec.set_name("two\nlines");
  EXPECT_THAT(ValidateSpec(spec), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("name: must not contain control characters")));
  spec.set_name("");  // the API cannot tell "left out" from empty
  EXPECT_THAT(ValidateSpec(spec),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("name: must not be empty")));
  spec.set_name(std::string(128, 'n'));
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
}

TEST(SpecLimitsTest, FiveMillionFprPointsAreOneProblem) {
  v1::AuditSpec spec = SmallMembershipSpec();
  spec.mutable_membership()->mutable_fpr_points()->Resize(5'000'000, 0.5);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<SpecProblem> problems = FindProblems(spec);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "membership.fpr_points");
  EXPECT_EQ(problems[0].rule, "must list 0 to 64 entries (got 5000000)");
}

TEST(SpecLimitsTest, LongListsAreOneProblemEach) {
  v1::AuditSpec spec = SmallMembershipSpec();
  for (int i = 0; i < 100000; ++i) spec.mutable_membership()->add_attacks("magic");
  for (int i = 0; i < 100000; ++i) spec.mutable_membership()->mutable_model()->add_hidden(0);
  const std::vector<SpecProblem> problems = FindProblems(spec);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].field, "membership.model.hidden");
  EXPECT_EQ(problems[1].field, "membership.attacks");
}

TEST(SpecLimitsTest, EchoedValuesAreQuotedByAPrefix) {
  v1::AuditSpec spec = SmallMembershipSpec();
  spec.mutable_membership()->mutable_dataset()->set_name(std::string(1'000'000, 'x'));
  const absl::Status status = ValidateSpec(spec);
  EXPECT_THAT(status,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat("membership.dataset.name: must be at most 128 bytes "
                                              "(got 1000000: \"",
                                              std::string(64, 'x'), "\"\u2026 (1000000 bytes))"))));
  EXPECT_LT(status.message().size(), 300u);
}

TEST(SpecLimitsTest, ManyProblemsFitGrpcMetadata) {
  v1::AuditSpec spec;
  spec.set_name("many");
  v1::UnlearningAudit* u = spec.mutable_unlearning();
  for (int i = 0; i < 16; ++i) {
    u->add_features(std::string(1000, '\xc3'));
    u->add_attack_classifiers(absl::StrCat("svm", i));
    u->add_defenses(absl::StrCat("top_", 100 + i));
  }
  ApplyDefaults(&spec);
  ASSERT_EQ(FindProblems(spec).size(), 48u);
  const absl::Status status = ValidateSpec(spec);
  EXPECT_LE(ErrorWireBytes(status.message()), kMaxErrorWireBytes);
  EXPECT_THAT(std::string(status.message()), HasSubstr("unlearning.features[0]: unknown"));
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("more problem(s): `memaudit validate SPEC` lists them all"));
}

TEST(SpecLimitsTest, BoundErrorMessageCutsAtACharacter) {
  EXPECT_EQ(BoundErrorMessage("short"), "short");
  const std::string cut = BoundErrorMessage(std::string(10000, 'a'));
  EXPECT_LE(ErrorWireBytes(cut), kMaxErrorWireBytes);
  EXPECT_THAT(cut, HasSubstr("[cut: 10000 bytes]"));
  std::string wide;
  for (int i = 0; i < 5000; ++i) wide += "\u00e9";
  const std::string cut_wide = BoundErrorMessage(wide);
  EXPECT_LE(ErrorWireBytes(cut_wide), kMaxErrorWireBytes);
  const std::string kept = cut_wide.substr(0, cut_wide.find(" [cut"));
  EXPECT_EQ(kept.size() % 2, 0u) << "whole two-byte characters only";
}

TEST(SpecLimitsTest, NumbersPastTheirUseAreRefused) {
  v1::AuditSpec spec = SmallMembershipSpec();
  spec.mutable_membership()->mutable_training()->set_learning_rate(1e308);
  spec.mutable_membership()->mutable_training()->set_weight_decay(1e308);
  const std::string message(ValidateSpec(spec).message());
  EXPECT_THAT(message, HasSubstr("membership.training.learning_rate: must be in (0, 100]"));
  EXPECT_THAT(message, HasSubstr("membership.training.weight_decay: must be in [0, 100]"));

  v1::AuditSpec exposure;
  exposure.set_name("x");
  exposure.mutable_exposure()->set_rank_query_budget(2'000'000'000'000);
  exposure.mutable_exposure()->set_extraction_query_budget(2'000'000'000'000);
  ApplyDefaults(&exposure);
  EXPECT_THAT(std::string(ValidateSpec(exposure).message()),
              HasSubstr("exposure.rank_query_budget: must be in [1, 1000000000] (got "
                        "2000000000000)"));
  EXPECT_THAT(std::string(ValidateSpec(exposure).message()),
              HasSubstr("exposure.extraction_query_budget: must be in [1, 1000000000]"));
}

TEST(SpecLimitsTest, OversizedModelAndCostAreRefused) {
  v1::AuditSpec spec = SmallMembershipSpec();
  v1::ModelSpec* model = spec.mutable_membership()->mutable_model();
  model->clear_hidden();
  for (int i = 0; i < 8; ++i) model->add_hidden(65536);
  EXPECT_THAT(
      ValidateSpec(spec),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("membership.model.hidden: gives a model of 3.01173e+10 parameters")));
  EXPECT_EQ(FindProblems(spec).size(), 1u);

  v1::AuditSpec costly = SmallMembershipSpec(4096);
  v1::MembershipAudit* m = costly.mutable_membership();
  m->mutable_dataset()->set_pool_size(50000);
  m->mutable_model()->clear_hidden();
  m->mutable_model()->add_hidden(4096);
  m->mutable_model()->add_hidden(4096);
  m->mutable_training()->set_epochs(10000);
  EXPECT_THAT(ValidateSpec(costly),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("membership.cost: the audit trains 4096 models for")));
  // A tenth of the epochs of a thousandth of the models is a real audit.
  m->set_reference_models(4);
  m->clear_attacks();  // the defaults for 4096 models: two need 6
  m->add_attacks("loss");
  m->mutable_training()->set_epochs(1000);
  MEMAUDIT_EXPECT_OK(ValidateSpec(costly));
}

TEST(SpecLimitsTest, UnlearningPoolSizeIsCheckedBeforeThePoolsAreBuilt) {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.mutable_unlearning()->mutable_dataset()->set_pool_size(1'000'000'000);
  ApplyDefaults(&spec);
  const auto start = std::chrono::steady_clock::now();
  const std::string message(ValidateSpec(spec).message());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  EXPECT_THAT(message, HasSubstr("unlearning.dataset.pool_size: must be in [20, 60000], the "
                                 "dataset's rows (got "
                                 "1000000000)"));
  EXPECT_THAT(message, Not(HasSubstr("samples")));
}

TEST(SpecLimitsTest, ForgettingAndRelationalBounds) {
  v1::AuditSpec forgetting;
  forgetting.set_name("test");
  forgetting.mutable_forgetting()->mutable_canaries()->mutable_corpus()->set_max_chars(
      1'000'000'000'000'000'000);
  ApplyDefaults(&forgetting);
  EXPECT_THAT(std::string(ValidateSpec(forgetting).message()),
              HasSubstr("forgetting.canaries.corpus.max_chars: must be <= 1000000000"));

  v1::AuditSpec relational;

  relational.set_name("test");
  relational.mutable_relational()->mutable_linear()->set_tolerance(1e18);
  ApplyDefaults(&relational);
  EXPECT_THAT(std::string(ValidateSpec(relational).message()),
              HasSubstr("relational.linear.tolerance: must be in (0, 100] (got 1e+18)"));

  v1::AuditSpec big_linear;

  big_linear.set_name("test");
  v1::LinearRelationalSpec* l = big_linear.mutable_relational()->mutable_linear();
  l->set_samples(2000);
  l->add_key_dims(1'000'000);
  ApplyDefaults(&big_linear);
  EXPECT_THAT(std::string(ValidateSpec(big_linear).message()),
              HasSubstr("relational.linear.key_dims: gives a model of"));
}

TEST(SpecLimitsTest, ExposureStringsAndListsAreBoundedFirst) {
  v1::AuditSpec spec;
  spec.set_name("x");
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->mutable_corpus()->set_text(std::string(kMaxTextBytes + 1, 'a'));
  for (int i = 0; i < 1000; ++i) e->mutable_canary()->add_alphabets("a");
  e->mutable_canary()->set_prefix(std::string(5000, 'p'));
  ApplyDefaults(&spec);
  const std::vector<SpecProblem> problems = FindProblems(spec);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].field, "exposure.corpus.text");
  EXPECT_EQ(problems[1].field, "exposure.canary.prefix");
  EXPECT_EQ(problems[2].field, "exposure.canary.alphabets");
}

}  // namespace
}  // namespace memaudit::spec
