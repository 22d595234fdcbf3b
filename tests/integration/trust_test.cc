// Trust between workers, coordinator and scorer (issue 13), with real
// processes over the embedded cluster's mutual TLS: a stranger holding a
// team certificate (or another worker's) cannot lease, heartbeat, complete or
// fail a task, ingest observations or open an audit at the scorer; a worker's
// Complete counts only once the scorer holds the task's observations; the
// cross-team poisoning of issue 13 (a forged OpenAudit with a victim's recipe
// and forged observations for its runs) yields no reuse and no outage; and
// result gauges carry the submitting team, whose runs reuse stays within.
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/security/capability.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "memaudit/v1/scorer.grpc.pb.h"
#include "memaudit/v1/worker.grpc.pb.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;

class TrustTest : public ClusterTest {
 protected:
  ClientCredentials Issue(const std::string& role, const std::string& name) {
    auto credentials = cluster_->IssueCredentials(role, name);
    EXPECT_TRUE(credentials.ok()) << credentials.status();
    return credentials.ok() ? *credentials : ClientCredentials();
  }
  std::unique_ptr<v1::WorkerService::Stub> Coordinator(const ClientCredentials& as) {
    auto channel = MakeChannel(cluster_->coordinator_address(), as);
    EXPECT_TRUE(channel.ok()) << channel.status();
    return v1::WorkerService::NewStub(*channel);
  }
  std::unique_ptr<v1::ScorerService::Stub> Scorer(const ClientCredentials& as) {
    auto channel = MakeChannel(cluster_->scorer_address(), as);
    EXPECT_TRUE(channel.ok()) << channel.status();
    return v1::ScorerService::NewStub(*channel);
  }

  static grpc::StatusCode Ingest(v1::ScorerService::Stub* scorer,
                                 const std::vector<v1::Observation>& observations) {
    return SendObservations(scorer, observations).error_code();
  }
  static grpc::StatusCode OpenAudit(v1::ScorerService::Stub* scorer, const std::string& audit_id,
                                    const v1::AuditSpec& spec) {
    grpc::ClientContext ctx;
    v1::OpenAuditRequest req;
    req.set_audit_id(audit_id);
    *req.mutable_spec() = spec;
    v1::OpenAuditResponse resp;
    return scorer->OpenAudit(&ctx, req, &resp).error_code();
  }
  // What the scorer lacks of one task, asked as the administrator.
  uint32_t Missing(const std::string& audit_id, const std::string& role, uint32_t index) {
    auto scorer = Scorer(cluster_->admin_credentials());
    grpc::ClientContext ctx;
    v1::CheckTaskRequest req;
    req.set_audit_id(audit_id);
    req.set_role(role);
    req.set_index(index);
    v1::CheckTaskResponse resp;
    const grpc::Status status = scorer->CheckTask(&ctx, req, &resp);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return resp.missing_count();
  }

  // Forged signals for every model of a TinyMembershipSpec(models) audit:
  // values inside Ingest's bounds, chosen by the forger.
  static std::vector<v1::Observation> Forged(const std::string& audit_id, uint32_t models,
                                             const std::string& capability) {
    std::vector<v1::Observation> out;
    const v1::AuditSpec spec = TinyMembershipSpec(models);
    for (uint32_t run = 0; run < models; ++run) {
      for (const char* signal : {"phi", "loss"}) {
        v1::Observation& o = out.emplace_back();
        o.set_audit_id(audit_id);
        o.set_run(run);
        o.set_point("final");
        o.set_signal(signal);
        for (uint32_t j = 0; j < spec.membership().dataset().pool_size(); ++j) {
          o.add_values(j % 2 == 0 ? 1e3 : (signal == std::string("phi") ? -1e3 : 0));
        }
        o.set_capability(capability);
      }
    }
    return out;
  }
};

