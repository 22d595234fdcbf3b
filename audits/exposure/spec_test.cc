// The exposure audit's sweep axes (batch, units, dropout, epochs, learning
// rate, DP-SGD): defaults, field-named validation and exact step counts per
// variant.
#include "audits/exposure/spec.h"

#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "audits/exposure/signals.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/planner.h"
#include "spec/spec_rules.h"
#include "spec/spec_validator.h"
#include "spec/test_specs.h"

namespace memaudit::spec {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ExposureSpecTest, EpochsAndLearningRateNameAndResolveTheirVariants) {
  v1::AuditSpec spec = SmallExposureSpec(/*with_defaults=*/false);
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->add_sweep();
  e->add_sweep()->set_epochs(7);
  e->add_sweep()->set_learning_rate(0.01);
  v1::ExposureVariant* both = e->add_sweep();
  both->set_batch_size(8);
  both->set_epochs(2);
  both->set_learning_rate(1e-4);
  ApplyDefaults(&spec);
  MEMAUDIT_ASSERT_OK(ValidateSpec(spec));
  EXPECT_EQ(e->sweep(0).name(), "base");
  EXPECT_EQ(e->sweep(1).name(), "epochs=7");
  EXPECT_EQ(e->sweep(2).name(), "lr=0.01");
  EXPECT_EQ(e->sweep(3).name(), "batch=8 epochs=2 lr=0.0001");
  // Unset axes keep the base recipe's values.
  const exposure::Variant base = exposure::ResolveVariant(*e, 0);
  EXPECT_EQ(base.epochs, 3u);
  EXPECT_DOUBLE_EQ(base.learning_rate, 0.003);
  const exposure::Variant longer = exposure::ResolveVariant(*e, 1);
  EXPECT_EQ(longer.epochs, 7u);
  EXPECT_DOUBLE_EQ(longer.learning_rate, 0.003);
  EXPECT_EQ(longer.batch_size, 4u);
  const exposure::Variant faster = exposure::ResolveVariant(*e, 2);
  EXPECT_EQ(faster.epochs, 3u);
  EXPECT_DOUBLE_EQ(faster.learning_rate, 0.01);
  const exposure::Variant mixed = exposure::ResolveVariant(*e, 3);
  EXPECT_EQ(mixed.batch_size, 8u);
  EXPECT_EQ(mixed.epochs, 2u);
  EXPECT_DOUBLE_EQ(mixed.learning_rate, 1e-4);
  // Two entries whose defaults would give one name are told apart by name.
  v1::AuditSpec twice = SmallExposureSpec(/*with_defaults=*/false);
  twice.mutable_exposure()->add_sweep()->set_epochs(5);
  twice.mutable_exposure()->add_sweep()->set_epochs(5);
  ApplyDefaults(&twice);
  EXPECT_THAT(std::string(ValidateSpec(twice).message()),
              HasSubstr("exposure.sweep[1].name: \"epochs=5\" names two variants"));
}

