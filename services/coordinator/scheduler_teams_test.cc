// Owners, idempotent Submit and quotas in the scheduler: a team sees only its
// own audits, a resent request answers the audit it created (also after a
// restart), and quotas refuse before anything is stored.
#include <string>

#include "absl/strings/str_replace.h"
#include "common/messages/event_types.h"
#include "common/metrics/metrics.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/coordinator/scheduler.h"
#include "services/coordinator/scheduler_fixture.h"

namespace memaudit::coordinator {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const Caller kAlpha = Caller::Team("alpha");
const Caller kBeta = Caller::Team("beta");
const Caller kRoot = Caller::Admin("root");

class SchedulerTeamsTest : public SchedulerFixture {
 protected:
  absl::StatusOr<v1::Audit> SubmitAs(const Caller& caller, const std::string& audit_id,
                                     const std::string& request_id = "",
                                     const v1::AuditSpec& spec = spec::SmallMembershipSpec(4)) {
    return scheduler_->Submit(MakeSubmission(caller, audit_id, request_id, spec));
  }
  static Submission MakeSubmission(const Caller& caller, const std::string& audit_id,
                                   const std::string& request_id,
                                   const v1::AuditSpec& spec = spec::SmallMembershipSpec(4)) {
    Submission s;
    s.audit_id = audit_id;
    s.spec = spec;
    s.caller = caller;
    s.request_id = request_id;
    return s;
  }
  std::vector<std::string> Ids(const Caller& caller) {
    std::vector<std::string> ids;
    for (const v1::Audit& a : scheduler_->List(100, caller)) ids.push_back(a.audit_id());
    return ids;
  }
  std::vector<std::string> Messages(const std::string& audit_id, const std::string& type) {
    std::vector<std::string> out;
    auto events = scheduler_->EventsAfter(audit_id, 0, 100);
    EXPECT_TRUE(events.ok()) << events.status();
    if (!events.ok()) return out;
    for (const EventRecord& e : *events) {
      if (EventTypeName(e.type) == type) out.push_back(e.message);
    }
    return out;
  }
  bool Metric(const std::string& line) {
    return metrics::Exposition(registry_).find(line) != std::string::npos;
  }
};

// The message of a NOT_FOUND with the id taken out: another owner's audit
// must read exactly as an id that does not exist.
std::string WithoutId(const absl::Status& status, const std::string& id) {
  return absl::StrReplaceAll(status.message(), {{id, "ID"}});
}

TEST_F(SchedulerTeamsTest, ATeamSeesOnlyItsOwnAuditsAndAnAdminSeesAll) {
  MEMAUDIT_ASSERT_OK(SubmitAs(kAlpha, "a-1"));
  MEMAUDIT_ASSERT_OK(SubmitAs(kBeta, "b-1"));
  MEMAUDIT_ASSERT_OK(SubmitAs(kRoot, "r-1"));
  // Stored before owners were kept (owner ""): administrators only.
  MEMAUDIT_ASSERT_OK(scheduler_->Submit(MakeSubmission(Caller::Admin(""), "old-1", "")));

  EXPECT_EQ(scheduler_->Get("a-1", kAlpha)->team(), "alpha");
  EXPECT_THAT(Ids(kAlpha), ElementsAre("a-1"));
  EXPECT_THAT(Ids(kBeta), ElementsAre("b-1"));
  EXPECT_THAT(Ids(kRoot), ElementsAre("old-1", "r-1", "b-1", "a-1"));
  // A caller without a name owns nothing, not even the audits owned by "".
  EXPECT_THAT(Ids(Caller::Team("")), ElementsAre());

  const absl::Status missing = scheduler_->Get("zz-9", kAlpha).status();
  EXPECT_THAT(missing, StatusIs(absl::StatusCode::kNotFound));
  for (const char* other : {"b-1", "r-1", "old-1"}) {
    const absl::Status hidden = scheduler_->Get(other, kAlpha).status();
    EXPECT_THAT(hidden, StatusIs(absl::StatusCode::kNotFound)) << other;
    EXPECT_EQ(WithoutId(hidden, other), WithoutId(missing, "zz-9")) << other;
    const absl::Status cancel = scheduler_->Cancel(other, kAlpha).status();
    EXPECT_EQ(WithoutId(cancel, other), WithoutId(missing, "zz-9")) << other;
    EXPECT_THAT(cancel, StatusIs(absl::StatusCode::kNotFound));
    MEMAUDIT_EXPECT_OK(scheduler_->Get(other, kRoot));
  }
  // Beta's audit was not cancelled by alpha's attempt.
  EXPECT_EQ(scheduler_->Get("b-1", kBeta)->state(), v1::QUEUED);
  EXPECT_THAT(Messages("b-1", "audit_cancelled"), ElementsAre());

  // Owners survive a restart.
  Reopen();
  EXPECT_THAT(Ids(kAlpha), ElementsAre("a-1"));
  EXPECT_THAT(scheduler_->Get("b-1", kAlpha), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(scheduler_->Get("old-1", kRoot)->team(), "");
}

TEST_F(SchedulerTeamsTest, EventsNameWhoSubmittedAndWhoCancelled) {
  MEMAUDIT_ASSERT_OK(SubmitAs(kAlpha, "a-1"));
  MEMAUDIT_ASSERT_OK(SubmitAs(kAlpha, "a-2"));
  EXPECT_THAT(Messages("a-1", "submitted"),
              ElementsAre("submitted by team alpha: 4 tasks planned"));
  MEMAUDIT_ASSERT_OK(scheduler_->Cancel("a-1", kAlpha));
  MEMAUDIT_ASSERT_OK(scheduler_->Cancel("a-2", kRoot));
  EXPECT_THAT(Messages("a-1", "audit_cancelled"), ElementsAre("cancelled by team alpha"));
  EXPECT_THAT(Messages("a-2", "audit_cancelled"), ElementsAre("cancelled by admin root"));
}

TEST_F(SchedulerTeamsTest, AResentRequestAnswersTheAuditItCreatedAlsoAfterARestart) {
  auto first = SubmitAs(kAlpha, "a-1", "req-1");
  MEMAUDIT_ASSERT_OK(first);
  auto again = SubmitAs(kAlpha, "a-2", "req-1");
  MEMAUDIT_ASSERT_OK(again);
  EXPECT_EQ(again->audit_id(), "a-1");
  EXPECT_EQ(again->tasks().total(), first->tasks().total());
  EXPECT_THAT(scheduler_->Get("a-2"), StatusIs(absl::StatusCode::kNotFound));
  // Admit, what the service asks before the scorer hears of an audit.
  auto admitted = scheduler_->Admit(MakeSubmission(kAlpha, "a-3", "req-1"));
  MEMAUDIT_ASSERT_OK(admitted);
  ASSERT_TRUE(admitted->has_value());
  EXPECT_EQ((*admitted)->audit_id(), "a-1");

  // Keys are per owner: beta's req-1 is a new audit.
  auto beta = SubmitAs(kBeta, "b-1", "req-1");
  MEMAUDIT_ASSERT_OK(beta);
  EXPECT_EQ(beta->audit_id(), "b-1");

  // The same key with another spec is refused, naming the key.
  EXPECT_THAT(SubmitAs(kAlpha, "a-4", "req-1", spec::SmallMembershipSpec(6)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("request_id \"req-1\" already created audit a-1 from a "
                                 "different spec")));
  EXPECT_THAT(
      scheduler_->Admit(MakeSubmission(kAlpha, "a-4", "req-1", spec::SmallMembershipSpec(6))),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("request_id")));

  // A cancelled audit is still what its request created.
  MEMAUDIT_ASSERT_OK(scheduler_->Cancel("a-1", kAlpha));
  Reopen();
  auto after_restart = SubmitAs(kAlpha, "a-5", "req-1");
  MEMAUDIT_ASSERT_OK(after_restart);
  EXPECT_EQ(after_restart->audit_id(), "a-1");
  EXPECT_EQ(after_restart->state(), v1::CANCELLED);
  EXPECT_THAT(Ids(kAlpha), ElementsAre("a-1"));
  EXPECT_THAT(Messages("a-1", "submitted"), ElementsAre(HasSubstr("submitted by team alpha")));

  // No key: every Submit is a new audit.
  MEMAUDIT_ASSERT_OK(SubmitAs(kAlpha, "a-6"));
  MEMAUDIT_ASSERT_OK(SubmitAs(kAlpha, "a-7"));
  EXPECT_THAT(Ids(kAlpha), ElementsAre("a-7", "a-6", "a-1"));
}

TEST_F(SchedulerTeamsTest, QuotasRefuseBeforeAnythingIsStored) {
  options_.quotas.defaults.max_concurrent_audits = 1;
  options_.quotas.teams["beta"].max_concurrent_audits = 3;
  options_.quotas.teams["beta"].max_queued_tasks = 9;
  options_.quotas.teams["beta"].max_models_per_audit = 8;
  Reopen();

  MEMAUDIT_ASSERT_OK(SubmitAs(kAlpha, "a-1", "req-1"));
  const uint64_t version = scheduler_->version();
  EXPECT_THAT(SubmitAs(kAlpha, "a-2"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "quota max_concurrent_audits for team alpha: 1 audit running or queued, "
                       "at most 1"));
  EXPECT_THAT(scheduler_->Admit(MakeSubmission(kAlpha, "a-2", "")),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("max_concurrent_audits")));
  EXPECT_EQ(scheduler_->version(), version);
  EXPECT_THAT(scheduler_->Get("a-2"), StatusIs(absl::StatusCode::kNotFound));
  // A resend is not a new audit: the quota does not apply to it.
  EXPECT_EQ(SubmitAs(kAlpha, "a-3", "req-1")->audit_id(), "a-1");
  // Another owner has its own count.
  MEMAUDIT_ASSERT_OK(SubmitAs(kRoot, "r-1"));
  // A finished audit no longer counts.
  MEMAUDIT_ASSERT_OK(scheduler_->Cancel("a-1", kAlpha));
  MEMAUDIT_ASSERT_OK(SubmitAs(kAlpha, "a-4"));

