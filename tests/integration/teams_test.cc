// Teams sharing one coordinator, over the embedded cluster's mutual TLS: team
// "local" (the cluster's client certificate) and team "beta" (a bearer token
// from --token-hashes) cannot see, watch, cancel or read the reports of each
// other's audits; callers without credentials get UNAUTHENTICATED from every
// AuditService RPC; quotas refuse naming their limit; a resent Submit answers
// the audit the first one created. No workers: audits stay queued.
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/messages/event_types.h"
#include "common/security/identity.h"
#include "common/security/tls.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "memaudit/v1/scorer.grpc.pb.h"
#include "memaudit/v1/worker.grpc.pb.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kBetaToken[] = "beta-secret-token-0123456789";

std::vector<std::string> Ids(const absl::StatusOr<v1::ListResponse>& list) {
  std::vector<std::string> ids;
  EXPECT_THAT(list, IsOk());
  if (!list.ok()) return ids;
  for (const v1::Audit& a : list->audits()) ids.push_back(a.audit_id());
  return ids;
}

// A NOT_FOUND's message with the id taken out.
std::string WithoutId(const absl::Status& status, const std::string& id) {
  return absl::StrReplaceAll(status.message(), {{id, "ID"}});
}

class TeamsTest : public ClusterTest {
 protected:
  // A cluster without workers whose coordinator also accepts beta's token,
  // with `quotas` (YAML; empty = none) as its --quotas file.
  void StartTeams(const std::string& quotas = "") {
    dir_ = FreshTestDir();
    ASSERT_EQ(std::system(absl::StrCat("mkdir -p '", dir_, "'").c_str()), 0);
    const std::string tokens = dir_ + "/token-hashes";
    std::ofstream(tokens) << TokenHash(kBetaToken) << " team beta\n";
    cli::ClusterOptions options;
    options.dir = dir_;
    options.workers = 0;
    options.bin_dir = MEMAUDIT_BIN_DIR;
    options.coordinator_args = {"--token-hashes", tokens};
    if (!quotas.empty()) {
      std::ofstream(dir_ + "/quotas.yaml") << quotas;
      options.coordinator_args.push_back("--quotas");
      options.coordinator_args.push_back(dir_ + "/quotas.yaml");
    }
    auto cluster = cli::EmbeddedCluster::Start(options);
    MEMAUDIT_ASSERT_OK(cluster);
    cluster_ = std::move(*cluster);
    client_ = Connect(cluster_->client_credentials());
    ClientCredentials beta;
    beta.tls.ca = cluster_->client_credentials().tls.ca;
    beta.token = kBetaToken;
    beta_ = Connect(beta);
    admin_ = Connect(cluster_->admin_credentials());
    std::ofstream(dir_ + "/spec.yaml") << TinyMembershipYaml("teams");
  }

  std::unique_ptr<cli::Client> Connect(const ClientCredentials& credentials) {
    auto client = cli::Client::Connect(cluster_->coordinator_address(), credentials);
    EXPECT_THAT(client, IsOk());
    return client.ok() ? std::make_unique<cli::Client>(*std::move(client)) : nullptr;
  }

  std::string MustSubmit(cli::Client* client, const v1::AuditSpec& spec = TinyMembershipSpec(),
                         const std::string& request_id = "") {
    auto submitted = client->Submit(spec, request_id);
    EXPECT_THAT(submitted, IsOk());
    return submitted.ok() ? submitted->audit_id() : "";
  }

  // Every event of `audit_id` as `client` sees them, as "type: message".
  std::vector<std::string> Events(cli::Client* client, const std::string& audit_id) {
    std::vector<std::string> events;
    absl::Status watched = client->Watch(audit_id, [&](const v1::AuditEvent& e) {
      if (e.type() != v1::PROGRESS)
        events.push_back(absl::StrCat(EventTypeName(e.type()), ": ", e.message()));
      return true;
    });
    EXPECT_THAT(watched, IsOk());
    return events;
  }

  // The memaudit CLI as team local.
  std::string Cli(const std::string& args) const {
    return RunCapture(absl::StrCat(CliCredentialsEnv(), MEMAUDIT_BIN_DIR, "/memaudit ", args,
                                   " --coordinator ", cluster_->coordinator_address(),
                                   " 2>&1; echo \"exit=$?\""));
  }

  std::unique_ptr<cli::Client> beta_;
  std::unique_ptr<cli::Client> admin_;
};