TEST(ExposureSpecTest, BadEpochsAndLearningRateAreNamedWithTheirRule) {
  v1::AuditSpec spec = SmallExposureSpec(/*with_defaults=*/false);
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->add_sweep()->set_epochs(0);
  e->mutable_sweep(0)->set_learning_rate(0);
  e->add_sweep()->set_epochs(10001);
  e->mutable_sweep(1)->set_learning_rate(-0.5);
  e->add_sweep()->set_learning_rate(std::numeric_limits<double>::infinity());
  // Named explicitly: default names of bad values would be checked too.
  for (int i = 0; i < 3; ++i) e->mutable_sweep(i)->set_name(absl::StrCat("v", i));
  ApplyDefaults(&spec);
  const absl::Status status = ValidateSpec(spec);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument));
  const std::string message(status.message());
  for (const char* problem : {"exposure.sweep[0].epochs: must be in [1, 10000] (got 0)",
                              "exposure.sweep[0].learning_rate: must be > 0 (got 0)",
                              "exposure.sweep[1].epochs: must be in [1, 10000] (got 10001)",
                              "exposure.sweep[1].learning_rate: must be > 0 (got -0.5)",
                              "exposure.sweep[2].learning_rate: must be > 0 (got inf)"}) {
    EXPECT_THAT(message, HasSubstr(problem));
  }
  EXPECT_EQ(FindProblems(spec).size(), 5u);
  // The planner refuses the spec with the same message.
  EXPECT_THAT(PlanAudit(spec), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ExposureSpecTest, StepsFollowEachVariantsEpochsAndBatch) {
  v1::AuditSpec spec = SmallExposureSpec(/*with_defaults=*/false);
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->add_sweep();                          // batch 4, 3 epochs
  e->add_sweep()->set_epochs(7);           // batch 4, 7 epochs
  e->add_sweep()->set_learning_rate(0.1);  // steps as the base
  v1::ExposureVariant* both = e->add_sweep();
  both->set_batch_size(8);
  both->set_epochs(5);
  e->set_baseline(true);
  ApplyDefaults(&spec);
  // With canaries: (180 - 1) / 16 = 11 windows: 3 steps per epoch at batch 4,
  // 2 at batch 8. Without: (100 - 1) / 16 = 6 windows: 2 and 1.
  EXPECT_EQ(ExposureTaskSteps(*e, 0, true), 9u);
  EXPECT_EQ(ExposureTaskSteps(*e, 1, true), 21u);
  EXPECT_EQ(ExposureTaskSteps(*e, 2, true), 9u);
  EXPECT_EQ(ExposureTaskSteps(*e, 3, true), 10u);
  EXPECT_EQ(ExposureTaskSteps(*e, 1, false), 14u);
  EXPECT_EQ(ExposureTaskSteps(*e, 3, false), 5u);
  EXPECT_EQ(ExposureSteps(*e), 9u) << "the base recipe";
  auto plan = PlanAudit(spec);
  MEMAUDIT_ASSERT_OK(plan);
  std::vector<std::string> tasks;
  for (const PlannedTask& t : plan->tasks) {
    tasks.push_back(absl::StrCat(t.role, "/", t.index, ":", t.steps_total));
  }
  EXPECT_THAT(tasks, ElementsAre("canary_model/0:9", "canary_model/1:21", "canary_model/2:9",
                                 "canary_model/3:10", "baseline_model/0:6", "baseline_model/1:14",
                                 "baseline_model/2:6", "baseline_model/3:5"));
}

TEST(ExposureSpecTest, ExactCalibrationDefaultsOnWhereRIsSmallAndIsRefusedWhereNot) {
  v1::AuditSpec spec = SmallExposureSpec(/*with_defaults=*/false);  // |R| = 1000
  ApplyDefaults(&spec);
  EXPECT_FALSE(spec.exposure().exact_calibration()) << "no reference models, nothing to calibrate";
  v1::AuditSpec calibrated = SmallExposureSpec(/*with_defaults=*/false);
  calibrated.mutable_exposure()->set_reference_models(2);
  ApplyDefaults(&calibrated);
  EXPECT_TRUE(calibrated.exposure().exact_calibration());
  MEMAUDIT_EXPECT_OK(ValidateSpec(calibrated));
  EXPECT_TRUE(exposure::ExactCalibration(calibrated.exposure()));
  // 9 digits: 10^9 values per model is too many; off by default...
  v1::AuditSpec wide = SmallExposureSpec(/*with_defaults=*/false);
  wide.mutable_exposure()->mutable_canary()->set_digits(9);
  wide.mutable_exposure()->set_reference_models(2);
  ApplyDefaults(&wide);
  EXPECT_FALSE(wide.exposure().exact_calibration());
  MEMAUDIT_EXPECT_OK(ValidateSpec(wide));
  // ...and refused when asked for, as without reference models.
  wide.mutable_exposure()->set_exact_calibration(true);
  EXPECT_THAT(std::string(ValidateSpec(wide).message()),
              HasSubstr("exposure.exact_calibration: every canary and reference model sends |R| "
                        "values: needs |R| <= 1048576 and |R| x 3 models <= 33554432 (|R| = "
                        "1000000000)"));
  v1::AuditSpec none = SmallExposureSpec(/*with_defaults=*/false);
  none.mutable_exposure()->set_exact_calibration(true);
  ApplyDefaults(&none);
  EXPECT_THAT(std::string(ValidateSpec(none).message()),
              HasSubstr("exposure.exact_calibration: needs reference_models > 0"));
  // 6 digits fit with up to 32 models in all: 2 variants x (1 + 15) do, x (1 + 16) not.
  v1::AuditSpec many = SmallExposureSpec(/*with_defaults=*/false);
  many.mutable_exposure()->mutable_canary()->set_digits(6);
  many.mutable_exposure()->add_sweep();
  many.mutable_exposure()->add_sweep()->set_units(8);
  many.mutable_exposure()->set_reference_models(15);
  ApplyDefaults(&many);
  EXPECT_TRUE(many.exposure().exact_calibration());
  many.mutable_exposure()->set_reference_models(16);
  EXPECT_THAT(std::string(ValidateSpec(many).message()),
              HasSubstr("|R| x 34 models <= 33554432 (|R| = 1000000)"));
}