TEST_F(TrustTest, AStrangerCannotLeaseHeartbeatCompleteFailIngestOrOpenAudits) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0));
  auto submitted = client_->Submit(TinyMembershipSpec(4, 2));
  MEMAUDIT_ASSERT_OK(submitted);
  const std::string audit_id = submitted->audit_id();

  // The honest worker ("worker in-process") registers and leases a task.
  auto worker = Coordinator(cluster_->worker_credentials());
  const std::string worker_id = RegisterWorker(worker.get());
  const v1::LeaseResponse lease = LeaseTask(worker.get(), worker_id);
  ASSERT_TRUE(lease.has_task());
  const v1::Task& task = lease.task();

  // A team's certificate, and another worker's: neither may touch the lease.
  for (const auto& [what, who] : {std::pair{"team mallory", Issue("team", "mallory")},
                                  std::pair{"worker rogue", Issue("worker", "rogue")}}) {
    SCOPED_TRACE(what);
    auto coordinator = Coordinator(who);
    {
      grpc::ClientContext ctx;
      v1::LeaseRequest req;
      req.set_worker_id(worker_id);
      v1::LeaseResponse resp;
      EXPECT_EQ(coordinator->Lease(&ctx, req, &resp).error_code(),
                grpc::StatusCode::PERMISSION_DENIED);
      EXPECT_FALSE(resp.has_task());
    }
    {
      grpc::ClientContext ctx;
      v1::HeartbeatRequest req;
      req.set_lease_id(lease.lease_id());
      v1::HeartbeatResponse resp;
      EXPECT_EQ(coordinator->Heartbeat(&ctx, req, &resp).error_code(),
                grpc::StatusCode::PERMISSION_DENIED);
    }
    {
      grpc::ClientContext ctx;
      v1::CompleteRequest req;
      req.set_lease_id(lease.lease_id());
      v1::CompleteResponse resp;
      EXPECT_EQ(coordinator->Complete(&ctx, req, &resp).error_code(),
                grpc::StatusCode::PERMISSION_DENIED);
    }
    {
      grpc::ClientContext ctx;
      v1::FailRequest req;
      req.set_lease_id(lease.lease_id());
      req.set_kind(v1::TASK_FINAL);
      req.set_error("forged failure");
      v1::FailResponse resp;
      EXPECT_EQ(coordinator->Fail(&ctx, req, &resp).error_code(),
                grpc::StatusCode::PERMISSION_DENIED);
    }
    auto scorer = Scorer(who);
    EXPECT_EQ(OpenAudit(scorer.get(), "a-forged", TinyMembershipSpec(4, 2)),
              grpc::StatusCode::PERMISSION_DENIED);
    {
      grpc::ClientContext ctx;
      v1::GetResultsRequest req;
      req.set_audit_id(audit_id);
      v1::AuditResults resp;
      EXPECT_EQ(scorer->GetResults(&ctx, req, &resp).error_code(),
                grpc::StatusCode::PERMISSION_DENIED);
    }
    // Forged values: without a capability, with one under another key, with
    // another audit's, or with the leased task's for another task's runs.
    auto key = CapabilityKey::FromFile(cluster_->capability_key_file());
    MEMAUDIT_ASSERT_OK(key);
    const TaskRef leased{task.role(), task.index()};
    for (const std::string& capability :
         {std::string(),
          TaskCapability(CapabilityKey::Insecure(), audit_id, leased, {1, "worker in-process"}),
          TaskCapability(*key, "a-other", leased, {1, "worker in-process"}), lease.capability()}) {
      std::vector<v1::Observation> forged = Forged(audit_id, 4, capability);
      if (capability == lease.capability()) {
        forged.erase(forged.begin() + 2 * task.index(), forged.begin() + 2 * task.index() + 2);
      }
      EXPECT_EQ(Ingest(scorer.get(), forged), grpc::StatusCode::PERMISSION_DENIED);
    }
  }
  // The team member may not even register as a worker.
  {
    grpc::ClientContext ctx;
    v1::RegisterRequest req;
    v1::RegisterResponse resp;
    EXPECT_EQ(Coordinator(Issue("team", "eve"))->Register(&ctx, req, &resp).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  // Nothing forged was stored, and the audit is as the honest parties left it.
  for (uint32_t t = 0; t < 4; ++t) EXPECT_EQ(Missing(audit_id, "reference_model", t), 3u) << t;
  auto audit = client_->Get(audit_id);
  MEMAUDIT_ASSERT_OK(audit);
  EXPECT_EQ(audit->state(), v1::RUNNING);
  EXPECT_EQ(audit->error(), "");

  // The lease holder's Complete without the observations does not count: the
  // task goes back to the queue, nothing succeeded.
  {
    const grpc::Status status = CompleteTask(worker.get(), worker_id, lease.lease_id());
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(status.error_message(), HasSubstr("3 missing (run "));
  }
  audit = client_->Get(audit_id);
  MEMAUDIT_ASSERT_OK(audit);
  EXPECT_EQ(audit->tasks().succeeded(), 0u);
  EXPECT_EQ(audit->tasks().queued(), 4u);

  // Real workers finish it.
  MEMAUDIT_ASSERT_OK(cluster_->AddWorker());
  const v1::Audit done = WaitForEnd(audit_id);
  ASSERT_EQ(done.state(), v1::SUCCEEDED) << done.error();
  auto results = client_->Report(audit_id);
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_TRUE(results->complete());
}

// Issue 13's poisoning: a forged OpenAudit with a victim's recipe plus forged
// observations for its runs made an honest Submit of the same recipe
// (renamed) "reuse" every model with the forger's numbers, and forged values
// then failed every such Submit and kept the scorer from starting.
TEST_F(TrustTest, ThePoisoningScenarioYieldsNoReuseAndNoOutage) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  const v1::AuditSpec victim = TinyMembershipSpec(4, 2);
  for (const auto& [what, who] : {std::pair{"team mallory", Issue("team", "mallory")},
                                  std::pair{"worker rogue", Issue("worker", "rogue")}}) {
    SCOPED_TRACE(what);
    auto scorer = Scorer(who);
    EXPECT_EQ(OpenAudit(scorer.get(), "a-forged", victim), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_NE(Ingest(scorer.get(), Forged("a-forged", 4, "")), grpc::StatusCode::OK);
  }

  v1::AuditSpec renamed = victim;
  renamed.set_name("victim-renamed");
  auto submitted = client_->Submit(renamed);
  MEMAUDIT_ASSERT_OK(submitted);
  // Forged observations into the honest audit itself (its id leaked): refused.
  auto rogue = Scorer(Issue("worker", "rogue"));
  EXPECT_EQ(Ingest(rogue.get(), Forged(submitted->audit_id(), 4, "")),
            grpc::StatusCode::PERMISSION_DENIED);
  const v1::Audit audit = WaitForEnd(submitted->audit_id());
  ASSERT_EQ(audit.state(), v1::SUCCEEDED) << audit.error();
  // Every model was trained here: nothing was reused.
  const std::string scorer_metrics = HttpGet(cluster_->scorer_metrics_port(), "/metrics");
  EXPECT_THAT(scorer_metrics, ::testing::Not(HasSubstr("memaudit_scorer_reused_models_total")));
  const std::string worker_metrics = HttpGet(cluster_->worker_metrics_port(0), "/metrics");
  EXPECT_THAT(worker_metrics, HasSubstr("memaudit_worker_tasks_total{outcome=\"succeeded\"} 4"));
  auto results = client_->Report(submitted->audit_id());
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_TRUE(results->complete());
  EXPECT_EQ(results->error(), "");

  // No outage: the scorer restarts and serves the results.
  MEMAUDIT_ASSERT_OK(cluster_->RestartScorer(SIGKILL));
  auto again = client_->Report(submitted->audit_id());
  MEMAUDIT_ASSERT_OK(again);
  EXPECT_EQ(Numbers(*again), Numbers(*results));
}

// Needs the coordinator to pass the submitting team to OpenAudit
// (OpenAuditRequest.team).
TEST_F(TrustTest, ResultGaugesCarryTheTeamWhoseRunsReuseStaysWithin) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  auto first = client_->Submit(TinyMembershipSpec(4, 2));
  MEMAUDIT_ASSERT_OK(first);
  ASSERT_EQ(WaitForEnd(first->audit_id()).state(), v1::SUCCEEDED);
  std::string metrics = HttpGet(cluster_->scorer_metrics_port(), "/metrics");
  EXPECT_TRUE(HasSeries(metrics, "memaudit_membership_auc_ratio",
                        {{"audit", first->audit_id()}, {"attack", "loss"}, {"team", "local"}}));

  // Another team's Submit of the same recipe trains its own models.
  auto beta = cli::Client::Connect(cluster_->coordinator_address(), Issue("team", "beta"));
  MEMAUDIT_ASSERT_OK(beta);
  auto theirs = beta->Submit(TinyMembershipSpec(4, 2));
  MEMAUDIT_ASSERT_OK(theirs);
  MEMAUDIT_ASSERT_OK(beta->Watch(theirs->audit_id(), [](const v1::AuditEvent&) { return true; }));
  ASSERT_EQ(beta->Get(theirs->audit_id())->state(), v1::SUCCEEDED);
  metrics = HttpGet(cluster_->scorer_metrics_port(), "/metrics");
  EXPECT_THAT(metrics, ::testing::Not(HasSubstr("memaudit_scorer_reused_models_total")));
  EXPECT_TRUE(HasSeries(metrics, "memaudit_membership_auc_ratio",
                        {{"audit", theirs->audit_id()}, {"team", "beta"}}));

  // The same team's resubmission reuses its own four models.
  auto again = client_->Submit(TinyMembershipSpec(4, 2));
  MEMAUDIT_ASSERT_OK(again);
  ASSERT_EQ(WaitForEnd(again->audit_id()).state(), v1::SUCCEEDED);
  metrics = HttpGet(cluster_->scorer_metrics_port(), "/metrics");
  EXPECT_THAT(metrics, HasSubstr("memaudit_scorer_reused_models_total 4"));
}