TEST_F(TeamsTest, ATeamCannotSeeWatchCancelOrReadAnotherTeamsAudit) {
  ASSERT_NO_FATAL_FAILURE(StartTeams());
  const std::string mine = MustSubmit(client_.get());
  const std::string theirs = MustSubmit(beta_.get());
  ASSERT_FALSE(mine.empty());
  ASSERT_FALSE(theirs.empty());
  EXPECT_EQ(client_->Get(mine)->team(), "local");
  EXPECT_EQ(beta_->Get(theirs)->team(), "beta");

  // An id that does not exist, shaped like a real one.
  const std::string missing = "a-00000000deadbeef";
  const absl::Status not_there = beta_->Get(missing).status();
  ASSERT_THAT(not_there, StatusIs(absl::StatusCode::kNotFound));
  const std::string expected = WithoutId(not_there, missing);

  auto hidden = [&](const absl::Status& status, const char* rpc) {
    EXPECT_THAT(status, StatusIs(absl::StatusCode::kNotFound)) << rpc;
    EXPECT_EQ(WithoutId(status, mine), expected) << rpc << ": must read as a missing id";
  };
  hidden(beta_->Get(mine).status(), "Get");
  hidden(beta_->Watch(mine, [](const v1::AuditEvent&) { return true; }), "Watch");
  hidden(beta_->Cancel(mine).status(), "Cancel");
  hidden(beta_->Report(mine).status(), "GetReport");
  hidden(beta_->Export(mine).status(), "Export");
  EXPECT_THAT(Ids(beta_->List(100)), ElementsAre(theirs));
  EXPECT_THAT(Ids(client_->List(100)), ElementsAre(mine));
  // Beta's Cancel changed nothing.
  EXPECT_EQ(client_->Get(mine)->state(), v1::QUEUED);

  // And the other way round.
  EXPECT_THAT(client_->Get(theirs), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(client_->Cancel(theirs), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(client_->Report(theirs), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(client_->Export(theirs), StatusIs(absl::StatusCode::kNotFound));

  // The administrator sees both.
  EXPECT_THAT(Ids(admin_->List(100)), ElementsAre(theirs, mine));
  for (const std::string& id : {mine, theirs}) {
    MEMAUDIT_EXPECT_OK(admin_->Get(id));
    MEMAUDIT_EXPECT_OK(admin_->Report(id));
    bool saw_submitted = false;
    MEMAUDIT_EXPECT_OK(admin_->Watch(id, [&](const v1::AuditEvent& e) {
      saw_submitted = e.type() == v1::SUBMITTED;
      return false;  // one event is enough: the audit never ends
    }));
    EXPECT_TRUE(saw_submitted) << id;
  }
}

TEST_F(TeamsTest, EventsNameWhoSubmittedAndWhoCancelled) {
  ASSERT_NO_FATAL_FAILURE(StartTeams());
  const std::string mine = MustSubmit(client_.get());
  const std::string theirs = MustSubmit(beta_.get());
  MEMAUDIT_ASSERT_OK(client_->Cancel(mine));
  MEMAUDIT_ASSERT_OK(admin_->Cancel(theirs));
  EXPECT_THAT(Events(client_.get(), mine),
              ElementsAre("submitted: submitted by team local: 4 tasks planned",
                          "audit_cancelled: cancelled by team local"));
  EXPECT_THAT(Events(beta_.get(), theirs),
              ElementsAre("submitted: submitted by team beta: 4 tasks planned",
                          "audit_cancelled: cancelled by admin local-admin"));
}

TEST_F(TeamsTest, EveryRpcWithoutCredentialsIsUnauthenticated) {
  ASSERT_NO_FATAL_FAILURE(StartTeams());
  const std::string audit = MustSubmit(client_.get());
  // Trusts the cluster's CA, presents no certificate and no token.
  ClientCredentials nobody;
  nobody.tls.ca = cluster_->client_credentials().tls.ca;
  std::unique_ptr<cli::Client> stranger = Connect(nobody);
  ClientCredentials wrong_token = nobody;
  wrong_token.token = "not-a-known-token";
  std::unique_ptr<cli::Client> guesser = Connect(wrong_token);
  for (cli::Client* c : {stranger.get(), guesser.get()}) {
    const auto unauthenticated = StatusIs(absl::StatusCode::kUnauthenticated);
    EXPECT_THAT(c->Submit(TinyMembershipSpec(), "req-1"), unauthenticated);
    EXPECT_THAT(c->Get(audit), unauthenticated);
    EXPECT_THAT(c->List(100), unauthenticated);
    EXPECT_THAT(c->Watch(audit, [](const v1::AuditEvent&) { return true; }), unauthenticated);
    EXPECT_THAT(c->Cancel(audit), unauthenticated);
    EXPECT_THAT(c->Report(audit), unauthenticated);
  }
  // The worker and scorer services too: every RPC answers before any work.
  for (const std::string& token : {std::string(), std::string("not-a-known-token")}) {
    ClientCredentials caller = nobody;
    caller.token = token;
    auto coordinator = MakeChannel(cluster_->coordinator_address(), caller);
    auto scorer = MakeChannel(cluster_->scorer_address(), caller);
    MEMAUDIT_ASSERT_OK(coordinator);
    MEMAUDIT_ASSERT_OK(scorer);
    auto workers = v1::WorkerService::NewStub(*coordinator);
    auto scoring = v1::ScorerService::NewStub(*scorer);
    const auto code = [](const grpc::Status& s) { return s.error_code(); };
    constexpr auto kUnauthenticated = grpc::StatusCode::UNAUTHENTICATED;
    {
      grpc::ClientContext ctx;
      v1::RegisterResponse r;
      EXPECT_EQ(code(workers->Register(&ctx, v1::RegisterRequest(), &r)), kUnauthenticated);
    }
    {
      grpc::ClientContext ctx;
      v1::LeaseResponse r;
      EXPECT_EQ(code(workers->Lease(&ctx, v1::LeaseRequest(), &r)), kUnauthenticated);
    }
    {
      grpc::ClientContext ctx;
      v1::HeartbeatResponse r;
      EXPECT_EQ(code(workers->Heartbeat(&ctx, v1::HeartbeatRequest(), &r)), kUnauthenticated);
    }
    {
      grpc::ClientContext ctx;
      v1::CompleteResponse r;
      EXPECT_EQ(code(workers->Complete(&ctx, v1::CompleteRequest(), &r)), kUnauthenticated);
    }
    {
      grpc::ClientContext ctx;
      v1::FailResponse r;
      EXPECT_EQ(code(workers->Fail(&ctx, v1::FailRequest(), &r)), kUnauthenticated);
    }
    {
      grpc::ClientContext ctx;
      v1::OpenAuditResponse r;
      EXPECT_EQ(code(scoring->OpenAudit(&ctx, v1::OpenAuditRequest(), &r)), kUnauthenticated);
    }
    {
      grpc::ClientContext ctx;
      v1::IngestResponse r;
      auto writer = scoring->Ingest(&ctx, &r);
      writer->Write(v1::Observation());
      writer->WritesDone();
      EXPECT_EQ(code(writer->Finish()), kUnauthenticated);
    }
    {
      grpc::ClientContext ctx;
      v1::AuditResults r;
      v1::GetResultsRequest req;
      req.set_audit_id(audit);
      EXPECT_EQ(code(scoring->GetResults(&ctx, req, &r)), kUnauthenticated);
    }
    {
      grpc::ClientContext ctx;
      v1::GetResultsRequest req;
      req.set_audit_id(audit);
      auto reader = scoring->WatchResults(&ctx, req);
      v1::AuditResults r;
      while (reader->Read(&r)) {
      }
      EXPECT_EQ(code(reader->Finish()), kUnauthenticated);
    }
    {
      grpc::ClientContext ctx;
      v1::CheckTaskResponse r;
      EXPECT_EQ(code(scoring->CheckTask(&ctx, v1::CheckTaskRequest(), &r)), kUnauthenticated);
    }
  }
  // A worker's certificate is authenticated but not a team's.
  std::unique_ptr<cli::Client> worker = Connect(cluster_->worker_credentials());
  EXPECT_THAT(worker->List(100), StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(worker->Cancel(audit), StatusIs(absl::StatusCode::kPermissionDenied));
  // Nothing was created or cancelled.
  EXPECT_THAT(Ids(admin_->List(100)), ElementsAre(audit));
  EXPECT_EQ(admin_->Get(audit)->state(), v1::QUEUED);
}

TEST_F(TeamsTest, AQuotaRefusalNamesItsLimitAndUsageIsOnMetrics) {
  ASSERT_NO_FATAL_FAILURE(StartTeams(R"yaml(
default:
  max_concurrent_audits: 1
teams:
  beta:
    max_concurrent_audits: 5
    max_models_per_audit: 4
)yaml"));
  const std::string first = MustSubmit(client_.get());
  EXPECT_THAT(client_->Submit(TinyMembershipSpec()),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "quota max_concurrent_audits for team local: 1 audit running or queued, "
                       "at most 1"));
  EXPECT_THAT(beta_->Submit(TinyMembershipSpec(8)),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "quota max_models_per_audit for team beta: the audit plans 8 models, at "
                       "most 4"));
  MustSubmit(beta_.get());
  MustSubmit(beta_.get());
  // The CLI shows the refusal.
  EXPECT_THAT(Cli(absl::StrCat("submit ", dir_, "/spec.yaml")),
              AllOf(HasSubstr("error: quota max_concurrent_audits for team local"),
                    Not(HasSubstr("exit=0"))));
  // Nothing refused was stored.
  EXPECT_EQ(Ids(admin_->List(100)).size(), 3u);

  const std::string metrics = HttpGet(cluster_->coordinator_metrics_port(), "/metrics");
  EXPECT_THAT(
      metrics,
      AllOf(HasSubstr("memaudit_coordinator_team_audits{state=\"queued\",team=\"local\"} 1"),
            HasSubstr("memaudit_coordinator_team_audits{state=\"queued\",team=\"beta\"} 2"),
            HasSubstr("memaudit_coordinator_team_queued_tasks{team=\"beta\"} 8"),
            HasSubstr("memaudit_coordinator_quota_refusals_total{limit="
                      "\"max_concurrent_audits\"} 2"),
            HasSubstr("memaudit_coordinator_quota_refusals_total{limit="
                      "\"max_models_per_audit\"} 1")));

  // Once the audit ends, the team may submit again.
  MEMAUDIT_ASSERT_OK(client_->Cancel(first));
  MustSubmit(client_.get());
}

TEST_F(TeamsTest, AResentSubmitReturnsTheSameAudit) {
  ASSERT_NO_FATAL_FAILURE(StartTeams());
  auto first = client_->Submit(TinyMembershipSpec(), "retry-1");
  MEMAUDIT_ASSERT_OK(first);
  auto again = client_->Submit(TinyMembershipSpec(), "retry-1");
  MEMAUDIT_ASSERT_OK(again);
  EXPECT_EQ(again->SerializeAsString(), first->SerializeAsString());
  // Keys are per team.
  auto beta = beta_->Submit(TinyMembershipSpec(), "retry-1");
  MEMAUDIT_ASSERT_OK(beta);
  EXPECT_NE(beta->audit_id(), first->audit_id());
  EXPECT_THAT(client_->Submit(TinyMembershipSpec(6), "retry-1"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("request_id \"retry-1\" already created audit")));
  EXPECT_THAT(client_->Submit(TinyMembershipSpec(), "has space"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("request_id: ")));
  EXPECT_THAT(
      client_->Submit(TinyMembershipSpec(), std::string(129, 'x')),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("request_id: must be at most 128")));
  EXPECT_THAT(Ids(client_->List(100)), ElementsAre(first->audit_id()));

  // The CLI: a script's --request-id twice prints one audit id.
  const std::string spec = absl::StrCat("submit ", dir_, "/spec.yaml --request-id script-7");
  const std::string once = Cli(spec);
  ASSERT_THAT(once, HasSubstr("exit=0"));
  EXPECT_EQ(Cli(spec), once);
  // Without one, each submit is a new audit (with a random key of its own).
  const std::string a = Cli(absl::StrCat("submit ", dir_, "/spec.yaml"));
  const std::string b = Cli(absl::StrCat("submit ", dir_, "/spec.yaml"));
  EXPECT_THAT(a, HasSubstr("exit=0"));
  EXPECT_NE(a, b);
  EXPECT_EQ(Ids(client_->List(100)).size(), 4u);
}

TEST_F(TeamsTest, AMalformedQuotaFileStopsTheCoordinatorNamingTheLine) {
  dir_ = FreshTestDir();
  ASSERT_EQ(std::system(absl::StrCat("mkdir -p '", dir_, "'").c_str()), 0);
  std::ofstream(dir_ + "/quotas.yaml") << "teams:\n  alpha:\n    max_audits: 2\n";
  const std::string out = RunCapture(
      absl::StrCat(MEMAUDIT_BIN_DIR, "/memaudit-coordinator --insecure --listen 127.0.0.1:0 --db ",
                   dir_, "/c.db --quotas ", dir_, "/quotas.yaml 2>&1; echo \"exit=$?\""));
  EXPECT_THAT(out, AllOf(HasSubstr("line 3: \"teams.alpha.max_audits\": unknown limit"),
                         HasSubstr("exit=1")));
}

}  // namespace
}  // namespace memaudit::testing
