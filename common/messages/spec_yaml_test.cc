#include "common/messages/spec_yaml.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

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

// Every unknown key at once, at any depth, with the nearest field; with a
// list to collect them, the rest of the spec still parses.
TEST(SpecYamlTest, EveryUnknownFieldIsNamedWithTheNearestField) {
  constexpr char kYaml[] =
      "nam: x\n"
      "membership:\n"
      "  model: {hiden: [8]}\n"
      "  reference_models: 8\n"
      "  zzzzzzzz: 1\n"
      "resources: {modelsPerTask: 2}\n";
  auto refused = ParseSpecYaml(kYaml, "bad.yaml");
  ASSERT_FALSE(refused.ok());
  const std::string message(refused.status().message());
  EXPECT_THAT(message, ::testing::HasSubstr("bad.yaml: 3 unknown field(s):"));
  EXPECT_THAT(message, ::testing::HasSubstr("nam: unknown field; did you mean \"name\"?"));
  EXPECT_THAT(message, ::testing::HasSubstr(
                           "membership.model.hiden: unknown field; did you mean \"hidden\"?"));
  EXPECT_THAT(message,
              ::testing::HasSubstr("membership.zzzzzzzz: unknown field of MembershipAudit"));
  std::vector<UnknownSpecField> unknown;
  auto spec = ParseSpecYaml(kYaml, "bad.yaml", &unknown);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(unknown.size(), 3u);
  EXPECT_EQ(spec->membership().reference_models(), 8u);
  EXPECT_EQ(spec->resources().models_per_task(), 2u) << "a JSON name is a known field";
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

TEST(SpecYamlTest, AliasesWithinTheBudgetExpand) {
  auto json = YamlToJson("a: &x {b: 1, c: [2, 3]}\nd: *x\n");
  MEMAUDIT_ASSERT_OK(json);
  EXPECT_EQ(*json, R"({"a":{"b":1,"c":[2,3]},"d":{"b":1,"c":[2,3]}})");
}

TEST(SpecYamlTest, OutOfRangeNumbersAreFieldErrors) {
  for (const char* number : {"1e9999", "-1e9999", "1e-9999", "+1e9999", "18446744073709551616",
                             "-9223372036854775809"}) {
    auto spec =
        ParseSpecYaml(absl::StrCat("name: x\nseed: ", number, "\nmembership: {}\n"), "x.yaml");
    EXPECT_THAT(spec, StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("x.yaml: line 2, column 7: seed: number out of range")))
        << number;
  }
  auto nested = YamlToJson("membership:\n  fpr_points: [0.1, 1e400]\n");
  EXPECT_THAT(nested, StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("membership.fpr_points[1]: number out of range")));
}

TEST(SpecYamlTest, ALongNumberIsCutInTheMessage) {
  const std::string digits(500000, '9');
  auto spec = ParseSpecYaml(absl::StrCat("name: x\nseed: ", digits, "\n"), "x.yaml");
  ASSERT_THAT(spec, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("seed: number out")));
  EXPECT_LT(spec.status().message().size(), 300u);
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("(500000 bytes)"));
}

TEST(SpecYamlTest, DuplicateKeysAreRefused) {
  auto json = YamlToJson("membership:\n  reference_models: 4\n  reference_models: 8\n");
  EXPECT_THAT(json, StatusIs(absl::StatusCode::kInvalidArgument,
                             HasSubstr("line 3, column 3: membership.reference_models: duplicate "
                                       "key")));
}

TEST(SpecYamlTest, KeysMustBeScalars) {
  EXPECT_THAT(YamlToJson("? [a, b]\n: 1\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a key must be")));
}

TEST(SpecYamlTest, AliasBombStopsAtTheNodeBudget) {
  std::string yaml = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  const std::string names = "abcdefghi";
  for (size_t i = 1; i < names.size(); ++i) {
    const std::string prev = absl::StrCat("*", names.substr(i - 1, 1));
    absl::StrAppend(&yaml, names.substr(i, 1), ": &", names.substr(i, 1), " [", prev);
    for (int k = 0; k < 8; ++k) absl::StrAppend(&yaml, ", ", prev);
    yaml += "]\n";
  }
  EXPECT_THAT(YamlToJson(yaml), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("expands to more than 100000 nodes")));
}

TEST(SpecYamlTest, AliasesOfLongScalarsStopAtTheByteBudget) {
  std::string yaml = absl::StrCat("a: &a ", std::string(500000, 'x'), "\nb: [");
  for (int k = 0; k < 20; ++k) yaml += "*a, ";
  yaml += "*a]\n";
  EXPECT_THAT(YamlToJson(yaml), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("expands to more than 4194304 bytes")));
}

