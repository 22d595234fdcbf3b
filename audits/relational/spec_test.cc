#include "audits/relational/spec.h"

#include "audits/relational/signals.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/planner.h"

namespace memaudit::spec {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::AuditSpec PhoneBook() {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(1);
  spec.mutable_relational()->mutable_phone_book();
  ApplyDefaults(&spec);
  return spec;
}

v1::AuditSpec Linear() {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(1);
  spec.mutable_relational()->mutable_linear();
  ApplyDefaults(&spec);
  return spec;
}

std::string Problems(const v1::AuditSpec& spec) {
  absl::Status s = ValidateSpec(spec);
  return s.ok() ? "" : std::string(s.message());
}

TEST(RelationalSpecTest, DefaultsAreRunnable) {
  const v1::AuditSpec p = PhoneBook();
  EXPECT_EQ(Problems(p), "");
  EXPECT_EQ(p.relational().phone_book().template_(), relational::kDefaultTemplate);
  EXPECT_EQ(p.relational().phone_book().digits(), 7u);
  EXPECT_EQ(p.relational().phone_book().validation_records(),
            p.relational().phone_book().records());
  EXPECT_THAT(p.relational().metrics(), ::testing::ElementsAre("exact_match", "digit_f1"));
  const v1::AuditSpec l = Linear();
  EXPECT_EQ(Problems(l), "");
  EXPECT_THAT(l.relational().linear().steps(),
              ::testing::ElementsAre(1, 10, 100, 1000, 10000, 100000));
  EXPECT_EQ(l.relational().linear().tolerance(), 0.25);
  EXPECT_TRUE(l.relational().metrics().empty());
  // No model chosen: the phone book.
  v1::AuditSpec none;
  none.set_name("test");
  none.mutable_relational();
  ApplyDefaults(&none);
  EXPECT_TRUE(none.relational().has_phone_book());
}

TEST(RelationalSpecTest, PhoneBookProblemsNameTheField) {
  v1::AuditSpec spec = PhoneBook();
  v1::PhoneBookSpec* p = spec.mutable_relational()->mutable_phone_book();
  p->set_digits(0);
  p->set_template_("{number} is {name}'s");
  p->mutable_training()->set_window(64);
  p->add_units_sweep(32);
  p->add_units_sweep(32);
  spec.mutable_relational()->add_metrics("token_f1");
  const std::string problems = Problems(spec);
  EXPECT_THAT(problems, HasSubstr("relational.phone_book.digits: must be in [1, 20] (got 0)"));
  EXPECT_THAT(problems, HasSubstr("relational.phone_book.template: {name} must come before"));
  EXPECT_THAT(problems, HasSubstr("relational.phone_book.training.window: must be unset"));
  EXPECT_THAT(problems, HasSubstr("relational.phone_book.units_sweep[1]: repeats 32"));
  EXPECT_THAT(problems, HasSubstr("relational.metrics[2]: must be \"exact_match\" or"));
  EXPECT_THAT(problems, Not(HasSubstr("units_sweep[0]")));
}

TEST(RelationalSpecTest, LinearProblemsNameTheField) {
  v1::AuditSpec spec = Linear();
  v1::LinearRelationalSpec* l = spec.mutable_relational()->mutable_linear();
  l->set_samples(1);
  l->set_step_fraction(2);
  l->clear_steps();
  l->add_steps(100);
  l->add_steps(10);
  l->add_key_dims(0);
  spec.mutable_relational()->add_metrics("exact_match");
  const std::string problems = Problems(spec);
  EXPECT_THAT(problems, HasSubstr("relational.linear.samples: must be in [2, 2000] (got 1)"));
  EXPECT_THAT(problems, HasSubstr("relational.linear.step_fraction: must be in (0, 2)"));
  EXPECT_THAT(problems, HasSubstr("relational.linear.steps[1]: must be strictly ascending"));
  EXPECT_THAT(problems, HasSubstr("relational.linear.key_dims[3]: must be in [1, 1000000]"));
  EXPECT_THAT(problems, HasSubstr("relational.metrics: applies to the phone book only"));
}

TEST(RelationalSpecTest, TemplateRules) {
  EXPECT_EQ(relational::TemplateProblem("{name}: {number}"), "");
  EXPECT_NE(relational::TemplateProblem("{name}"), "");
  EXPECT_NE(relational::TemplateProblem("{name} {name} {number}"), "");
  EXPECT_NE(relational::TemplateProblem("{name}\n{number}"), "");
}

TEST(RelationalSpecTest, PlanIsOneTaskPerVariantWithExactSteps) {
  v1::AuditSpec spec = PhoneBook();
  v1::PhoneBookSpec* p = spec.mutable_relational()->mutable_phone_book();
  p->set_records(50);
  p->mutable_training()->set_batch_size(16);
  p->mutable_training()->set_epochs(10);
  for (uint32_t u : {16, 64, 256}) p->add_units_sweep(u);
  auto plan = PlanAudit(spec);
  MEMAUDIT_ASSERT_OK(plan);
  ASSERT_EQ(plan->tasks.size(), 3u);
  EXPECT_EQ(plan->tasks[2].role, relational::kTaskRole);
  EXPECT_EQ(plan->tasks[2].index, 2u);
  EXPECT_EQ(plan->tasks[2].steps_total, 10u * 4u);  // ceil(50 / 16) steps per epoch
  EXPECT_THAT(relational::Variants(spec.relational()),
              ::testing::ElementsAre("units=16", "units=64", "units=256"));

  auto linear = PlanAudit(Linear());
  MEMAUDIT_ASSERT_OK(linear);
  ASSERT_EQ(linear->tasks.size(), 3u);  // key_dims 20, 95, 1000
  EXPECT_EQ(linear->tasks[0].steps_total, 100000u);
  EXPECT_THAT(relational::Variants(Linear().relational()),
              ::testing::ElementsAre("d_x=20", "d_x=95", "d_x=1000"));
}

// Replicates are whole copies of the audit: task i is variant i % V of
// replicate i / V, replicate 0 seeded as without replicates.
TEST(RelationalSpecTest, ReplicatesCopyTheVariantsEachOnItsOwnSeed) {
  v1::AuditSpec spec = Linear();
  spec.mutable_relational()->set_replicates(4);
  auto plan = PlanAudit(spec);
  MEMAUDIT_ASSERT_OK(plan);
  ASSERT_EQ(plan->tasks.size(), 12u);  // 3 key_dims x 4 replicates
  EXPECT_EQ(plan->tasks[11].index, 11u);
  const v1::RelationalAudit& r = spec.relational();
  EXPECT_EQ(relational::Runs(r), 12u);
  EXPECT_EQ(relational::VariantOfRun(r, 7), 1u);
  EXPECT_EQ(relational::ReplicateOfRun(r, 7), 2u);
  EXPECT_EQ(relational::ReplicateSeed(9, 0), 9u);
  EXPECT_NE(relational::ReplicateSeed(9, 1), relational::ReplicateSeed(9, 2));
  EXPECT_EQ(relational::Runs(Linear().relational()), 3u) << "unset: one replicate";

  for (uint32_t bad : {0u, 17u}) {
    spec.mutable_relational()->set_replicates(bad);
    EXPECT_THAT(std::string(ValidateSpec(spec).message()),
                HasSubstr("relational.replicates: must be in [1, 16]"));
  }
}

TEST(RelationalSpecTest, TorchScriptModelNeedsItsPathAndNoUnitsSweep) {
  v1::AuditSpec spec = PhoneBook();
  v1::PhoneBookSpec* p = spec.mutable_relational()->mutable_phone_book();
  p->mutable_model()->set_architecture("torchscript");
  EXPECT_THAT(Problems(spec),
              HasSubstr("relational.phone_book.model.torchscript_path: required for"));
  p->mutable_model()->set_torchscript_path("/models/char_gru.pt");
  EXPECT_EQ(Problems(spec), "");
  EXPECT_THAT(relational::Variants(spec.relational()), ::testing::ElementsAre("torchscript"));
  p->add_units_sweep(32);
  EXPECT_THAT(Problems(spec), HasSubstr("relational.phone_book.units_sweep: cannot vary units"));
}

}  // namespace
}  // namespace memaudit::spec
