#include "audits/unlearning/spec.h"

#include <algorithm>
#include <set>

#include "audits/unlearning/signals.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/planner.h"

namespace memaudit::spec {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

v1::AuditSpec Defaulted() {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(17);
  spec.mutable_unlearning();
  ApplyDefaults(&spec);
  return spec;
}

std::string Problems(const v1::AuditSpec& spec) {
  const absl::Status status = ValidateSpec(spec);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument));
  return std::string(status.message());
}

bool Contains(const std::vector<uint32_t>& v, uint32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(UnlearningSpecTest, DefaultsMakeARunnableSpec) {
  const v1::AuditSpec spec = Defaulted();
  EXPECT_TRUE(KindImplemented(spec));
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  const v1::UnlearningAudit& u = spec.unlearning();
  EXPECT_EQ(u.method(), "scratch");
  EXPECT_EQ(u.deletion(), "single");
  EXPECT_EQ(u.group_size(), 1u);
  EXPECT_EQ(u.seed_policy(), "shared");
  EXPECT_EQ(u.features_size(), 5);
  EXPECT_EQ(u.attack_classifiers_size(), 3);
  ASSERT_EQ(u.defenses_size(), 1);
  EXPECT_EQ(u.defenses(0), "none");
  EXPECT_FALSE(u.has_sisa());
  EXPECT_FALSE(u.has_dp_sgd());

  v1::AuditSpec sisa;

  sisa.set_name("test");
  sisa.mutable_unlearning()->set_method("sisa");
  sisa.mutable_unlearning()->mutable_dp_sgd();
  ApplyDefaults(&sisa);
  MEMAUDIT_EXPECT_OK(ValidateSpec(sisa));
  EXPECT_EQ(sisa.unlearning().sisa().shards(), 5u);
  EXPECT_EQ(sisa.unlearning().sisa().slices(), 1u);
  EXPECT_EQ(sisa.unlearning().dp_sgd().clip_norm(), 1.0);
  EXPECT_EQ(sisa.unlearning().dp_sgd().delta(), 1e-5);
}

TEST(UnlearningSpecTest, EveryBadFieldIsNamedWithItsRule) {
  v1::AuditSpec spec = Defaulted();
  v1::UnlearningAudit* u = spec.mutable_unlearning();
  u->mutable_dataset()->set_label_column("species");
  u->mutable_model()->set_architecture("resnet");
  u->mutable_training()->set_optimizer("lbfgs");
  u->mutable_training()->set_learning_rate(-1);
  u->mutable_training()->set_epochs(0);
  u->mutable_training()->set_batch_size(0);
  u->set_method("retrain");
  u->mutable_shadow()->set_samples(1);
  u->mutable_target()->set_originals(0);
  u->mutable_target()->set_unlearned(0);
  u->set_deletion("all");
  u->set_seed_policy("random");
  u->set_features(1, "sorted_sum");
  u->add_attack_classifiers("svm");
  u->add_defenses("top_0");
  u->add_defenses("none");
  u->mutable_dp_sgd()->set_clip_norm(-1);
  u->mutable_dp_sgd()->set_delta(2);
  const std::string message = Problems(spec);
  for (const char* field :
       {"unlearning.dataset.label_column", "unlearning.model.architecture",
        "unlearning.training.optimizer", "unlearning.training.learning_rate",
        "unlearning.training.epochs", "unlearning.training.batch_size", "unlearning.method",
        "unlearning.target.originals", "unlearning.target.unlearned", "unlearning.deletion",
        "unlearning.seed_policy", "unlearning.features[1]", "unlearning.attack_classifiers[3]",
        "unlearning.defenses[1]", "unlearning.defenses[2]", "unlearning.dp_sgd.clip_norm",
        "unlearning.dp_sgd.delta"}) {
    EXPECT_THAT(message, HasSubstr(field));
  }
  EXPECT_THAT(message, HasSubstr("unlearning.shadow.samples: must be >= 2 (got 1)"));
  EXPECT_THAT(message, HasSubstr("\"none\" is listed twice"));
}

TEST(UnlearningSpecTest, SizesMustFitThePool) {
  v1::AuditSpec spec = Defaulted();
  v1::UnlearningAudit* u = spec.mutable_unlearning();
  u->mutable_dataset()->set_pool_size(1000);  // 500 per side: 400 positive, 100 negative
  u->mutable_shadow()->set_samples(400);
  u->mutable_target()->set_samples(401);
  EXPECT_THAT(Problems(spec), HasSubstr("unlearning.target.samples: must be <= the side's "
                                        "positive pool, 80% of dataset.pool_size / 2 = 400"));
  u->mutable_target()->set_samples(400);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));

  u->set_group_size(2);
  EXPECT_THAT(Problems(spec), HasSubstr("unlearning.group_size: must be 1 with deletion"));
  u->set_deletion("group");
  u->set_group_size(400);
  EXPECT_THAT(Problems(spec), HasSubstr("unlearning.group_size: must be <= shadow.samples - 1"));
  u->set_group_size(101);  // more positives than the 100 negatives
  EXPECT_THAT(Problems(spec), HasSubstr("need as many negatives"));
  u->set_group_size(100);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  u->set_deletion("online");  // 15 of the 100 negatives become the pool of new samples
  u->set_group_size(16);
  EXPECT_THAT(Problems(spec), HasSubstr("pool of new samples holds 15"));
  u->set_group_size(15);
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
}

