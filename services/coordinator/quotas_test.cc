#include "services/coordinator/quotas.h"

#include <unistd.h>

#include <fstream>
#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::coordinator {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Optional;

TEST(QuotaFileTest, ParsesDefaultsAndTeamsAndMergesThem) {
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(QuotaConfig config, ParseQuotaFile(R"yaml(
# limits for the shared cluster
default:
  max_concurrent_audits: 4
  max_queued_tasks: 512
  max_models_per_audit: 64
teams:
  alpha:
    max_concurrent_audits: 8
    max_spec_bytes: 65536
  beta: {}
  gamma:
)yaml"));
  EXPECT_THAT(config.defaults.max_concurrent_audits, Optional(4u));
  EXPECT_EQ(config.defaults.max_spec_bytes, std::nullopt);
  ASSERT_EQ(config.teams.size(), 3u);

  const QuotaLimits alpha = config.For("alpha");
  EXPECT_THAT(alpha.max_concurrent_audits, Optional(8u));
  EXPECT_THAT(alpha.max_queued_tasks, Optional(512u));  // from default
  EXPECT_THAT(alpha.max_models_per_audit, Optional(64u));
  EXPECT_THAT(alpha.max_spec_bytes, Optional(65536u));
  for (const char* team : {"beta", "gamma", "not-listed"}) {
    const QuotaLimits limits = config.For(team);
    EXPECT_THAT(limits.max_concurrent_audits, Optional(4u)) << team;
    EXPECT_EQ(limits.max_spec_bytes, std::nullopt) << team;
  }
}

TEST(QuotaFileTest, ATeamMaySetItsWeight) {
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(QuotaConfig config, ParseQuotaFile(R"yaml(
default:
  max_concurrent_audits: 4
teams:
  alpha:
    weight: 3
    max_concurrent_audits: 8
  beta:
    weight: 1000
  gamma: {}
)yaml"));
  EXPECT_EQ(config.WeightOf("alpha"), 3u);
  EXPECT_EQ(config.WeightOf("beta"), 1000u);
  EXPECT_EQ(config.WeightOf("gamma"), 1u);
  EXPECT_EQ(config.WeightOf("not-listed"), 1u);
  EXPECT_EQ(config.WeightOf(""), 1u);
  // A weight is not a limit: the limits are as without it.
  EXPECT_THAT(config.For("alpha").max_concurrent_audits, Optional(8u));
  EXPECT_THAT(config.For("beta").max_concurrent_audits, Optional(4u));
}

TEST(QuotaFileTest, AnEmptyFileLimitsNothing) {
  for (const char* text : {"", "# nothing\n", "default:\nteams:\n"}) {
    MEMAUDIT_ASSERT_OK_AND_ASSIGN(QuotaConfig config, ParseQuotaFile(text));
    const QuotaLimits limits = config.For("alpha");
    EXPECT_FALSE(limits.max_concurrent_audits || limits.max_queued_tasks ||
                 limits.max_models_per_audit || limits.max_spec_bytes)
        << text;
  }
}

TEST(QuotaFileTest, ZeroIsALimit) {
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(
      QuotaConfig config, ParseQuotaFile("teams:\n  blocked:\n    max_concurrent_audits: 0\n"));
  EXPECT_THAT(config.For("blocked").max_concurrent_audits, Optional(0u));
}

// Each bad file is refused naming the line and the key.
TEST(QuotaFileTest, BadFilesAreRefusedNamingTheLineAndKey) {
  struct Case {
    const char* text;
    const char* line;
    const char* says;
  };
  const Case cases[] = {
      {"default:\n  max_audits: 3\n", "line 2: ", "\"default.max_audits\": unknown limit"},
      {"teams:\n  alpha:\n    max_queued_tasks: -1\n",
       "line 3: ", "teams.alpha.max_queued_tasks: must be a whole number in [0, "},
      {"teams:\n  alpha:\n    max_queued_tasks: 1.5\n", "line 3: ", "(got \"1.5\")"},
      {"teams:\n  alpha:\n    max_queued_tasks: lots\n", "line 3: ", "(got \"lots\")"},
      {"default:\n  max_spec_bytes: 99999999999999999999999\n",
       "line 2: ", "default.max_spec_bytes: must be a whole number"},
      {"default:\n  max_spec_bytes: [1]\n", "line 2: ", "(got a list)"},
      {"teams:\n  alpha:\n    weight: 0\n",
       "line 3: ", "teams.alpha.weight: must be a whole number in [1, 1000] (got \"0\")"},
      {"teams:\n  alpha:\n    weight: 1001\n", "line 3: ", "teams.alpha.weight: must be"},
      {"teams:\n  alpha:\n    weight: 1.5\n", "line 3: ", "(got \"1.5\")"},
      {"teams:\n  alpha:\n    weight: -2\n", "line 3: ", "(got \"-2\")"},
      {"teams:\n  alpha:\n    weights: 2\n", "line 3: ",
       "\"teams.alpha.weights\": unknown limit (known: max_concurrent_audits, "
       "max_queued_tasks, max_models_per_audit, max_spec_bytes, and the team's "
       "weight)"},
      {"default:\n  weight: 2\n",
       "line 2: ", "\"default.weight\": a weight is a team's own: set it under teams.NAME.weight"},
      {"default:\n  max_spec_bytes: 1\n  max_spec_bytes: 2\n",
       "line 3: ", "\"default.max_spec_bytes\": duplicate key"},
      {"teams:\n  alpha: {}\n  alpha: {}\n", "line 3: ", "\"teams.alpha\": duplicate key"},
      {"teams:\n  \"al pha\": {}\n", "line 2: ", "\"teams.al pha\": a team name is 1 to 64"},
      {"teams:\n  - alpha\n", "line 2: ", "teams: must be a map (got a list)"},
      {"team:\n  alpha: {}\n", "line 1: ", "\"team\": unknown key (known: default, teams)"},
      {"just text\n", "line 1: ", "the file: must be a map"},
      {"default: {max_concurrent_audits: 1\n", "not valid YAML: line ", ""},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseQuotaFile(c.text), StatusIs(absl::StatusCode::kInvalidArgument,
                                                 AllOf(HasSubstr(c.line), HasSubstr(c.says))))
        << c.text;
  }
}

TEST(QuotaFileTest, TheFileIsBounded) {
  std::string big = "# " + std::string(kMaxQuotaFileBytes, 'x') + "\n";
  EXPECT_THAT(ParseQuotaFile(big),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("larger than 1048576 bytes")));
  std::string many = "teams:\n";
  for (size_t i = 0; i <= kMaxQuotaTeams; ++i) many += "  t" + std::to_string(i) + ": {}\n";
  EXPECT_THAT(ParseQuotaFile(many),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("line 10002: teams: at most 10000 teams"))));
}

