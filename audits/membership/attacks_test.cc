#include "audits/membership/attacks.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "scoring/lira.h"

namespace memaudit::membership {
namespace {

TEST(MembershipAttacksTest, OneEntryPerEnumValueInTheEnumsOrder) {
  const google::protobuf::EnumDescriptor& e = *v1::MembershipAttack_descriptor();
  std::vector<int> values;
  for (int i = 0; i < e.value_count(); ++i) {
    if (e.value(i)->number() != v1::MEMBERSHIP_ATTACK_UNSPECIFIED) {
      values.push_back(e.value(i)->number());
    }
  }
  ASSERT_EQ(Attacks().size(), values.size()) << "every MembershipAttack value needs an entry";
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(Attacks()[i].id, values[i]) << "entry " << i;
    EXPECT_NE(Attacks()[i].score, nullptr) << "entry " << i;
  }
}

TEST(MembershipAttacksTest, DefaultsAndTheirNeeds) {
  std::vector<std::string> defaults;
  for (const Attack& a : Attacks()) {
    if (a.is_default) defaults.push_back(AttackName(a.id));
  }
  EXPECT_EQ(defaults,
            (std::vector<std::string>{"lira_online", "lira_offline", "lira_online_fixed_variance",
                                      "lira_offline_fixed_variance", "rmia", "loss"}));
  EXPECT_EQ(FindAttack("lira_online")->min_reference_models, 6u);
  EXPECT_EQ(FindAttack("lira_offline_two_sided")->min_reference_models, 6u);
  EXPECT_EQ(FindAttack("lira_online_fixed_variance")->min_reference_models, 4u);
  EXPECT_TRUE(FindAttack("rmia")->needs_population);
  EXPECT_FALSE(FindAttack("loss")->needs_population);
  EXPECT_FALSE(FindAttack("loss")->uses_reference_models) << "it scores the target alone";
  for (const Attack& a : Attacks()) {
    // The loss and the text attacks score the target alone.
    EXPECT_EQ(a.uses_reference_models, a.id != v1::LOSS && !a.needs_documents) << AttackName(a.id);
  }
  EXPECT_EQ(FindAttack("lira"), nullptr);
  EXPECT_EQ(FindAttack(""), nullptr);
  EXPECT_EQ(FindAttack("membership_attack_unspecified"), nullptr);
}

TEST(MembershipAttacksTest, DocumentsGetTheTextAttacksAndTheReferenceRatioToo) {
  v1::MembershipAudit documents;
  documents.mutable_documents();
  std::vector<std::string> defaults, text;
  for (const Attack& a : Attacks()) {
    if (IsDefault(a, documents)) defaults.push_back(AttackName(a.id));
    if (a.needs_documents) text.push_back(AttackName(a.id));
    EXPECT_TRUE(!a.needs_documents || !IsDefault(a, v1::MembershipAudit()));
  }
  EXPECT_EQ(defaults,
            (std::vector<std::string>{"lira_online", "lira_offline", "lira_online_fixed_variance",
                                      "lira_offline_fixed_variance", "rmia", "loss", "zlib",
                                      "min_k", "min_k_plus", "reference"}));
  EXPECT_EQ(text, (std::vector<std::string>{"zlib", "min_k", "min_k_plus"}));
}

// The text attacks are the worker's per-sequence scores as they are; the
// reference ratio is φ minus the mean φ of the target's OUT references, by
// hand: 3 models, 2 examples.
TEST(MembershipAttacksTest, TextAttacksAndTheReferenceRatioByHand) {
  scoring::Matrix phi(3, 2), loss(3, 2), population(3, 0), zlib(3, 2), min_k(3, 2), plus(3, 2);
  phi.data = {-1.0, -2.0,   // model 0: trained on example 0
              -3.0, -1.5,   // model 1: on example 1
              -2.5, -4.0};  // model 2: on neither
  scoring::KeepMatrix keep(3, 2);
  keep.data = {1, 0, 0, 1, 0, 0};
  zlib.data = {-0.1, -0.2, -0.3, -0.4, -0.5, -0.6};
  min_k.data = {-1, -2, -3, -4, -5, -6};
  plus.data = {1, 2, 3, 4, 5, 6};
  AttackInputs in{phi, keep, loss, population, 0, 3};
  EXPECT_FALSE(FindAttack("zlib")->score(in).ok()) << "a dataset has no text";
  in.zlib = &zlib;
  in.min_k = &min_k;
  in.min_k_plus = &plus;
  EXPECT_EQ(*FindAttack("zlib")->score(in), zlib.data);
  EXPECT_EQ(*FindAttack("min_k")->score(in), min_k.data);
  EXPECT_EQ(*FindAttack("min_k_plus")->score(in), plus.data);
  // Target 0, example 0: OUT references 1 and 2, mean −2.75: −1 + 2.75.
  // Target 0, example 1: OUT reference 2 only (model 1 trained on it): −2 + 4.
  // Target 1, example 0: OUT reference 2 only (model 0 trained on it): −3 + 2.5.
  // Target 1, example 1: OUT references 0 and 2, mean −3: −1.5 + 3.
  // Target 2, example 0: OUT reference 1: −2.5 + 3; example 1: OUT 0: −4 + 2.
  EXPECT_EQ(*FindAttack("reference")->score(in),
            (std::vector<double>{1.75, 2.0, -0.5, 1.5, 0.5, -2.0}));
}

TEST(MembershipAttacksTest, NamesRoundTrip) {
  EXPECT_EQ(AttackName(v1::LIRA_OFFLINE_TWO_SIDED), "lira_offline_two_sided");
  EXPECT_EQ(AttackByName("rmia"), v1::RMIA);
  EXPECT_EQ(AttackByName("lira"), v1::MEMBERSHIP_ATTACK_UNSPECIFIED);
}

// Each entry's score function is the one its name promises: LiRA's options
// as the attack names them, the loss attack as −loss.
TEST(MembershipAttacksTest, EachEntryScoresAsItsNameSays) {
  constexpr size_t kModels = 6, kExamples = 5;
  scoring::Matrix phi(kModels, kExamples), loss(kModels, kExamples), population(kModels, 3);
  scoring::KeepMatrix keep(kModels, kExamples);
  for (size_t r = 0; r < kModels; ++r) {
    for (size_t c = 0; c < kExamples; ++c) {
      keep.data[r * kExamples + c] = (r + c) % 2;
      phi.data[r * kExamples + c] = 0.3 * r - 0.7 * c + (keep.data[r * kExamples + c] ? 2.0 : 0.0);
      loss.data[r * kExamples + c] = 0.1 + 0.05 * ((3 * r + c) % 7);
    }
    for (size_t z = 0; z < 3; ++z) population.data[r * 3 + z] = 0.2 + 0.1 * ((r + z) % 4);
  }
  const AttackInputs in{phi, keep, loss, population, 0, kModels};
  const auto lira = [&](bool online, bool fixed, bool two_sided, bool reference) {
    scoring::LiraOptions o;
    o.online = online;
    o.fixed_variance = fixed;
    o.two_sided = two_sided;
    o.reference_variance = reference;
    return *scoring::LiraScoresAllTargets(phi, keep, o);
  };
  EXPECT_EQ(*FindAttack("lira_online")->score(in), lira(true, false, false, false));
  EXPECT_EQ(*FindAttack("lira_offline")->score(in), lira(false, false, false, false));
  EXPECT_EQ(*FindAttack("lira_online_fixed_variance")->score(in), lira(true, true, false, false));
  EXPECT_EQ(*FindAttack("lira_offline_fixed_variance")->score(in), lira(false, true, false, false));
  EXPECT_EQ(*FindAttack("lira_offline_two_sided")->score(in), lira(false, false, true, false));
  EXPECT_EQ(*FindAttack("lira_fixed_variance_reference")->score(in),
            lira(true, false, false, true));
  EXPECT_EQ(*FindAttack("loss")->score(in), *scoring::LossScores(loss.data));
  const std::vector<double> rmia = *FindAttack("rmia")->score(in);
  ASSERT_EQ(rmia.size(), kModels * kExamples);
  for (double v : rmia) EXPECT_TRUE(v >= 0 && v <= 1) << "a fraction of the population";
}

TEST(MembershipAttacksTest, TheDocsTableIsThisTable) {
  std::ifstream file(std::string(MEMAUDIT_SOURCE_DIR) + "/docs/audits/membership.md");
  ASSERT_TRUE(file) << "docs/audits/membership.md";
  std::stringstream docs;
  docs << file.rdbuf();
  for (const Attack& a : Attacks()) {
    const std::string row = absl::StrCat(
        "| `", AttackName(a.id), "` | ",
        a.is_default ? "yes" : (a.documents_default ? "documents" : "no"), " | ≥ ",
        a.min_reference_models, " | ", absl::StrReplaceAll(a.doc, {{"|", "\\|"}}), " |\n");
    EXPECT_NE(docs.str().find(row), std::string::npos) << "docs/audits/membership.md lacks\n"
                                                       << row;
  }
}

}  // namespace
}  // namespace memaudit::membership
