#include "common/spec_yaml.h"

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit {
namespace {

using ::memaudit::testing::StatusIs;

TEST(SpecYamlTest, ParsesAMembershipSpec) {
  auto spec = ParseSpecYaml(R"(
name: quick
seed: 18446744073709551615
membership:
  dataset: {name: fashion_mnist, pool_size: 2000}
  model: {architecture: mlp, hidden: [128]}
  training: {learning_rate: 0.05, momentum: 0.9, epochs: 20, batch_size: 64}
  reference_models: 16
  attacks: [lira_online, loss]
  fpr_points: [0.01, 1e-3]
)",
                            "test.yaml");
  MEMAUDIT_ASSERT_OK(spec);
  EXPECT_EQ(spec->name(), "quick");
  EXPECT_EQ(spec->seed(), 18446744073709551615ULL);
  ASSERT_TRUE(spec->has_membership());
  EXPECT_EQ(spec->membership().dataset().pool_size(), 2000u);
  EXPECT_EQ(spec->membership().model().hidden(0), 128u);
  EXPECT_DOUBLE_EQ(spec->membership().training().learning_rate(), 0.05);
  EXPECT_EQ(spec->membership().attacks(1), "loss");
  EXPECT_DOUBLE_EQ(spec->membership().fpr_points(1), 0.001);
}

TEST(SpecYamlTest, UnknownFieldIsNamed) {
  auto spec = ParseSpecYaml("membership:\n  reference_modelz: 16\n", "bad.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_NE(spec.status().message().find("bad.yaml"), std::string::npos);
  EXPECT_NE(spec.status().message().find("reference_modelz"), std::string::npos);
}

TEST(SpecYamlTest, BrokenYamlGivesLineNumber) {
  auto spec = ParseSpecYaml("membership: [1, 2\n", "broken.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("line"), std::string::npos);
}

TEST(SpecYamlTest, QuotedNumbersStayStrings) {
  auto json = YamlToJson("a: '12'\nb: 12\nc: .5\nd: true\n");
  MEMAUDIT_ASSERT_OK(json);
  EXPECT_EQ(*json, R"({"a":"12","b":12,"c":0.5,"d":true})");
}

}  // namespace
}  // namespace memaudit
