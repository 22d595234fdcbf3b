#include "services/coordinator/planner.h"

#include "common/seeding.h"
#include "gtest/gtest.h"
#include "services/coordinator/test_specs.h"

namespace memaudit::coordinator {
namespace {

TEST(PlannerTest, PlansOneTaskPerReferenceModel) {
  auto plan = PlanAudit(SmallMembershipSpec(8));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->tasks.size(), 8u);
  for (uint32_t i = 0; i < 8; ++i) {
    EXPECT_EQ(plan->tasks[i].role, "reference_model");
    EXPECT_EQ(plan->tasks[i].index, i);
  }
}

TEST(PlannerTest, StepsMatchEachModelsKeepRow) {
  v1::AuditSpec spec = SmallMembershipSpec(4);
  auto plan = PlanAudit(spec);
  ASSERT_TRUE(plan.ok());
  KeepMatrix keep = BuildKeepMatrix(spec.seed(), 4, 100);
  for (uint32_t i = 0; i < 4; ++i) {
    uint64_t rows = 0;
    for (uint32_t j = 0; j < 100; ++j) rows += keep.in(i, j);
    EXPECT_EQ(plan->tasks[i].steps_total, 2 * ((rows + 9) / 10)) << "model " << i;
  }
}

TEST(PlannerTest, PlanIsAPureFunctionOfTheSpec) {
  auto a = PlanAudit(SmallMembershipSpec(6));
  auto b = PlanAudit(SmallMembershipSpec(6));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->tasks.size(), b->tasks.size());
  for (size_t i = 0; i < a->tasks.size(); ++i) {
    EXPECT_EQ(a->tasks[i].steps_total, b->tasks[i].steps_total);
  }
}

TEST(PlannerTest, RefusesInvalidSpecs) {
  v1::AuditSpec spec = SmallMembershipSpec(4);
  spec.mutable_membership()->set_reference_models(5);
  EXPECT_EQ(PlanAudit(spec).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace memaudit::coordinator
