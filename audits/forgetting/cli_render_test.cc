#include "audits/forgetting/cli_render.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Two curve points, the first marked degenerate by the scorer.
v1::AuditResults WithADegeneratePoint() {
  v1::AuditResults r;
  r.set_audit_id("a-1");
  r.set_kind(v1::FORGETTING);
  r.set_complete(true);
  v1::ForgettingResults* f = r.mutable_forgetting();
  f->set_strategy("inject");
  f->set_attack("checkpoint_calibrated");
  f->set_fpr_target(0.1);
  f->set_trials(2);
  for (uint64_t steps : {0, 100}) {
    v1::ForgettingCurvePoint* p = f->add_curve();
    p->set_steps_since_injection(steps);
    p->mutable_accuracy()->set_mean(steps == 0 ? 0.748 : 0.6);
  }
  f->mutable_curve(0)->set_degenerate("every non-member scores the same");
  return r;
}

TEST(ForgettingRenderTest, ADegeneratePointIsMarkedWithItsReason) {
  const v1::AuditResults r = WithADegeneratePoint();
  const std::string table = ForgettingTable(r);
  EXPECT_THAT(table, HasSubstr("0 *"));
  EXPECT_THAT(table, HasSubstr("* every non-member scores the same"));
  EXPECT_THAT(table, Not(HasSubstr("100 *")));
  const std::string html = ForgettingHtmlSection(r);
  EXPECT_THAT(html, HasSubstr("<td>0 *</td>"));
  EXPECT_THAT(html, HasSubstr("* every non-member scores the same</p>"));
  // Without a degenerate point, no mark and no note.
  v1::AuditResults plain = r;
  plain.mutable_forgetting()->mutable_curve(0)->clear_degenerate();
  EXPECT_THAT(ForgettingTable(plain), Not(HasSubstr("*")));
}

// The CSV flags a degenerate point in its last column (the reason is in the
// results JSON).
TEST(ForgettingRenderTest, TheCsvFlagsADegeneratePoint) {
  const std::string dir = ::testing::TempDir() + "/forgetting-csv";
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(WriteForgettingCsv(WithADegeneratePoint(), dir).ok());
  std::ifstream in(dir + "/forgetting_curve.csv");
  std::string header, first, second;
  std::getline(in, header);
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_THAT(header, ::testing::EndsWith(",selection,degenerate"));
  EXPECT_THAT(first, ::testing::StartsWith("a-1,inject,checkpoint_calibrated,0,"));
  EXPECT_THAT(first, ::testing::EndsWith(",random,1"));
  EXPECT_THAT(second, ::testing::EndsWith(",random,0"));
}

}  // namespace
}  // namespace memaudit::cli