TEST(SpecYamlTest, DepthIsBounded) {
  const std::string deep = std::string(65, '[') + std::string(65, ']');
  EXPECT_THAT(YamlToJson(absl::StrCat("a: ", deep, "\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nested deeper than 64")));
  const std::string ok = std::string(60, '[') + std::string(60, ']');
  MEMAUDIT_EXPECT_OK(YamlToJson(absl::StrCat("a: ", ok, "\n")));
  // Far past yaml-cpp's own recursion guard: still an error, not a crash.
  const std::string deeper = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THAT(YamlToJson(deeper), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(SpecYamlTest, DocumentSizeIsCheckedBeforeParsing) {
  const std::string yaml = absl::StrCat("seed: 1\nname: ", std::string(kMaxSpecBytes, 'a'), "\n");
  auto spec = ParseSpecYaml(yaml, "big.yaml");
  EXPECT_THAT(spec, StatusIs(absl::StatusCode::kInvalidArgument,
                             HasSubstr("big.yaml: line 2: name: the spec is 1048591 bytes; at most "
                                       "1048576")));
}

TEST(SpecYamlTest, EmptyNameIsRefusedAndMissingNameIsTheFiles) {
  EXPECT_THAT(
      ParseSpecYaml("name: ''\nmembership: {}\n", "x.yaml"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("x.yaml: name: must not be empty")));
  EXPECT_THAT(ParseSpecYaml("name:\nmembership: {}\n", "x.yaml"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("name: must not be empty")));
  auto named = ParseSpecYaml("membership: {}\n", "dir/quick-start.yaml");
  MEMAUDIT_ASSERT_OK(named);
  EXPECT_EQ(named->name(), "quick-start");
  auto piped = ParseSpecYaml("membership: {}\n", "<stdin>");
  MEMAUDIT_ASSERT_OK(piped);
  EXPECT_EQ(piped->name(), "audit");
}

TEST(SpecYamlTest, ExplicitZeroDigitsAreRefused) {
  EXPECT_THAT(ParseSpecYaml("name: x\nexposure: {canary: {digits: 0}}\n", "x.yaml"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("exposure.canary.digits: must be in [1, 18] (got 0)")));
  MEMAUDIT_EXPECT_OK(ParseSpecYaml("name: x\nexposure: {canary: {digits: 3}}\n", "x.yaml"));
}

// `models_per_task: auto` leaves the field unset (the coordinator picks);
// an explicit 0 would read as auto by accident, so it is refused.
TEST(SpecYamlTest, ModelsPerTaskAutoLeavesTheFieldUnset) {
  auto spec = ParseSpecYaml("name: x\nresources: {models_per_task: auto}\n", "x.yaml");
  MEMAUDIT_ASSERT_OK(spec);
  EXPECT_TRUE(spec->has_resources());
  EXPECT_EQ(spec->resources().models_per_task(), 0u);
  spec = ParseSpecYaml("name: x\nresources: {models_per_task: 8}\n", "x.yaml");
  MEMAUDIT_ASSERT_OK(spec);
  EXPECT_EQ(spec->resources().models_per_task(), 8u);
  EXPECT_THAT(ParseSpecYaml("name: x\nresources: {models_per_task: 0}\n", "x.yaml"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("resources.models_per_task: must be in [1, 64] or auto (got 0)")));
  // Any other word is the parser's error, naming the field.
  EXPECT_THAT(ParseSpecYaml("name: x\nresources: {models_per_task: many}\n", "x.yaml"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("models_per_task")));
}

TEST(SpecYamlTest, InvalidUtf8IsRefused) {
  EXPECT_THAT(YamlToJson("name: \"a\\xff\"\nb: \"\xc3\"\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("b: not valid UTF-8")));
}

TEST(SpecYamlTest, RootMustBeAMap) {
  EXPECT_THAT(ParseSpecYaml("[1, 2]\n", "x.yaml"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a spec is a map")));
}

TEST(SpecYamlTest, QuoteValueEscapesAndCuts) {
  EXPECT_EQ(QuoteValue("abc"), "\"abc\"");
  EXPECT_EQ(QuoteValue("a\"b\\c\nd\x01"), R"("a\"b\\c\nd\x01")");
  const std::string cut = QuoteValue(std::string(1000, 'z'));
  EXPECT_EQ(cut, absl::StrCat("\"", std::string(64, 'z'), "\"\u2026 (1000 bytes)"));
  // A two-byte character straddling the cut is left out whole.
  const std::string utf8 = QuoteValue(std::string(63, 'a') + "\u00e9" + std::string(10, 'b'));
  EXPECT_EQ(utf8, absl::StrCat("\"", std::string(63, 'a'), "\"\u2026 (75 bytes)"));
}

}  // namespace
}  // namespace memaudit