  EXPECT_THAT(SubmitAs(kBeta, "b-0", "", spec::SmallMembershipSpec(10)),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "quota max_models_per_audit for team beta: the audit plans 10 models, at "
                       "most 8"));
  MEMAUDIT_ASSERT_OK(SubmitAs(kBeta, "b-1", "", spec::SmallMembershipSpec(6)));  // 6 tasks
  EXPECT_THAT(SubmitAs(kBeta, "b-2"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "quota max_queued_tasks for team beta: 6 tasks queued or running and 4 "
                       "more planned, at most 9"));
  // Leased tasks count as unfinished; succeeded ones do not.
  MEMAUDIT_ASSERT_OK(scheduler_->Cancel("r-1", kRoot));
  MEMAUDIT_ASSERT_OK(scheduler_->Cancel("a-4", kAlpha));
  LeaseGrant grant = MustLease();
  ASSERT_EQ(grant.task.audit_id, "b-1");
  MEMAUDIT_ASSERT_OK(scheduler_->Complete(grant.task.lease_id));
  MEMAUDIT_ASSERT_OK(SubmitAs(kBeta, "b-2"));

  EXPECT_TRUE(
      Metric("memaudit_coordinator_quota_refusals_total{limit=\"max_concurrent_audits\"} 2"))
      << metrics::Exposition(registry_);
  EXPECT_TRUE(
      Metric("memaudit_coordinator_quota_refusals_total{limit=\"max_models_per_audit\"} 1"));
  EXPECT_TRUE(Metric("memaudit_coordinator_quota_refusals_total{limit=\"max_spec_bytes\"} 0"));
}