TEST(QuotaFileTest, LoadNamesThePath) {
  const std::string path = ::testing::TempDir() + "/quotas_" + std::to_string(getpid()) + ".yaml";
  std::ofstream(path) << "default:\n  max_models: 3\n";
  EXPECT_THAT(LoadQuotaFile(path), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr(path + ": line 2: \"default.max_models\"")));
  unlink(path.c_str());
  EXPECT_THAT(LoadQuotaFile(path), StatusIs(absl::StatusCode::kNotFound, HasSubstr(path)));
}

TEST(CheckQuotaTest, EachRefusalNamesItsLimitTheOwnerAndTheNumbers) {
  QuotaLimits limits;
  limits.max_concurrent_audits = 2;
  limits.max_queued_tasks = 10;
  limits.max_models_per_audit = 8;
  limits.max_spec_bytes = 1000;
  QuotaUsage usage{/*active_audits=*/1, /*queued_tasks=*/4, /*planned_tasks=*/6,
                   /*planned_models=*/8, /*spec_bytes=*/1000};
  MEMAUDIT_EXPECT_OK(CheckQuota(limits, "team alpha", usage));

  std::string limit;
  QuotaUsage over = usage;
  over.active_audits = 2;
  EXPECT_THAT(CheckQuota(limits, "team alpha", over, &limit),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "quota max_concurrent_audits for team alpha: 2 audits running or queued, "
                       "at most 2"));
  EXPECT_EQ(limit, "max_concurrent_audits");
  over = usage;
  over.planned_tasks = 7;
  EXPECT_THAT(CheckQuota(limits, "team alpha", over, &limit),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "quota max_queued_tasks for team alpha: 4 tasks queued or running and 7 "
                       "more planned, at most 10"));
  EXPECT_EQ(limit, "max_queued_tasks");
  over = usage;
  over.planned_models = 9;
  EXPECT_THAT(CheckQuota(limits, "admin root", over, &limit),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "quota max_models_per_audit for admin root: the audit plans 9 models, at "
                       "most 8"));
  over = usage;
  over.spec_bytes = 1001;
  EXPECT_THAT(
      CheckQuota(limits, "team alpha", over, &limit),
      StatusIs(absl::StatusCode::kResourceExhausted,
               "quota max_spec_bytes for team alpha: the spec is 1001 bytes, at most 1000"));
  EXPECT_EQ(limit, "max_spec_bytes");

  MEMAUDIT_EXPECT_OK(
      CheckQuota(QuotaLimits{}, "team alpha", QuotaUsage{1000, 1000, 1000, 1000, 1000}));
}

}  // namespace
}  // namespace memaudit::coordinator