TEST(UnlearningSpecTest, MethodSpecificFields) {
  v1::AuditSpec spec = Defaulted();
  v1::UnlearningAudit* u = spec.mutable_unlearning();
  u->mutable_sisa()->set_shards(3);
  EXPECT_THAT(Problems(spec), HasSubstr("unlearning.sisa: applies to method \"sisa\" only"));
  u->set_method("sisa");
  u->mutable_sisa()->set_slices(200);
  u->set_seed_policy("independent");
  std::string message = Problems(spec);
  EXPECT_THAT(message, HasSubstr("unlearning.sisa.slices: must be in [1, 100] (got 200)"));
  EXPECT_THAT(message, HasSubstr("unlearning.seed_policy: \"independent\" applies to method"));
  u->mutable_sisa()->set_slices(100);
  u->set_seed_policy("shared");
  u->mutable_shadow()->set_samples(299);
  EXPECT_THAT(Problems(spec), HasSubstr("unlearning.shadow.samples: must be >= sisa.shards x "
                                        "sisa.slices = 300"));

  v1::AuditSpec model = Defaulted();
  model.mutable_unlearning()->mutable_model()->add_hidden(8);
  EXPECT_THAT(Problems(model), HasSubstr("unlearning.model.hidden: must be empty for \"logreg\""));
  model.mutable_unlearning()->mutable_model()->set_architecture("torchscript");
  model.mutable_unlearning()->mutable_model()->clear_hidden();
  EXPECT_THAT(Problems(model), HasSubstr("unlearning.model.torchscript_path: required"));
  model.mutable_unlearning()->mutable_model()->set_architecture("cnn");
  model.mutable_unlearning()->mutable_model()->add_hidden(4);
  EXPECT_THAT(Problems(model), HasSubstr("unlearning.model.hidden: \"cnn\" takes"));
  model.mutable_unlearning()->mutable_model()->set_architecture("mlp");
  model.mutable_unlearning()->mutable_model()->set_dropout(1.5);
  EXPECT_THAT(Problems(model), HasSubstr("unlearning.model.dropout: must be in [0, 1)"));

  v1::AuditSpec top = Defaulted();
  top.mutable_unlearning()->add_defenses("top_10");
  top.mutable_unlearning()->add_defenses("top_3");
  top.mutable_unlearning()->add_defenses("label_only");
  top.mutable_unlearning()->add_defenses("temperature");
  EXPECT_THAT(Problems(top), HasSubstr("unlearning.defenses[1]: top_k needs k in [1, 9]"));
  top.mutable_unlearning()->set_defenses(1, "top_9");
  MEMAUDIT_EXPECT_OK(ValidateSpec(top));
}

TEST(UnlearningSpecTest, PlanHasOneTaskPerOriginalWithExactScratchSteps) {
  v1::AuditSpec spec = Defaulted();
  v1::UnlearningAudit* u = spec.mutable_unlearning();
  u->mutable_shadow()->set_originals(3);
  u->mutable_target()->set_originals(2);
  u->mutable_shadow()->set_samples(100);
  u->mutable_shadow()->set_unlearned(4);
  u->mutable_training()->set_batch_size(32);
  u->mutable_training()->set_epochs(2);
  auto plan = PlanAudit(spec);
  MEMAUDIT_ASSERT_OK(plan);
  ASSERT_EQ(plan->tasks.size(), 5u);
  EXPECT_EQ(plan->tasks[0].role, "shadow_original");
  EXPECT_EQ(plan->tasks[2].index, 2u);
  EXPECT_EQ(plan->tasks[3].role, "target_original");
  EXPECT_EQ(plan->tasks[4].index, 1u);
  // Original: 2 x ceil(100 / 32) = 8; each child: 2 x ceil(99 / 32) = 8.
  EXPECT_EQ(plan->tasks[0].steps_total, 8u + 4u * 8u);
  // Online: 100 - 3 + 3 samples per child.
  u->set_deletion("online");
  u->set_group_size(3);
  EXPECT_EQ(PlanAudit(spec)->tasks[0].steps_total, 8u + 4u * 8u);
}