// replicates: k canary models per variant, planned after the canary
// models; out of [1, 16] refused with the field named; counted in the cost.
TEST(ExposureSpecTest, ReplicatesPlanCanaryModelsAndAreBoundedAndCosted) {
  v1::AuditSpec spec = SmallExposureSpec(/*with_defaults=*/false);
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->add_sweep();
  e->add_sweep()->set_epochs(7);
  e->set_baseline(true);
  e->set_replicates(3);
  ApplyDefaults(&spec);
  MEMAUDIT_ASSERT_OK(ValidateSpec(spec));
  auto plan = PlanAudit(spec);
  MEMAUDIT_ASSERT_OK(plan);
  std::vector<std::string> tasks;
  for (const PlannedTask& t : plan->tasks) {
    tasks.push_back(absl::StrCat(t.role, "/", t.index, ":", t.steps_total));
  }
  // Replicate r of variant v: index v * (k - 1) + r - 1, the variant's steps.
  EXPECT_THAT(tasks,
              ElementsAre("canary_model/0:9", "canary_model/1:21", "canary_replicate/0:9",
                          "canary_replicate/1:9", "canary_replicate/2:21", "canary_replicate/3:21",
                          "baseline_model/0:6", "baseline_model/1:14"));

  // Unset is one replicate: the plan and the defaulted spec are today's.
  v1::AuditSpec single = SmallExposureSpec();
  EXPECT_FALSE(single.exposure().has_replicates());
  EXPECT_EQ(exposure::Replicates(single.exposure()), 1u);
  EXPECT_EQ(PlanAudit(single)->tasks.size(), 1u);

  for (uint32_t bad : {0u, 17u}) {
    v1::AuditSpec refused = SmallExposureSpec();
    refused.mutable_exposure()->set_replicates(bad);
    EXPECT_THAT(ValidateSpec(refused),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat("exposure.replicates: must be in [1, 16] (got ",
                                                bad, ")"))));
  }
  v1::AuditSpec most = SmallExposureSpec();
  most.mutable_exposure()->set_replicates(16);
  MEMAUDIT_EXPECT_OK(ValidateSpec(most));

  // A recipe whose one canary model fits the cost limit but 16 do not.
  v1::AuditSpec costly = SmallExposureSpec(/*with_defaults=*/false);
  costly.mutable_exposure()->mutable_corpus()->clear_text();
  costly.mutable_exposure()->mutable_corpus()->set_max_chars(1'000'000'000);
  costly.mutable_exposure()->mutable_model()->set_units(4096);
  costly.mutable_exposure()->mutable_training()->set_batch_size(64);
  costly.mutable_exposure()->mutable_training()->set_window(64);
  costly.mutable_exposure()->mutable_training()->set_epochs(10);
  ApplyDefaults(&costly);
  MEMAUDIT_EXPECT_OK(ValidateSpec(costly));
  costly.mutable_exposure()->set_replicates(16);
  EXPECT_THAT(ValidateSpec(costly),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("exposure.cost:"), HasSubstr("replicates"))));
}

// A team's TorchScript LM: its path is required (and refused for lstm/gru),
// its sizes are its own, so neither model dropout nor a sweep may set them.
TEST(ExposureSpecTest, TorchScriptModelNeedsItsPathAndTakesNoSizes) {
  v1::AuditSpec spec = SmallExposureSpec(/*with_defaults=*/false);
  v1::LanguageModelSpec* m = spec.mutable_exposure()->mutable_model();
  m->set_architecture("torchscript");
  ApplyDefaults(&spec);
  m->set_layers(99);  // lstm/gru sizes: ignored for torchscript, not refused
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("exposure.model.torchscript_path: required for \"torchscript\""));
  m->set_torchscript_path("/models/char_gru.pt");
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  m->set_dropout(0.1);
  spec.mutable_exposure()->add_sweep()->set_units(64);
  spec.mutable_exposure()->add_sweep()->set_dropout(0.2);
  const std::string message(ValidateSpec(spec).message());
  EXPECT_THAT(message, HasSubstr("exposure.model.dropout: must be 0 for \"torchscript\""));
  EXPECT_THAT(message, HasSubstr("exposure.sweep[0].units: cannot vary with model.architecture "
                                 "\"torchscript\""));
  EXPECT_THAT(message, HasSubstr("exposure.sweep[1].dropout: cannot vary"));
  v1::AuditSpec lstm = SmallExposureSpec();
  lstm.mutable_exposure()->mutable_model()->set_torchscript_path("/models/char_gru.pt");
  EXPECT_THAT(std::string(ValidateSpec(lstm).message()),
              HasSubstr("exposure.model.torchscript_path: applies to architecture "
                        "\"torchscript\" only"));
}

