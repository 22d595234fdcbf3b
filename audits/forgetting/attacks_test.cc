#include "audits/forgetting/attacks.h"

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "scoring/calibrated_scores.h"

namespace memaudit::forgetting {
namespace {

TEST(ForgettingAttacksTest, NamesAreUniqueAndOneIsTheDefault) {
  std::set<std::string> names;
  int defaults = 0;
  for (const Attack& a : Attacks()) {
    EXPECT_TRUE(names.insert(a.name).second) << a.name;
    EXPECT_NE(a.score, nullptr) << a.name;
    defaults += a.is_default;
  }
  EXPECT_EQ(defaults, 1);
  EXPECT_STREQ(DefaultAttack().name, "checkpoint_calibrated");
  EXPECT_TRUE(FindAttack("lira_online")->uses_reference_models);
  EXPECT_TRUE(FindAttack("lira_references")->uses_reference_models);
  EXPECT_FALSE(FindAttack("deterministic_replay")->uses_reference_models);
  EXPECT_EQ(FindAttack("exposure"), nullptr) << "LM canaries are scored by exposure, not here";
  EXPECT_EQ(FindAttack("lira"), nullptr);
}

// Each entry's score function is the one its name promises.
TEST(ForgettingAttacksTest, EachEntryScoresAsItsNameSays) {
  const std::vector<double> phi = {0.5, -1.0, 2.0}, loss = {0.7, 1.5, 0.1};
  const std::vector<double> phi_ckpt = {0.25, 0.0, 1.0}, loss_ckpt = {0.9, 1.0, 0.3};
  const std::vector<double> replay = {0.5, -0.5, 1.0};
  const std::vector<double> out0 = {0.1, -0.2, 0.4}, out1 = {-0.3, 0.2, 0.8};
  const std::vector<double> in0 = {0.9, 0.1, 2.2}, in1 = {0.7, -0.4, 1.9};
  const std::vector<const std::vector<double>*> out = {&out0, &out1}, in = {&in0, &in1};
  const ArmSignals s{phi, loss, phi_ckpt, loss_ckpt, &replay, out, in, false};
  EXPECT_EQ(*FindAttack("checkpoint_calibrated")->score(s),
            *scoring::CheckpointCalibratedScores(phi, phi_ckpt));
  EXPECT_EQ(*FindAttack("calibrated_loss")->score(s),
            *scoring::CalibratedLossScores(loss, loss_ckpt));
  EXPECT_EQ(*FindAttack("uncalibrated")->score(s), phi);
  EXPECT_EQ(*FindAttack("deterministic_replay")->score(s), (std::vector<double>{0.0, 0.5, 1.0}));
  EXPECT_EQ(*FindAttack("lira_references")->score(s),
            *ForgettingLiraScores(phi, out, {}, /*online=*/false, false));
  EXPECT_EQ(*FindAttack("lira_online")->score(s),
            *ForgettingLiraScores(phi, out, in, /*online=*/true, false));
  const ArmSignals no_replay{phi, loss, phi_ckpt, loss_ckpt, nullptr, out, in, false};
  EXPECT_FALSE(FindAttack("deterministic_replay")->score(no_replay).ok());
}

TEST(ForgettingAttacksTest, TheDocsBulletsAreThisTable) {
  std::ifstream file(std::string(MEMAUDIT_SOURCE_DIR) + "/docs/audits/forgetting.md");
  ASSERT_TRUE(file) << "docs/audits/forgetting.md";
  std::stringstream raw;
  raw << file.rdbuf();
  // Bullets wrap: compare with every run of whitespace as one space.
  const std::string docs = std::regex_replace(raw.str(), std::regex("\\s+"), " ");
  for (const Attack& a : Attacks()) {
    const std::string bullet = absl::StrCat("- `", a.name, "`: ", a.doc);
    EXPECT_NE(docs.find(bullet), std::string::npos) << "docs/audits/forgetting.md lacks " << bullet;
  }
}

}  // namespace
}  // namespace memaudit::forgetting
