#include "spec/diff.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/spec_validator.h"

namespace memaudit::spec {
namespace {

using ::testing::HasSubstr;

TEST(DiffTest, TheDifferenceIntervalCombinesBothIntervalsMover) {
  // a = 0.7 [0.65, 0.74], b = 0.6 [0.57, 0.66]: 0.1 - sqrt(0.05^2 + 0.06^2),
  // 0.1 + sqrt(0.04^2 + 0.03^2) = [0.021898, 0.15].
  const MetricReading d = DifferenceOf({0.7, 0.65, 0.74}, {0.6, 0.57, 0.66});
  EXPECT_NEAR(d.value, 0.1, 1e-15);
  EXPECT_NEAR(d.low, 0.1 - std::sqrt(0.0025 + 0.0036), 1e-15);
  EXPECT_NEAR(d.high, 0.15, 1e-15);
}

v1::AuditResults Results(double auc, double low, double high) {
  v1::AuditResults r;
  r.set_audit_id("a");
  r.set_complete(true);
  v1::AuditSpec* spec = r.mutable_spec();
  spec->set_seed(1);
  spec->mutable_membership()->set_reference_models(4);
  spec->mutable_membership()->add_attacks("loss");
  ApplyDefaults(spec);
  v1::AttackResult* a = r.add_attacks();
  a->set_attack(v1::LOSS);
  a->set_auc(auc);
  a->set_auc_rerun_low(low);
  a->set_auc_rerun_high(high);
  return r;
}

TEST(DiffTest, ASignificantRiseIsWorseAnOverlapIsNot) {
  auto changes = DiffResults(Results(0.6, 0.58, 0.62), Results(0.7, 0.68, 0.72));
  ASSERT_TRUE(changes.ok()) << changes.status();
  ASSERT_FALSE(changes->empty());
  EXPECT_EQ((*changes)[0].metric, "loss.auc");
  EXPECT_TRUE((*changes)[0].significant);
  EXPECT_TRUE((*changes)[0].worse);
  const v1::DiffResponse proto = DiffProto(*changes);
  ASSERT_EQ(proto.changes_size(), static_cast<int>(changes->size()));
  EXPECT_TRUE(proto.changes(0).worse());
  EXPECT_DOUBLE_EQ(proto.changes(0).difference().value(), (*changes)[0].difference->value);
  EXPECT_TRUE(proto.changes(0).has_old_reading());
  // The same audit twice: nothing changed.
  auto same = DiffResults(Results(0.6, 0.58, 0.62), Results(0.6, 0.58, 0.62));
  ASSERT_TRUE(same.ok());
  for (const MetricChange& c : *same) EXPECT_FALSE(c.significant) << c.metric;
}

TEST(DiffTest, OnlyCompleteAuditsOfOneKindCompare) {
  v1::AuditResults other = Results(0.6, 0.58, 0.62);
  other.mutable_spec()->mutable_dp_audit();
  EXPECT_THAT(std::string(DiffResults(Results(0.6, 0.5, 0.7), other).status().message()),
              HasSubstr("only audits of one kind compare"));
  v1::AuditResults partial = Results(0.6, 0.58, 0.62);
  partial.set_complete(false);
  EXPECT_THAT(std::string(DiffResults(partial, partial).status().message()),
              HasSubstr("OLD: audit a has no complete results"));
}

}  // namespace
}  // namespace memaudit::spec
