#include "audits/membership/spec_packing.h"

#include "gtest/gtest.h"
#include "spec/spec_validator.h"

namespace memaudit::spec {
namespace {

// A membership spec of `models` MLPs 784-hidden-10 at `batch`, defaulted.
v1::AuditSpec Recipe(uint32_t models, uint32_t hidden, uint32_t batch) {
  v1::AuditSpec spec;
  spec.set_name("packing");
  v1::MembershipAudit* m = spec.mutable_membership();
  m->mutable_dataset()->set_pool_size(10000);
  if (hidden > 0) m->mutable_model()->add_hidden(hidden);
  m->mutable_training()->set_learning_rate(0.05);
  m->mutable_training()->set_epochs(5);
  m->mutable_training()->set_batch_size(batch);
  m->set_reference_models(models);
  ApplyDefaults(&spec);
  return spec;
}

// The shapes of bench/system_bench.py and the ensemble_bench sweep of
// docs/performance.md: packed where it measured faster, not where it lost.
TEST(MembershipPackingTest, AutoPacksSmallModelsAndLeavesLargeOnesAlone) {
  // 784-32-10 at batch 64: 1.6 M multiply-adds a step; 16 members measured 1.5x.
  EXPECT_EQ(Recipe(32, 32, 64).resources().models_per_task(), 16u);
  // 784-256-10 at batch 128: 26 M; 16 members measured 0.85x.
  EXPECT_EQ(Recipe(16, 256, 128).resources().models_per_task(), 1u);
  // 784-64-10 at batch 128: 6.5 M; 16 members 0.94x, 4 members 0.97-1.12x.
  EXPECT_EQ(Recipe(16, 64, 128).resources().models_per_task(), 1u);
  // 784-16-10 at batch 256: 3.3 M; 16 members (4,096 rows a step) lost,
  // 4 (1,024 rows) won 1.15x.
  EXPECT_EQ(Recipe(16, 16, 256).resources().models_per_task(), 4u);
  // 784-32-10 at batch 128: 8 members, 1,024 rows a step.
  EXPECT_EQ(Recipe(16, 32, 128).resources().models_per_task(), 8u);
  // Logistic regression: tiny steps.
  EXPECT_EQ(Recipe(64, 0, 64).resources().models_per_task(), 16u);
  // 784-128-10 at batch 32: 3.3 M, but 16 members' state (19.5 MB) measured
  // 0.95x; 8 (9.8 MB) 1.10-1.22x.
  EXPECT_EQ(Recipe(16, 128, 32).resources().models_per_task(), 8u);
  // 784-256-10 at batch 16: 16 members 0.65x, 4 members 1.06-1.12x.
  EXPECT_EQ(Recipe(16, 256, 16).resources().models_per_task(), 4u);
}

// docs/performance.md, GPU section: the H100 host's 16 CPU threads.
TEST(MembershipPackingTest, MoreThreadsPerTaskPackLargerModels) {
  v1::AuditSpec spec = Recipe(16, 256, 128);
  spec.mutable_resources()->set_models_per_task(0);
  spec.mutable_resources()->set_threads_per_task(16);
  EXPECT_EQ(AutoModelsPerTask(spec), 16u) << "measured 6.4x";
  spec = Recipe(64, 1024, 256);
  spec.mutable_resources()->set_models_per_task(0);
  spec.mutable_resources()->set_threads_per_task(16);
  EXPECT_EQ(AutoModelsPerTask(spec), 1u) << "measured 0.93x";
}

TEST(MembershipPackingTest, AutoNeverPacksMoreThanTheAuditsModels) {
  EXPECT_EQ(Recipe(3, 32, 64).resources().models_per_task(), 3u);
  EXPECT_EQ(Recipe(1, 32, 64).resources().models_per_task(), 1u);
}

TEST(MembershipPackingTest, GpuTasksAlwaysPack) {
  v1::AuditSpec spec = Recipe(64, 256, 128);
  spec.mutable_resources()->set_models_per_task(0);
  spec.mutable_resources()->set_gpus_per_task(1);
  EXPECT_EQ(AutoModelsPerTask(spec), kAutoPackMembers);
}

TEST(MembershipPackingTest, AValueTheSpecGivesIsKept) {
  v1::AuditSpec spec;
  spec.mutable_resources()->set_models_per_task(1);
  spec.mutable_membership()->set_reference_models(32);
  spec.mutable_membership()->mutable_model()->add_hidden(32);
  ApplyDefaults(&spec);
  EXPECT_EQ(spec.resources().models_per_task(), 1u);
}

}  // namespace
}  // namespace memaudit::spec
