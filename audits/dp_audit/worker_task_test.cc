#include "audits/dp_audit/worker_task.h"

#include <algorithm>

#include "audits/dp_audit/signals.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "services/worker/task_runner.h"
#include "spec/dataset_facts.h"
#include "spec/spec_validator.h"

namespace memaudit::worker {
namespace {

v1::Task SmallTask(const std::string& canary_type) {
  v1::Task task;
  task.set_audit_id("d1");
  task.set_role(dp_audit::kRunRole);
  task.set_index(1);
  v1::AuditSpec* spec = task.mutable_spec();
  spec->set_seed(5);
  v1::DpAudit* d = spec->mutable_dp_audit();
  d->mutable_dataset()->set_pool_size(300);
  d->set_canaries(50);
  d->set_runs(2);
  d->set_canary_type(canary_type);
  d->mutable_training()->set_epochs(2);
  d->mutable_dp_sgd()->set_noise_multiplier(1.0);
  spec::ApplyDefaults(spec);
  return task;
}

TEST(DpAuditWorkerTest, InputCanariesAreMislabelledPoolRowsOutsideTheTrainingSet) {
  const v1::Task task = SmallTask("input");
  auto data = LoadAuditDataset(task.spec().dp_audit().dataset(), "dp_audit.dataset");
  MEMAUDIT_ASSERT_OK(data);
  auto run = DpAuditRunSpecFor(task, **data);
  MEMAUDIT_ASSERT_OK(run);
  ASSERT_EQ(run->canary_rows.size(), 50u);
  EXPECT_EQ(run->train_rows.size(), 250u);
  EXPECT_EQ(run->included, dp_audit::Included(task.spec(), 1));
  for (size_t i = 0; i < run->canary_rows.size(); ++i) {
    EXPECT_NE(run->canary_labels[i], (*data)->labels[run->canary_rows[i]]) << i;
    EXPECT_EQ(std::count(run->train_rows.begin(), run->train_rows.end(), run->canary_rows[i]), 0);
  }
  EXPECT_TRUE(run->dp);
  EXPECT_EQ(run->dp_delta, 1e-5);
  EXPECT_FALSE(run->gradient_canaries);
  EXPECT_EQ(run->optimizer.kind, engine::OptimizerKind::kSgd);
  // "sgd" with momentum trains as a membership audit's recipe does.
  v1::Task with_momentum = task;
  with_momentum.mutable_spec()->mutable_dp_audit()->mutable_training()->set_momentum(0.9);
  auto heavy_ball = DpAuditRunSpecFor(with_momentum, **data);
  MEMAUDIT_ASSERT_OK(heavy_ball);
  EXPECT_EQ(heavy_ball->optimizer.kind, engine::OptimizerKind::kMomentum);
  EXPECT_EQ(heavy_ball->optimizer.momentum, 0.9);
}

TEST(DpAuditWorkerTest, TheTeamsOwnCanariesAreTheFirstRowsAsLabelled) {
  v1::Task task = SmallTask("input");
  v1::DpAudit* d = task.mutable_spec()->mutable_dp_audit();
  d->set_canary_source("first_rows");
  d->set_input_score("scaled_logit");
  task.mutable_spec()->set_name("own-canaries");
  MEMAUDIT_ASSERT_OK(spec::ValidateSpec(task.spec()));
  auto data = LoadAuditDataset(d->dataset(), "dp_audit.dataset");
  MEMAUDIT_ASSERT_OK(data);
  auto run = DpAuditRunSpecFor(task, **data);
  MEMAUDIT_ASSERT_OK(run);
  ASSERT_EQ(run->canary_rows.size(), 50u);
  EXPECT_EQ(run->train_rows.size(), 250u);
  EXPECT_TRUE(run->scaled_logit_score);
  for (uint32_t i = 0; i < 50; ++i) {
    EXPECT_EQ(run->canary_rows[i], i);
    EXPECT_EQ(run->canary_labels[i], (*data)->labels[i]);
  }
  // Drawn from the rows after the canaries, all distinct.
  std::vector<uint32_t> train = run->train_rows;
  std::sort(train.begin(), train.end());
  EXPECT_GE(train.front(), 50u);
  EXPECT_EQ(std::adjacent_find(train.begin(), train.end()), train.end());
  // Gradient canaries have no inputs to source or score.
  v1::Task gradient = SmallTask("gradient");
  gradient.mutable_spec()->set_name("gradient");
  gradient.mutable_spec()->mutable_dp_audit()->set_canary_source("first_rows");
  EXPECT_NE(std::string(spec::ValidateSpec(gradient.spec()).message())
                .find("dp_audit.canary_source: applies to input canaries only"),
            std::string::npos);
}

TEST(DpAuditWorkerTest, ARunSendsItsScoresAndSummaryTheSameEachTime) {
  const v1::Task task = SmallTask("gradient");
  uint64_t steps = 0;
  auto a = RunTask(task, [&](const TrainingProgress& p) {
    steps = p.steps;
    return true;
  });
  MEMAUDIT_ASSERT_OK(a);
  ASSERT_EQ(a->size(), 2u);
  EXPECT_EQ((*a)[0].signal(), dp_audit::kScores);
  EXPECT_EQ((*a)[0].values_size(), 50);
  EXPECT_EQ((*a)[1].signal(), dp_audit::kSummary);
  EXPECT_GT((*a)[1].values(dp_audit::kAccountantEpsilon), 0);
  EXPECT_EQ((*a)[1].values(dp_audit::kNoiseMultiplier), 1.0);
  EXPECT_EQ(steps, 2u * ((300 + 63) / 64));  // 300 training rows, 2 epochs of 64
  auto b = RunTask(task, [](const TrainingProgress&) { return true; });
  MEMAUDIT_ASSERT_OK(b);
  EXPECT_TRUE(std::equal((*a)[0].values().begin(), (*a)[0].values().end(), (*b)[0].values().begin(),
                         (*b)[0].values().end()));
}

TEST(DpAuditWorkerTest, ARunOutsideTheAuditIsRefused) {
  v1::Task task = SmallTask("input");
  task.set_index(2);
  auto data = LoadAuditDataset(task.spec().dp_audit().dataset(), "dp_audit.dataset");
  MEMAUDIT_ASSERT_OK(data);
  EXPECT_EQ(DpAuditRunSpecFor(task, **data).status().message(),
            "task.index: 2 is outside the audit's 2 runs");
}

}  // namespace
}  // namespace memaudit::worker
