#include "audits/unlearning/worker_task.h"

#include <algorithm>

#include "audits/unlearning/signals.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "services/worker/task_runner.h"

namespace memaudit::worker {
namespace {

using ::memaudit::testing::StatusIs;

// A fully specified (defaults written out) small unlearning task.
v1::Task SmallTask(const std::string& method, const std::string& deletion, bool target) {
  v1::Task task;
  task.set_audit_id("u1");
  task.set_role(target ? "target_original" : "shadow_original");
  task.set_index(1);
  v1::AuditSpec* spec = task.mutable_spec();
  spec->set_seed(5);
  spec->mutable_resources()->set_threads_per_task(1);
  v1::UnlearningAudit* u = spec->mutable_unlearning();
  u->mutable_dataset()->set_name("fashion_mnist");
  u->mutable_dataset()->set_pool_size(400);
  u->mutable_model()->set_architecture("logreg");
  u->mutable_training()->set_optimizer("sgd");
  u->mutable_training()->set_learning_rate(0.1);
  u->mutable_training()->set_epochs(2);
  u->mutable_training()->set_batch_size(16);
  u->set_method(method);
  if (method == "sisa") {
    u->mutable_sisa()->set_shards(3);
    u->mutable_sisa()->set_slices(2);
  }
  for (v1::UnlearningSide* s : {u->mutable_shadow(), u->mutable_target()}) {
    s->set_originals(2);
    s->set_samples(60);
    s->set_unlearned(3);
  }
  u->set_deletion(deletion);
  u->set_group_size(deletion == "single" ? 1 : 2);
  u->set_seed_policy("shared");
  u->add_features("sorted_diff");
  u->add_attack_classifiers("logistic_regression");
  for (const char* d : {"none", "temperature", "label_only"}) u->add_defenses(d);
  return task;
}

// The steps and models the worker reports match what the planner counted.
void ExpectPlannedWork(const v1::Task& task) {
  uint64_t last_steps = 0;
  auto observations = RunTask(task, [&](const TrainingProgress& p) {
    last_steps = p.steps;
    return true;
  });
  MEMAUDIT_ASSERT_OK(observations);
  const bool target = task.role() == "target_original";
  const unlearning::TaskWork planned = unlearning::TaskWorkFor(task.spec(), target, task.index());
  EXPECT_EQ(last_steps, planned.steps);
  const std::string side = target ? "target" : "shadow";
  const v1::UnlearningAudit& u = task.spec().unlearning();
  const uint32_t rows = 2 * unlearning::PositivesPerChild(u);
  ASSERT_EQ(observations->size(), 1u + 3u * 3u);
  const v1::Observation& summary = (*observations)[0];
  EXPECT_EQ(summary.point(), side);
  EXPECT_EQ(summary.signal(), "original");
  EXPECT_EQ(summary.run(), 1u);
  ASSERT_EQ(summary.values_size(), unlearning::kSummaryValues);
  EXPECT_EQ(summary.values(unlearning::kModelsTrained), static_cast<double>(planned.models));
  // Better than chance (0.1) even for SISA's 20-sample shards.
  EXPECT_GT(summary.values(unlearning::kTrainAccuracy), 0.2);
  EXPECT_GT(summary.values(unlearning::kTestAccuracy), 0.2);
  for (size_t k = 1; k < observations->size(); ++k) {
    const v1::Observation& o = (*observations)[k];
    EXPECT_EQ(o.point(), side + "/" + std::to_string((k - 1) / 3));
    EXPECT_EQ(o.signal(), std::string("posteriors/") + u.defenses((k - 1) % 3));
    ASSERT_EQ(o.values_size(), static_cast<int>(2 * rows * 10));
    for (double v : o.values()) {
      EXPECT_GE(v, 0.0);
      EXPECT_LE(v, 1.0);
    }
  }
}

TEST(UnlearningTaskTest, ScratchSingleDeletionReportsThePlannedWork) {
  ExpectPlannedWork(SmallTask("scratch", "single", false));
}

TEST(UnlearningTaskTest, SisaOnlineDeletionReportsThePlannedWork) {
  ExpectPlannedWork(SmallTask("sisa", "online", true));
}

TEST(UnlearningTaskTest, QueriesAreTheDeletedSamplesThenNegatives) {
  const v1::Task task = SmallTask("scratch", "group", false);
  auto data = data::LoadMnistLayout(data::kFashionMnistDir, "train");
  MEMAUDIT_ASSERT_OK(data);
  auto run = UnlearningRunSpecFor(task, **data);
  MEMAUDIT_ASSERT_OK(run);
  EXPECT_EQ(run->train_rows.size(), 60u);
  ASSERT_EQ(run->children.size(), 3u);
  for (const engine::UnlearningChildSpec& c : run->children) {
    ASSERT_EQ(c.queries.size(), 4u);
    EXPECT_EQ(std::vector<uint32_t>(c.queries.begin(), c.queries.begin() + 2), c.removed);
    for (size_t q = 2; q < 4; ++q) {
      EXPECT_EQ(std::count(run->train_rows.begin(), run->train_rows.end(), c.queries[q]), 0);
    }
    EXPECT_TRUE(c.shared_order);
    EXPECT_EQ(c.seeds.init, run->seeds.init);
  }
  v1::Task independent = task;
  independent.mutable_spec()->mutable_unlearning()->set_seed_policy("independent");
  auto own = UnlearningRunSpecFor(independent, **data);
  MEMAUDIT_ASSERT_OK(own);
  EXPECT_FALSE(own->children[0].shared_order);
  EXPECT_NE(own->children[0].seeds.init, own->seeds.init);

  v1::Task outside = task;
  outside.set_index(2);
  EXPECT_THAT(UnlearningRunSpecFor(outside, **data), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace memaudit::worker