TEST(UnlearningSpecTest, SisaStepsCountOnlyTheRetrainedShards) {
  v1::AuditSpec spec = Defaulted();
  v1::UnlearningAudit* u = spec.mutable_unlearning();
  u->set_method("sisa");
  ApplyDefaults(&spec);
  u->mutable_sisa()->set_shards(4);
  u->mutable_sisa()->set_slices(2);
  u->mutable_shadow()->set_samples(80);
  u->mutable_shadow()->set_unlearned(6);
  u->mutable_training()->set_batch_size(10);
  u->mutable_training()->set_epochs(1);
  MEMAUDIT_ASSERT_OK(ValidateSpec(spec));
  const unlearning::TaskWork work = unlearning::TaskWorkFor(spec, false, 0);
  // Shards of 20, slices of 10: 1 + 2 steps each.
  const uint64_t originals = 4 * 3;
  // A deletion retrains one shard: from slice 0 (1 + 2 steps) or slice 1 (2).
  EXPECT_GE(work.steps, originals + 6 * 2);
  EXPECT_LE(work.steps, originals + 6 * 3);
  EXPECT_EQ(work.models, 4u + 6u);
  EXPECT_EQ(UnlearningTaskSteps(spec, false, 0), work.steps);
  u->set_deletion("online");
  u->set_group_size(2);
  // Two deletions (one or two shards) and one added-to shard per child.
  const unlearning::TaskWork online = unlearning::TaskWorkFor(spec, false, 0);
  EXPECT_GE(online.models, 4u + 6u * 2);
  EXPECT_LE(online.models, 4u + 6u * 3);
}

TEST(UnlearningSpecTest, TaskDataIsAPureFunctionOfSeedSideAndIndex) {
  v1::AuditSpec spec = Defaulted();
  v1::UnlearningAudit* u = spec.mutable_unlearning();
  u->set_deletion("online");
  u->set_group_size(3);
  const unlearning::SidePools shadow = unlearning::PoolsFor(*u, false);
  const unlearning::SidePools target = unlearning::PoolsFor(*u, true);
  EXPECT_EQ(shadow.positive.size(), 2400u);
  EXPECT_EQ(shadow.negative.size() + shadow.replacement.size(), 600u);
  EXPECT_EQ(shadow.replacement.size(), 90u);
  EXPECT_EQ(target.positive.front(), 3000u);

  const unlearning::TaskPlan a = unlearning::PlanTask(spec, true, 1);
  const unlearning::TaskPlan b = unlearning::PlanTask(spec, true, 1);
  EXPECT_EQ(a.train, b.train);
  ASSERT_EQ(a.children.size(), u->target().unlearned());
  EXPECT_NE(a.train, unlearning::PlanTask(spec, true, 0).train);
  EXPECT_EQ(std::set<uint32_t>(a.train.begin(), a.train.end()).size(), a.train.size());
  for (const unlearning::ChildPlan& c : a.children) {
    EXPECT_EQ(c.removed.size(), 3u);
    EXPECT_EQ(c.positives, c.removed);
    EXPECT_EQ(c.negatives.size(), 3u);
    EXPECT_EQ(c.added.size(), 3u);
    for (uint32_t r : c.removed) EXPECT_TRUE(Contains(a.train, r));
    for (uint32_t n : c.negatives) {
      EXPECT_TRUE(Contains(target.negative, n));
      EXPECT_FALSE(Contains(c.added, n));
    }
    for (uint32_t x : c.added) EXPECT_TRUE(Contains(target.replacement, x));
  }
  EXPECT_NE(a.children[0].removed, a.children[1].removed);

  u->set_deletion("remaining");
  u->set_group_size(1);
  for (const unlearning::ChildPlan& c : unlearning::PlanTask(spec, false, 0).children) {
    ASSERT_EQ(c.positives.size(), 1u);
    EXPECT_FALSE(Contains(c.removed, c.positives[0]));
  }
  u->set_deletion("intermediate");
  u->set_group_size(5);
  for (const unlearning::ChildPlan& c : unlearning::PlanTask(spec, false, 0).children) {
    ASSERT_EQ(c.positives.size(), 1u);
    EXPECT_TRUE(Contains(c.removed, c.positives[0]));
  }

  // Shared seeds: every child trains with the original's seeds.
  const auto original = unlearning::OriginalSeeds(spec.seed(), false, 2);
  EXPECT_EQ(unlearning::ChildSeeds(spec, false, 2, 5).init, original.init);
  EXPECT_EQ(unlearning::ChildSeeds(spec, false, 2, 5).order, original.order);
  EXPECT_EQ(unlearning::ChildSeeds(spec, false, 2, 5).noise, original.noise);
  // Except DP-SGD noise, which must be fresh for the guarantee to hold.
  u->mutable_dp_sgd();
  EXPECT_NE(unlearning::ChildSeeds(spec, false, 2, 5).noise, original.noise);
  EXPECT_EQ(unlearning::ChildSeeds(spec, false, 2, 5).init, original.init);
  u->clear_dp_sgd();
  u->set_seed_policy("independent");
  EXPECT_NE(unlearning::ChildSeeds(spec, false, 2, 5).init, original.init);
  EXPECT_NE(unlearning::ChildSeeds(spec, false, 2, 5).init,
            unlearning::ChildSeeds(spec, false, 2, 6).init);
}

}  // namespace
}  // namespace memaudit::spec