// Reuse draws only on confirmed runs (docs/security.md, "Reuse only what was
// confirmed"): a run sealed in an audit that was then cancelled is never
// reused, nor is any run a revoked worker wrote; a reused run names the
// audit, task, lease and worker it came from.
TEST_F(TrustTest, ReuseTakesOnlyConfirmedRunsAndNamesWhereTheyCameFrom) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0));
  const v1::AuditSpec recipe = TinyMembershipSpec(4, 2);
  // A worker identity completes one task of an audit with values of its
  // choosing, then the team cancels the audit.
  auto cancelled = client_->Submit(recipe);
  MEMAUDIT_ASSERT_OK(cancelled);
  auto worker = Coordinator(cluster_->worker_credentials());
  const std::string worker_id = RegisterWorker(worker.get());
  const v1::LeaseResponse lease = LeaseTask(worker.get(), worker_id);
  ASSERT_TRUE(lease.has_task());
  std::vector<v1::Observation> forged = Forged(cancelled->audit_id(), 4, lease.capability());
  std::vector<v1::Observation> own(forged.begin() + 2 * lease.task().index(),
                                   forged.begin() + 2 * lease.task().index() + 2);
  // RMIA's population losses too (a default attack).
  v1::Observation population = own[1];
  population.set_signal("loss_population");
  population.clear_values();
  auto defaulted = client_->Get(cancelled->audit_id());
  MEMAUDIT_ASSERT_OK(defaulted);
  for (uint32_t j = 0; j < defaulted->spec().membership().population_size(); ++j) {
    population.add_values(0.5);
  }
  own.push_back(population);
  ASSERT_EQ(Ingest(Scorer(cluster_->worker_credentials()).get(), own), grpc::StatusCode::OK);
  {
    const grpc::Status status = CompleteTask(worker.get(), worker_id, lease.lease_id());
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  MEMAUDIT_ASSERT_OK(client_->Cancel(cancelled->audit_id()));

  // The same recipe again trains every model: the cancelled audit's sealed
  // run is not drawn on.
  MEMAUDIT_ASSERT_OK(cluster_->AddWorker());  // worker-0
  Finished trained;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(recipe, &trained));
  EXPECT_EQ(trained.results.reused_size(), 0);

  // Its runs are reused by the next audit, each naming where it came from.
  Finished reusing;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(recipe, &reusing));
  ASSERT_EQ(reusing.results.reused_size(), 4);
  for (const v1::ReusedRun& r : reusing.results.reused()) {
    EXPECT_EQ(r.from_audit_id(), trained.audit_id);
    EXPECT_EQ(r.from_run(), r.run());
    EXPECT_EQ(r.from_task(), absl::StrCat("reference_model ", r.run()));
    EXPECT_EQ(r.from_lease(), 1u);
    EXPECT_EQ(r.from_worker(), "worker worker-0");
  }
  EXPECT_EQ(Numbers(reusing.results), Numbers(trained.results));
  const std::string html = dir_ + "/reusing.html";
  const std::string table = RunCapture(
      absl::StrCat(CliCredentialsEnv(), Memaudit(), " report ", reusing.audit_id, " --html ", html,
                   " --coordinator ", cluster_->coordinator_address(), " 2>&1"));
  EXPECT_THAT(Slurp(html), HasSubstr("<h2>Reused runs</h2>"));
  EXPECT_THAT(Slurp(html),
              HasSubstr("<td>reference_model 2</td><td>1</td><td>worker worker-0</td>"));
  EXPECT_THAT(table, HasSubstr(absl::StrCat("run 3 <- audit ", trained.audit_id,
                                            " run 3 (reference_model 3, lease 1, worker "
                                            "worker-0)")));

  // worker-0 revoked: nothing it wrote is reused, and it takes no more work.
  auto admin = cli::Client::Connect(cluster_->coordinator_address(), cluster_->admin_credentials());
  MEMAUDIT_ASSERT_OK(admin);
  auto revoked = admin->RevokeWorker("worker-0");
  MEMAUDIT_ASSERT_OK(revoked);
  EXPECT_EQ(revoked->purged_runs(), 4u);
  EXPECT_THAT(client_->RevokeWorker("worker-1"), StatusIs(absl::StatusCode::kPermissionDenied))
      << "administrators only";
  MEMAUDIT_ASSERT_OK(cluster_->AddWorker());  // worker-1
  Finished after;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(recipe, &after));
  EXPECT_EQ(after.results.reused_size(), 0);
  EXPECT_EQ(Numbers(after.results), Numbers(trained.results));
  // worker-0 was told, and stopped: a revoked identity cannot register.
  EXPECT_TRUE(cluster_->worker(0)->WaitFor(20000));
  EXPECT_THAT(Slurp(dir_ + "/worker-0.log"),
              HasSubstr("worker worker-0 was revoked by an administrator"));
}

}  // namespace
}  // namespace memaudit::testing
