#include "audits/dp_audit/spec.h"

#include "audits/dp_audit/signals.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/planner.h"

namespace memaudit::spec {
namespace {

using ::testing::HasSubstr;

v1::AuditSpec DpAudit(const std::string& canary_type = "") {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(1);
  spec.mutable_dp_audit()->set_canary_type(canary_type);
  if (canary_type == "gradient") spec.mutable_dp_audit()->mutable_dp_sgd()->set_noise_multiplier(1);
  ApplyDefaults(&spec);
  return spec;
}

std::string Problems(const v1::AuditSpec& spec) {
  absl::Status s = ValidateSpec(spec);
  return s.ok() ? "" : std::string(s.message());
}

TEST(DpAuditSpecTest, DefaultsAreRunnable) {
  const v1::AuditSpec spec = DpAudit();
  EXPECT_EQ(Problems(spec), "");
  const v1::DpAudit& d = spec.dp_audit();
  EXPECT_EQ(d.canaries(), 1000u);
  EXPECT_EQ(d.canary_type(), "input");
  EXPECT_EQ(d.runs(), 1u);
  EXPECT_EQ(d.confidence(), 0.95);
  EXPECT_EQ(d.delta(), 1e-5);
  EXPECT_EQ(d.dataset().pool_size(), 10000u);
  EXPECT_EQ(Problems(DpAudit("gradient")), "");
}

TEST(DpAuditSpecTest, TheClaimsDeltaIsDpSgdsUnlessGiven) {
  v1::AuditSpec spec;
  spec.set_seed(1);
  spec.mutable_dp_audit()->mutable_dp_sgd()->set_delta(1e-6);
  ApplyDefaults(&spec);
  EXPECT_EQ(spec.dp_audit().delta(), 1e-6);
  EXPECT_EQ(spec.dp_audit().dp_sgd().clip_norm(), 1.0);
}

TEST(DpAuditSpecTest, BadFieldsAreNamed) {
  v1::AuditSpec spec = DpAudit();
  v1::DpAudit* d = spec.mutable_dp_audit();
  d->set_canaries(200'000);
  d->set_runs(17);
  d->set_confidence(1);
  d->set_delta(0);
  d->mutable_training()->set_optimizer("adam");
  const std::string problems = Problems(spec);
  EXPECT_THAT(problems, HasSubstr("dp_audit.canaries: must be in [1, 100000]"));
  EXPECT_THAT(problems, HasSubstr("dp_audit.runs: must be in [1, 16]"));
  EXPECT_THAT(problems, HasSubstr("dp_audit.confidence: must be in (0, 1)"));
  EXPECT_THAT(problems, HasSubstr("dp_audit.delta: must be in (0, 1)"));
  EXPECT_THAT(problems, HasSubstr("dp_audit.training.optimizer"));

  spec = DpAudit();
  spec.mutable_dp_audit()->set_canary_type("gradient");  // without dp_sgd
  EXPECT_THAT(Problems(spec), HasSubstr("dp_audit.canary_type: \"gradient\" canaries enter"));
  spec.mutable_dp_audit()->set_canary_type("output");
  EXPECT_THAT(Problems(spec), HasSubstr("dp_audit.canary_type"));

  spec = DpAudit();
  spec.mutable_dp_audit()->mutable_dataset()->set_pool_size(1005);  // 1000 canaries + 5
  EXPECT_THAT(Problems(spec), HasSubstr("dp_audit.dataset.pool_size: must be in [1010, "));
  spec = DpAudit();
  spec.mutable_dp_audit()->mutable_dp_sgd()->set_noise_multiplier(-1);
  EXPECT_THAT(Problems(spec), HasSubstr("dp_audit.dp_sgd.noise_multiplier: must be >= 0"));
}

TEST(DpAuditSpecTest, OneTaskPerRun) {
  v1::AuditSpec spec = DpAudit();
  spec.mutable_dp_audit()->set_runs(3);
  auto plan = PlanAudit(spec);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<PlannedTask>& tasks = plan->tasks;
  ASSERT_EQ(tasks.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(tasks[i].role, dp_audit::kRunRole);
    EXPECT_EQ(tasks[i].index, i);
    // 9000 training examples and up to 1000 canaries, 5 epochs of 64.
    EXPECT_EQ(tasks[i].steps_total, 5u * ((10000 + 63) / 64));
  }
}

TEST(DpAuditSpecTest, EachRunDrawsItsOwnInclusionAboutHalf) {
  const v1::AuditSpec spec = DpAudit();
  const std::vector<uint8_t> a = dp_audit::Included(spec, 0), b = dp_audit::Included(spec, 1);
  ASSERT_EQ(a.size(), 1000u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, dp_audit::Included(spec, 0));
  size_t in = 0;
  for (uint8_t bit : a) in += bit;
  EXPECT_GT(in, 430u);  // Binomial(1000, 1/2): within 4.4 standard deviations
  EXPECT_LT(in, 570u);
}

}  // namespace
}  // namespace memaudit::spec