// extractable: defaults, bounds, distinct insertion counts, lines enough in
// an inline corpus, and the steps of a text less the held-out lines plus
// the sequences inserted back.
TEST(ExposureSpecTest, ExtractableDefaultsBoundsAndStepsOfTheHeldOutText) {
  v1::AuditSpec spec = SmallExposureSpec(/*with_defaults=*/false);
  std::string text;
  for (int i = 0; i < 40; ++i) text += absl::StrCat("line ", 10 + i, " abcdefghijkl\n");  // 21
  spec.mutable_exposure()->mutable_corpus()->set_text(text);
  spec.mutable_exposure()->mutable_extractable();
  ApplyDefaults(&spec);
  const v1::ExtractableSpec& x = spec.exposure().extractable();
  EXPECT_EQ(x.prefix_chars(), 32u);
  EXPECT_EQ(x.suffix_chars(), 32u);
  EXPECT_THAT(x.duplicates(), ElementsAre(1, 2, 4, 8, 16, 32, 64));
  EXPECT_EQ(x.sequences(), 32u);
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("exposure.extractable.sequences: the corpus has 0 distinct lines of at "
                        "least 64 characters; 256 are needed"));
  v1::ExtractableSpec* m = spec.mutable_exposure()->mutable_extractable();
  m->set_prefix_chars(8);
  m->set_suffix_chars(8);
  m->clear_duplicates();
  m->add_duplicates(1);
  m->add_duplicates(4);
  m->set_sequences(2);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  // 40 lines of 21 characters, 6 held out: 714; canaries 10 x 8 = 80; the
  // sequences inserted back (1 + 4) x 2 x 17 = 170: (964 - 1) / 16 = 60
  // windows, 15 steps an epoch at batch 4. Without insertions: 44 windows.
  EXPECT_EQ(ExposureTaskSteps(spec.exposure(), 0, true), 45u);
  EXPECT_EQ(ExposureTaskSteps(spec.exposure(), 0, false), 33u);
  m->set_prefix_chars(0);
  m->add_duplicates(4);
  const std::string message(ValidateSpec(spec).message());
  EXPECT_THAT(message, HasSubstr("exposure.extractable.prefix_chars: must be in [1, 256] (got 0)"));
  EXPECT_THAT(message, HasSubstr("exposure.extractable.duplicates[2]: 4 is listed twice"));
  v1::AuditSpec target = spec;
  target.mutable_exposure()->mutable_target()->set_torchscript_path("/data/lm.pt");
  EXPECT_THAT(std::string(ValidateSpec(target).message()),
              HasSubstr("exposure.extractable: trains a model: not with a target"));
}

// The transformer: 4 heads by default, heads dividing its width (the
// embedding), and heads refused for every other architecture.
TEST(ExposureSpecTest, TransformerHeadsDefaultDivideTheWidthAndApplyToItOnly) {
  v1::AuditSpec spec = SmallExposureSpec(/*with_defaults=*/false);
  v1::LanguageModelSpec* m = spec.mutable_exposure()->mutable_model();
  m->set_architecture("transformer");
  ApplyDefaults(&spec);
  EXPECT_EQ(m->heads(), 4u);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  m->set_heads(3);  // the default width is 32
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("exposure.model.heads: must divide embedding, the transformer's width "
                        "(got 3 heads for width 32)"));
  m->set_heads(65);
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              HasSubstr("exposure.model.heads: must be in [1, 64] (got 65)"));
  v1::AuditSpec lstm = SmallExposureSpec();
  EXPECT_EQ(lstm.exposure().model().heads(), 0u);
  lstm.mutable_exposure()->mutable_model()->set_heads(4);
  EXPECT_THAT(std::string(ValidateSpec(lstm).message()),
              HasSubstr("exposure.model.heads: applies to architecture \"transformer\" only"));
}

