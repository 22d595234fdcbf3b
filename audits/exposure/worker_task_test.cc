// The worker side of an exposure sweep: each variant's epochs and learning
// rate reach the engine, and the steps it trains are the planner's.
#include "audits/exposure/worker_task.h"

#include <string>
#include <vector>

#include "audits/exposure/signals.h"
#include "common/base/seeding.h"
#include "common/testing/status_matchers.h"
#include "engine/text_corpus.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/planner.h"
#include "spec/spec_validator.h"

namespace memaudit::worker {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

// Three variants that differ from the base only in epochs or only in the
// learning rate; a small LSTM on 3,000 characters trains in well under a
// second.
v1::AuditSpec SweepSpec() {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(11);
  spec.mutable_resources()->set_threads_per_task(1);
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->mutable_corpus()->set_text(engine::SyntheticText(3000, 4));
  e->mutable_model()->set_units(16);
  e->mutable_model()->set_embedding(8);
  e->mutable_training()->set_learning_rate(0.01);
  e->mutable_training()->set_epochs(2);
  e->mutable_training()->set_batch_size(16);
  e->mutable_training()->set_window(32);
  e->mutable_canary()->set_prefix("pin ");
  e->mutable_canary()->set_digits(3);
  e->add_repeats(4);
  e->set_controls(1);
  e->set_estimator("exact");
  e->set_extraction(false);
  e->add_sweep();                          // "base": 2 epochs, lr 0.01
  e->add_sweep()->set_epochs(4);           // "epochs=4"
  e->add_sweep()->set_learning_rate(0.1);  // "lr=0.1"
  e->set_baseline(true);
  spec::ApplyDefaults(&spec);
  return spec;
}

v1::Task TaskOf(const v1::AuditSpec& spec, const char* role, uint32_t index) {
  v1::Task task;
  task.set_audit_id("e1");
  task.set_role(role);
  task.set_index(index);
  *task.mutable_spec() = spec;
  return task;
}

// {log2|R|, training steps, final loss} from a finished task.
std::vector<double> ModelSignal(const std::vector<v1::Observation>& observations) {
  for (const v1::Observation& o : observations) {
    if (o.signal() == exposure::kModel) return {o.values().begin(), o.values().end()};
  }
  return {};
}

TEST(ExposureTaskTest, EachVariantTrainsItsOwnEpochsAndLearningRate) {
  const v1::AuditSpec spec = SweepSpec();
  MEMAUDIT_ASSERT_OK(spec::ValidateSpec(spec));
  auto base = ExposureRunSpecFor(TaskOf(spec, exposure::kCanaryRole, 0));
  auto longer = ExposureRunSpecFor(TaskOf(spec, exposure::kCanaryRole, 1));
  auto faster = ExposureRunSpecFor(TaskOf(spec, exposure::kCanaryRole, 2));
  auto longer_baseline = ExposureRunSpecFor(TaskOf(spec, exposure::kBaselineRole, 1));
  MEMAUDIT_ASSERT_OK(base);
  MEMAUDIT_ASSERT_OK(longer);
  MEMAUDIT_ASSERT_OK(faster);
  MEMAUDIT_ASSERT_OK(longer_baseline);
  EXPECT_EQ(base->epochs, 2u);
  EXPECT_DOUBLE_EQ(base->optimizer.learning_rate, 0.01);
  EXPECT_EQ(longer->epochs, 4u);
  EXPECT_DOUBLE_EQ(longer->optimizer.learning_rate, 0.01);
  EXPECT_EQ(faster->epochs, 2u);
  EXPECT_DOUBLE_EQ(faster->optimizer.learning_rate, 0.1);
  EXPECT_EQ(longer_baseline->epochs, 4u) << "a baseline trains its variant's recipe";
  EXPECT_FALSE(longer_baseline->insert_canaries);
  // Paired: every variant shares the seeds, so only the swept field differs.
  EXPECT_EQ(longer->seed, base->seed);
  EXPECT_EQ(longer->model_seed, base->model_seed);

  auto plan = spec::PlanAudit(spec);
  MEMAUDIT_ASSERT_OK(plan);
  ASSERT_EQ(plan->tasks.size(), 6u);  // 3 canary models, then 3 baselines
  std::vector<std::vector<double>> models;
  for (size_t i = 0; i < plan->tasks.size(); ++i) {
    const spec::PlannedTask& planned = plan->tasks[i];
    SCOPED_TRACE(planned.role + "/" + std::to_string(planned.index));
    uint64_t reported = 0;
    auto observations = RunExposureModel(TaskOf(spec, planned.role.c_str(), planned.index),
                                         [&](uint64_t steps, uint64_t) {
                                           reported = steps;
                                           return true;
                                         });
    MEMAUDIT_ASSERT_OK(observations);
    const std::vector<double> model = ModelSignal(*observations);
    ASSERT_EQ(model.size(), exposure::kModelValues);
    // The planner's count is exact for an inline corpus, per variant.
    EXPECT_EQ(model[1], static_cast<double>(planned.steps_total));
    EXPECT_EQ(reported, planned.steps_total);
    models.push_back(model);
  }
  // Twice the epochs: twice the steps, a lower last-epoch loss.
  EXPECT_EQ(models[1][1], 2 * models[0][1]);
  EXPECT_LT(models[1][2], models[0][2]);
  // Another learning rate: the same steps, another model.
  EXPECT_EQ(models[2][1], models[0][1]);
  EXPECT_NE(models[2][2], models[0][2]);
  // The baselines (no canaries) follow their variant's epochs too.
  EXPECT_EQ(models[4][1], 2 * models[3][1]);
}

// Replicate r of a canary model: the canary model of another seed (its own
// canaries, positions, S and model seed, shared by replicate r of every
// variant), no extraction; it reports at "replicate/<r>" of its variant's run.
TEST(ExposureTaskTest, ReplicatesTrainTheCanaryModelOnTheirOwnSeeds) {
  v1::AuditSpec spec = SweepSpec();
  spec.mutable_exposure()->set_extraction(true);
  spec.mutable_exposure()->set_replicates(3);
  MEMAUDIT_ASSERT_OK(spec::ValidateSpec(spec));
  auto canary = ExposureRunSpecFor(TaskOf(spec, exposure::kCanaryRole, 1));
  auto first = ExposureRunSpecFor(TaskOf(spec, exposure::kReplicateRole, 2));   // v1, r1
  auto second = ExposureRunSpecFor(TaskOf(spec, exposure::kReplicateRole, 3));  // v1, r2
  auto base_first = ExposureRunSpecFor(TaskOf(spec, exposure::kReplicateRole, 0));
  MEMAUDIT_ASSERT_OK(canary);
  MEMAUDIT_ASSERT_OK(first);
  MEMAUDIT_ASSERT_OK(second);
  MEMAUDIT_ASSERT_OK(base_first);
  EXPECT_EQ(first->epochs, 4u) << "variant 1's recipe";
  EXPECT_NE(first->seed, canary->seed) << "other canaries, positions and S";
  EXPECT_EQ(first->seed, base_first->seed) << "paired across variants";
  EXPECT_EQ(first->model_seed, first->seed);
  EXPECT_NE(first->model_seed, canary->model_seed);
  EXPECT_NE(second->model_seed, first->model_seed);
  EXPECT_EQ(base_first->model_seed, first->model_seed) << "paired across variants";
  EXPECT_EQ(*first->model_seed, DeriveSeed(spec.seed(), exposure::kReplicateRole, 1));
  EXPECT_TRUE(first->insert_canaries);
  EXPECT_TRUE(first->rank_canaries);
  EXPECT_TRUE(canary->extract);
  EXPECT_FALSE(first->extract);
  EXPECT_THAT(ExposureRunSpecFor(TaskOf(spec, exposure::kReplicateRole, 6)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("task.index")));

  v1::AuditSpec single = SweepSpec();
  EXPECT_THAT(ExposureRunSpecFor(TaskOf(single, exposure::kReplicateRole, 0)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("task.role")));
}

TEST(ExposureTaskTest, BadEpochsOrLearningRateNameTheSweepField) {
  v1::AuditSpec spec = SweepSpec();
  spec.mutable_exposure()->mutable_sweep(1)->set_epochs(0);
  spec.mutable_exposure()->mutable_sweep(2)->set_learning_rate(-1);
  auto zero = ExposureRunSpecFor(TaskOf(spec, exposure::kCanaryRole, 1));
  EXPECT_THAT(zero, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(zero.status().message()),
              HasSubstr("exposure.sweep[1].epochs: must be >= 1"));
  auto negative = ExposureRunSpecFor(TaskOf(spec, exposure::kBaselineRole, 2));
  EXPECT_THAT(negative, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(negative.status().message()),
              HasSubstr("exposure.sweep[2].learning_rate: must be > 0 (got -1)"));
  // Unswept, the base recipe's field is the one named.
  spec.mutable_exposure()->mutable_training()->set_epochs(0);
  auto base = ExposureRunSpecFor(TaskOf(spec, exposure::kCanaryRole, 0));
  EXPECT_THAT(std::string(base.status().message()),
              HasSubstr("exposure.training.epochs: must be >= 1"));
}

}  // namespace
}  // namespace memaudit::worker