TEST_F(SchedulerTeamsTest, SpecBytesAreTheSpecAsSubmitted) {
  options_.quotas.defaults.max_spec_bytes = 100;
  Reopen();
  Submission s = MakeSubmission(kAlpha, "a-1", "");
  s.spec_bytes = 101;
  EXPECT_THAT(scheduler_->Submit(s),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "quota max_spec_bytes for team alpha: the spec is 101 bytes, at most 100"));
  s.spec_bytes = 100;
  MEMAUDIT_EXPECT_OK(scheduler_->Submit(s));
}

TEST_F(SchedulerTeamsTest, UsagePerTeamIsOnMetrics) {
  MEMAUDIT_ASSERT_OK(SubmitAs(kAlpha, "a-1"));
  MEMAUDIT_ASSERT_OK(SubmitAs(kAlpha, "a-2"));
  MEMAUDIT_ASSERT_OK(SubmitAs(kBeta, "b-1", "", spec::SmallMembershipSpec(6)));
  MEMAUDIT_ASSERT_OK(scheduler_->Submit(MakeSubmission(Caller::Admin(""), "old-1", "")));
  MEMAUDIT_ASSERT_OK(scheduler_->Cancel("a-2", kAlpha));
  EXPECT_TRUE(Metric("memaudit_coordinator_team_audits{state=\"queued\",team=\"alpha\"} 1"))
      << metrics::Exposition(registry_);
  EXPECT_TRUE(Metric("memaudit_coordinator_team_audits{state=\"cancelled\",team=\"alpha\"} 1"));
  EXPECT_TRUE(Metric("memaudit_coordinator_team_audits{state=\"running\",team=\"beta\"} 0"));
  EXPECT_TRUE(Metric("memaudit_coordinator_team_queued_tasks{team=\"alpha\"} 4"));
  EXPECT_TRUE(Metric("memaudit_coordinator_team_queued_tasks{team=\"beta\"} 6"));
  // No team series for the owner-less audit (audit_info names it with team="").
  EXPECT_FALSE(Metric("memaudit_coordinator_team_queued_tasks{team=\"\"}"));
  EXPECT_FALSE(Metric("memaudit_coordinator_team_audits{state=\"queued\",team=\"\"}"));
  LeaseGrant grant = MustLease();
  EXPECT_EQ(grant.task.audit_id, "a-1");
  EXPECT_TRUE(Metric("memaudit_coordinator_team_audits{state=\"running\",team=\"alpha\"} 1"));
  EXPECT_TRUE(Metric("memaudit_coordinator_team_queued_tasks{team=\"alpha\"} 4"));
  MEMAUDIT_ASSERT_OK(scheduler_->Complete(grant.task.lease_id));
  EXPECT_TRUE(Metric("memaudit_coordinator_team_queued_tasks{team=\"alpha\"} 3"));
}

}  // namespace
}  // namespace memaudit::coordinator
