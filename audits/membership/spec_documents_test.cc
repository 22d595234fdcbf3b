// The spec rules of membership of documents.
#include "common/messages/content_key.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/planner.h"
#include "spec/spec_validator.h"

namespace memaudit::spec {
namespace {

using ::testing::HasSubstr;

v1::AuditSpec Documents() {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(1);
  spec.mutable_membership()->set_reference_models(8);
  spec.mutable_membership()->mutable_documents();
  ApplyDefaults(&spec);
  return spec;
}

std::string Problems(const v1::AuditSpec& spec) {
  absl::Status s = ValidateSpec(spec);
  return s.ok() ? "" : std::string(s.message());
}

TEST(MembershipDocumentsSpecTest, DefaultsAreATransformerOnFortunes) {
  const v1::AuditSpec spec = Documents();
  EXPECT_EQ(Problems(spec), "");
  const v1::MembershipAudit& m = spec.membership();
  EXPECT_FALSE(m.has_dataset()) << "no dataset defaults with documents";
  EXPECT_FALSE(m.has_model());
  EXPECT_EQ(m.documents().corpus().name(), "fortunes");
  EXPECT_EQ(m.documents().model().architecture(), "transformer");
  EXPECT_EQ(m.documents().model().heads(), 4u);
  EXPECT_EQ(m.documents().sequence_tokens(), 64u);
  EXPECT_EQ(m.documents().pool_size(), 1000u);
  EXPECT_EQ(m.population_size(), 1000u) << "rmia is a default";
  EXPECT_THAT(m.attacks(), ::testing::Contains("min_k_plus"));
  EXPECT_EQ(spec.resources().models_per_task(), 1u) << "language models train one by one";
  // Every model trains on exactly half of the pool: the plan's steps are exact.
  const absl::StatusOr<Plan> plan = PlanAudit(spec);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->tasks.size(), 8u);
  EXPECT_EQ(plan->tasks[0].steps_total, 16u) << "500 sequences in batches of 32, 1 epoch";
}

TEST(MembershipDocumentsSpecTest, ProblemsNameTheField) {
  v1::AuditSpec spec = Documents();
  v1::MembershipAudit* m = spec.mutable_membership();
  m->mutable_dataset()->set_pool_size(100);
  m->mutable_documents()->mutable_training()->set_window(32);
  m->mutable_documents()->set_sequence_tokens(4096);
  m->mutable_documents()->set_pool_size(4);
  m->mutable_documents()->mutable_corpus()->set_name("news");
  m->mutable_documents()->mutable_model()->set_heads(3);
  const std::string problems = Problems(spec);
  EXPECT_THAT(problems, HasSubstr("membership.dataset: not used with documents"));
  EXPECT_THAT(problems, HasSubstr("membership.documents.training.window: must be unset"));
  EXPECT_THAT(problems, HasSubstr("membership.documents.sequence_tokens: must be in [2, 1024]"));
  EXPECT_THAT(problems, HasSubstr("membership.documents.pool_size: must be in [8, 1000000]"));
  EXPECT_THAT(problems, HasSubstr("membership.documents.corpus.name: must be \"fortunes\""));
  EXPECT_THAT(problems, HasSubstr("membership.documents.model.heads"));
}

TEST(MembershipDocumentsSpecTest, TheContentKeyCoversTheDocuments) {
  const v1::AuditSpec a = Documents();
  v1::AuditSpec b = a;
  b.mutable_membership()->mutable_documents()->set_sequence_tokens(32);
  EXPECT_NE(MembershipModelKey(a, 0), MembershipModelKey(b, 0));
  v1::AuditSpec c = a;
  c.mutable_membership()->mutable_documents()->mutable_model()->set_layers(2);
  EXPECT_NE(MembershipModelKey(a, 0), MembershipModelKey(c, 0));
}

}  // namespace
}  // namespace memaudit::spec