// A tokenizer: unset stays unset (characters; the content key of every
// spec without one is unchanged); a trained SentencePiece model gets
// vocab_size 1000 and "bpe"; each field is refused by name where it does
// not apply or is out of range; a model file's hash must be recorded.
TEST(ExposureSpecTest, TokenizerDefaultsAndProblemsNameTheirFields) {
  v1::AuditSpec chars = SmallExposureSpec();
  EXPECT_FALSE(chars.exposure().model().has_tokenizer());
  v1::AuditSpec spec = SmallExposureSpec(/*with_defaults=*/false);
  v1::TokenizerSpec* t = spec.mutable_exposure()->mutable_model()->mutable_tokenizer();
  t->set_kind("sentencepiece");
  ApplyDefaults(&spec);
  EXPECT_EQ(t->vocab_size(), 1000u);
  EXPECT_EQ(t->model_type(), "bpe");
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  const auto problems = [&] { return std::string(ValidateSpec(spec).message()); };
  t->set_vocab_size(40000);
  t->set_model_type("wordpiece");
  EXPECT_THAT(problems(), HasSubstr("exposure.model.tokenizer.vocab_size: must be in [64, 32000] "
                                    "(got 40000)"));
  EXPECT_THAT(problems(), HasSubstr("exposure.model.tokenizer.model_type: must be one of bpe, "
                                    "unigram (got \"wordpiece\")"));
  t->set_kind("bytes");
  EXPECT_THAT(problems(), HasSubstr("exposure.model.tokenizer.kind: must be one of characters, "
                                    "sentencepiece (got \"bytes\")"));
  t->set_kind("characters");
  EXPECT_THAT(problems(), HasSubstr("exposure.model.tokenizer.vocab_size: applies to a trained "
                                    "tokenizer"));
  t->Clear();
  t->set_kind("sentencepiece");
  t->set_model_path("/data/m.model");
  EXPECT_THAT(problems(), HasSubstr("exposure.model.tokenizer.content_hash: not recorded"));
  t->set_content_hash("sha256:00");
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  // The cost estimate counts a subword vocabulary's embedding.
  v1::AuditSpec wide = SmallExposureSpec();
  EXPECT_EQ(LmVocabularyBound(wide.exposure().model()), 256);
  wide.mutable_exposure()->mutable_model()->mutable_tokenizer()->set_kind("sentencepiece");
  wide.mutable_exposure()->mutable_model()->mutable_tokenizer()->set_vocab_size(32000);
  EXPECT_EQ(LmVocabularyBound(wide.exposure().model()), 32001);
}

}  // namespace
}  // namespace memaudit::spec

namespace memaudit::spec {
namespace {

// A given language model: nothing trains, so what trains a second model is
// refused, and each secret must fill the canary format.
TEST(ExposureSpecTest, ATargetLanguageModelNamesEveryProblem) {
  v1::AuditSpec spec = SmallExposureSpec();  // "pin " + 3 digits, repeats {2, 8}
  v1::ExposureTarget* t = spec.mutable_exposure()->mutable_target();
  t->set_torchscript_path("/data/lm.pt");
  t->set_content_hash("sha256:00");
  t->add_secrets("123");
  t->add_secrets("123");
  std::string message(ValidateSpec(spec).message());
  EXPECT_THAT(message, ::testing::HasSubstr("exposure.target.secrets[1]: is listed twice"));
  t->set_secrets(1, "12a");
  message = std::string(ValidateSpec(spec).message());
  EXPECT_THAT(message, ::testing::HasSubstr(
                           "exposure.target.secrets[1]: must fill the canary format's 3 holes"));
  t->set_secrets(1, "456");
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  t->add_secrets("789");
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              ::testing::HasSubstr("exposure.target.secrets: one secret per repeats entry (2 "
                                   "repeats, 3 secrets)"));
  t->mutable_secrets()->RemoveLast();
  spec.mutable_exposure()->set_baseline(true);
  spec.mutable_exposure()->set_reference_models(2);
  message = std::string(ValidateSpec(spec).message());
  EXPECT_THAT(message, ::testing::HasSubstr("exposure.baseline: trains a model"));
  EXPECT_THAT(message, ::testing::HasSubstr("exposure.reference_models: trains a model"));
  spec.mutable_exposure()->set_baseline(false);
  spec.mutable_exposure()->set_reference_models(0);
  t->clear_content_hash();
  EXPECT_THAT(std::string(ValidateSpec(spec).message()),
              ::testing::HasSubstr("exposure.target.content_hash: not recorded"));
  // Measuring the given model is the audit's one task, of one step.
  t->set_content_hash("sha256:00");
  auto plan = PlanAudit(spec);
  MEMAUDIT_ASSERT_OK(plan);
  ASSERT_EQ(plan->tasks.size(), 1u);
  EXPECT_EQ(plan->tasks[0].steps_total, 1u);
}

}  // namespace
}  // namespace memaudit::spec
