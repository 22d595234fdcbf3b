#include "spec/planner.h"

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/test_specs.h"

namespace memaudit::spec {
namespace {

using ::memaudit::testing::StatusIs;

TEST(PlannerTest, PlansOneTaskPerReferenceModel) {
  auto plan = PlanAudit(SmallMembershipSpec(8));
  MEMAUDIT_ASSERT_OK(plan);
  ASSERT_EQ(plan->tasks.size(), 8u);
  for (uint32_t i = 0; i < 8; ++i) {
    EXPECT_EQ(plan->tasks[i].role, "reference_model");
    EXPECT_EQ(plan->tasks[i].index, i);
  }
}

TEST(PlannerTest, StepsMatchEachModelsKeepRow) {
  v1::AuditSpec spec = SmallMembershipSpec(4);
  auto plan = PlanAudit(spec);
  MEMAUDIT_ASSERT_OK(plan);
  KeepMatrix keep = BuildKeepMatrix(spec.seed(), 4, 100);
  for (uint32_t i = 0; i < 4; ++i) {
    uint64_t rows = 0;
    for (uint32_t j = 0; j < 100; ++j) rows += keep.in(i, j);
    EXPECT_EQ(plan->tasks[i].steps_total, 2 * ((rows + 9) / 10)) << "model " << i;
  }
}

// models_per_task packs consecutive models, aligned to multiples of it; a
// task's steps are its models' steps summed, so the audit's total is the
// unpacked one.
TEST(PlannerTest, PackedTasksCoverAlignedModelRanges) {
  const auto single = PlanAudit(SmallMembershipSpec(10));
  MEMAUDIT_ASSERT_OK(single);
  v1::AuditSpec spec = SmallMembershipSpec(10);
  spec.mutable_resources()->set_models_per_task(4);
  auto plan = PlanAudit(spec);
  MEMAUDIT_ASSERT_OK(plan);
  std::vector<std::string> tasks;
  uint64_t total = 0;
  for (const PlannedTask& t : plan->tasks) {
    tasks.push_back(absl::StrCat(t.role, "/", t.index, ":", t.first_model, "+", t.models));
    uint64_t steps = 0;
    for (uint32_t i = t.first_model; i < t.first_model + t.models; ++i) {
      steps += single->tasks[i].steps_total;
    }
    EXPECT_EQ(t.steps_total, steps) << "task " << t.index;
    total += t.steps_total;
  }
  EXPECT_THAT(tasks, ::testing::ElementsAre("reference_model/0:0+4", "reference_model/1:4+4",
                                            "reference_model/2:8+2"));
  uint64_t single_total = 0;
  for (const PlannedTask& t : single->tasks) {
    EXPECT_EQ(t.first_model, t.index);
    EXPECT_EQ(t.models, 1u);
    single_total += t.steps_total;
  }
  EXPECT_EQ(total, single_total);
  // An odd pool: halves of 50 and 49 rows; still each model's own steps.
  v1::AuditSpec odd = spec;
  odd.mutable_membership()->mutable_dataset()->set_pool_size(99);
  odd.mutable_resources()->set_models_per_task(1);
  const auto odd_single = PlanAudit(odd);
  odd.mutable_resources()->set_models_per_task(3);
  const auto odd_packed = PlanAudit(odd);
  MEMAUDIT_ASSERT_OK(odd_single);
  MEMAUDIT_ASSERT_OK(odd_packed);
  ASSERT_EQ(odd_packed->tasks.size(), 4u);
  EXPECT_EQ(odd_packed->tasks[0].steps_total, 2u * (5 + 5 + 5));  // ceil(50/10), ceil(49/10)
  EXPECT_EQ(odd_packed->tasks[3].models, 1u);
  EXPECT_EQ(odd_packed->tasks[3].steps_total, odd_single->tasks[9].steps_total);
}

TEST(PlannerTest, PlanIsAPureFunctionOfTheSpec) {
  auto a = PlanAudit(SmallMembershipSpec(6));
  auto b = PlanAudit(SmallMembershipSpec(6));
  MEMAUDIT_ASSERT_OK(a);
  MEMAUDIT_ASSERT_OK(b);
  ASSERT_EQ(a->tasks.size(), b->tasks.size());
  for (size_t i = 0; i < a->tasks.size(); ++i) {
    EXPECT_EQ(a->tasks[i].steps_total, b->tasks[i].steps_total);
  }
}

TEST(PlannerTest, ExposurePlansOneCanaryModelWithExactSteps) {
  auto plan = PlanAudit(SmallExposureSpec());
  MEMAUDIT_ASSERT_OK(plan);
  ASSERT_EQ(plan->tasks.size(), 1u);
  EXPECT_EQ(plan->tasks[0].role, "canary_model");
  EXPECT_EQ(plan->tasks[0].index, 0u);
  // 100 corpus characters + 10 canary lines of "pin " + 3 digits + newline
  // = 180 characters; (180 - 1) / 16 = 11 windows; ceil(11 / 4) = 3 steps per
  // epoch; 3 epochs.
  EXPECT_EQ(plan->tasks[0].steps_total, 9u);
  // A cut corpus: max_chars 55 keeps 5 lines (50 characters) -> 130 in all,
  // 8 windows, 2 steps per epoch.
  v1::AuditSpec cut = SmallExposureSpec();
  cut.mutable_exposure()->mutable_corpus()->set_max_chars(55);
  EXPECT_EQ(PlanAudit(cut)->tasks[0].steps_total, 6u);
  // Determinism: the same spec, the same plan.
  EXPECT_EQ(PlanAudit(SmallExposureSpec())->tasks[0].steps_total, 9u);
  // Evaluation points measure between steps: the plan is unchanged.
  for (bool per_epoch : {false, true}) {
    v1::AuditSpec curve = SmallExposureSpec();
    if (per_epoch) {
      curve.mutable_exposure()->set_eval_every_epoch(true);
    } else {
      curve.mutable_exposure()->set_eval_every_steps(2);
    }
    auto curve_plan = PlanAudit(curve);
    MEMAUDIT_ASSERT_OK(curve_plan);
    ASSERT_EQ(curve_plan->tasks.size(), 1u);
    EXPECT_EQ(curve_plan->tasks[0].role, "canary_model");
    EXPECT_EQ(curve_plan->tasks[0].steps_total, 9u);
  }
}

TEST(PlannerTest, ExposureSweepPlansCanaryModelsThenBaselinesAndReferences) {
  v1::AuditSpec spec = SmallExposureSpec();
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->add_sweep();  // the base recipe (batch 4)
  e->add_sweep()->set_batch_size(8);
  e->set_baseline(true);
  e->set_reference_models(2);
  ApplyDefaults(&spec);
  auto plan = PlanAudit(spec);
  MEMAUDIT_ASSERT_OK(plan);
  std::vector<std::string> tasks;
  for (const PlannedTask& t : plan->tasks) {
    tasks.push_back(absl::StrCat(t.role, "/", t.index, ":", t.steps_total));
  }
  // With canaries: 11 windows (above), ceil(11/4) = 3 or ceil(11/8) = 2 steps
  // per epoch. Without: 99 / 16 = 6 windows, 2 or 1 steps per epoch. 3 epochs.
  EXPECT_THAT(tasks, ::testing::ElementsAre("canary_model/0:9", "canary_model/1:6",
                                            "baseline_model/0:6", "reference_model/0:6",
                                            "reference_model/1:6", "baseline_model/1:3",
                                            "reference_model/2:3", "reference_model/3:3"));
}

TEST(PlannerTest, RefusesInvalidSpecs) {
  v1::AuditSpec spec = SmallMembershipSpec(4);
  spec.mutable_membership()->set_reference_models(5);
  EXPECT_THAT(PlanAudit(spec), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace memaudit::spec
