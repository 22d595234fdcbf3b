// A membership audit through real coordinator, scorer and worker processes.
#include <signal.h>

#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "audits/membership/attacks.h"
#include "cli/html_report.h"
#include "cli/render.h"
#include "common/rpc/status_grpc.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "memaudit/v1/errors.pb.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;

class MembershipAuditTest : public ClusterTest {};

TEST_F(MembershipAuditTest, CompletesAndScoresEveryAttack) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  auto submitted = client_->Submit(TinyMembershipSpec());
  MEMAUDIT_ASSERT_OK(submitted);
  EXPECT_EQ(submitted->tasks(), 4u);
  v1::Audit audit = WaitForEnd(submitted->audit_id());
  ASSERT_EQ(audit.state(), v1::SUCCEEDED) << audit.error();
  EXPECT_EQ(audit.tasks().succeeded(), 4u);
  EXPECT_EQ(audit.steps_done(), audit.steps_total());
  auto results = client_->Report(submitted->audit_id());
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  // Four models: the per-example-variance LiRA attacks are undefined and
  // left out, and the results say the rest are noisy.
  ASSERT_EQ(results->attacks_size(), 4);
  ASSERT_EQ(results->warnings_size(), 2);
  EXPECT_EQ(results->warnings(0).code(), "few_reference_models");
  EXPECT_THAT(results->warnings(0).message(), HasSubstr("4 reference models"));
  EXPECT_EQ(results->warnings(1).code(), "attacks_left_out");
  EXPECT_THAT(results->warnings(1).message(), HasSubstr("lira_online, lira_offline"));
  // Results carry what produced them: an archived document is complete.
  EXPECT_EQ(results->spec().membership().reference_models(), 4u);
  EXPECT_THAT(results->version(), HasSubstr("commit"));
  EXPECT_EQ(results->members() + results->non_members(), 4u * 200u);
  for (const v1::AttackResult& a : results->attacks()) {
    EXPECT_GE(a.auc(), 0.0) << a.attack();
    EXPECT_LE(a.auc(), 1.0) << a.attack();
    // The AUC's interval (clustered by example) brackets it.
    EXPECT_LE(a.auc_low(), a.auc()) << a.attack();
    EXPECT_GE(a.auc_high(), a.auc()) << a.attack();
    EXPECT_LT(a.auc_low(), a.auc_high()) << a.attack();
    ASSERT_EQ(a.operating_points_size(), 2);
  }
  // A listing shows the audit.
  auto list = client_->List(10);
  MEMAUDIT_ASSERT_OK(list);
  ASSERT_EQ(list->audits_size(), 1);
  EXPECT_EQ(list->audits(0).audit_id(), submitted->audit_id());

  // Both services export what happened on /metrics.
  const std::string coordinator_metrics = HttpGet(cluster_->coordinator_metrics_port(), "/metrics");
  EXPECT_THAT(coordinator_metrics, HasSubstr("memaudit_coordinator_tasks{state=\"succeeded\"} 4"));
  const std::string scorer_metrics = HttpGet(cluster_->scorer_metrics_port(), "/metrics");
  EXPECT_TRUE(HasSeries(scorer_metrics, "memaudit_membership_auc_ratio",
                        {{"attack", "loss"}, {"audit", submitted->audit_id()}}))
      << scorer_metrics;
  // SIGTERM shuts each service down cleanly.
  EXPECT_EQ(cluster_->coordinator()->Stop(), 0);
  EXPECT_EQ(cluster_->scorer()->Stop(), 0);
}

TEST_F(MembershipAuditTest, GrowingAnAuditTrainsOnlyTheNewModels) {
  ASSERT_NO_FATAL_FAILURE(RunBaseline(TinyMembershipSpec(8)));
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  auto small = client_->Submit(TinyMembershipSpec(4));
  MEMAUDIT_ASSERT_OK(small);
  ASSERT_EQ(WaitForEnd(small->audit_id()).state(), v1::SUCCEEDED);

  auto grown = client_->Submit(TinyMembershipSpec(8));
  MEMAUDIT_ASSERT_OK(grown);
  v1::Audit audit = WaitForEnd(grown->audit_id());
  ASSERT_EQ(audit.state(), v1::SUCCEEDED) << audit.error();
  EXPECT_EQ(audit.tasks().succeeded(), 8u);
  const std::string scorer_metrics = HttpGet(cluster_->scorer_metrics_port(), "/metrics");
  EXPECT_THAT(scorer_metrics, HasSubstr("memaudit_scorer_reused_models_total 4"));
  // The worker trained 4 + 4 models, not 4 + 8.
  const std::string worker_metrics = HttpGet(cluster_->worker_metrics_port(0), "/metrics");
  EXPECT_THAT(worker_metrics, HasSubstr("memaudit_worker_tasks_total{outcome=\"succeeded\"} 8"));
  // Reused models give exactly the numbers of training all eight afresh.
  auto results = client_->Report(grown->audit_id());
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_EQ(Numbers(*results), Numbers(baseline_));
}

// models_per_task changes speed, never the numbers. An odd pool makes the
// halves of even and odd models differ by a row, so the packed tasks also
// split into equal-size ensembles; 8 models by 3 leave a short last task.
TEST_F(MembershipAuditTest, PackedModelsGiveTheNumbersOfOneModelPerTask) {
  v1::AuditSpec spec = TinyMembershipSpec(8);
  spec.mutable_membership()->mutable_dataset()->set_pool_size(201);
  ASSERT_NO_FATAL_FAILURE(RunBaseline(spec));
  for (uint32_t per_task : {4u, 3u}) {
    ASSERT_NO_FATAL_FAILURE(
        StartCluster(/*workers=*/2, /*lease_ttl_ms=*/10000, absl::StrCat("-packed", per_task)));
    spec.mutable_resources()->set_models_per_task(per_task);
    auto submitted = client_->Submit(spec);
    MEMAUDIT_ASSERT_OK(submitted);
    EXPECT_EQ(submitted->tasks(), per_task == 4 ? 2u : 3u);
    v1::Audit audit = WaitForEnd(submitted->audit_id());
    ASSERT_EQ(audit.state(), v1::SUCCEEDED) << audit.error();
    EXPECT_EQ(audit.steps_done(), audit.steps_total());
    auto results = client_->Report(submitted->audit_id());
    MEMAUDIT_ASSERT_OK(results);
    ASSERT_TRUE(results->complete());
    EXPECT_EQ(results->models(), 8u);
    EXPECT_EQ(Numbers(*results), Numbers(baseline_)) << "models_per_task " << per_task;
    cluster_->Stop();
  }
}

// Packed tasks are reused whole: growing 4 -> 8 models by 4 trains one task.
TEST_F(MembershipAuditTest, GrowingAPackedAuditTrainsOnlyTheNewModels) {
  ASSERT_NO_FATAL_FAILURE(RunBaseline(TinyMembershipSpec(8)));
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  v1::AuditSpec small = TinyMembershipSpec(4);
  small.mutable_resources()->set_models_per_task(4);
  auto first = client_->Submit(small);
  MEMAUDIT_ASSERT_OK(first);
  EXPECT_EQ(first->tasks(), 1u);
  ASSERT_EQ(WaitForEnd(first->audit_id()).state(), v1::SUCCEEDED);

  v1::AuditSpec grown = TinyMembershipSpec(8);
  grown.mutable_resources()->set_models_per_task(4);
  auto second = client_->Submit(grown);
  MEMAUDIT_ASSERT_OK(second);
  v1::Audit audit = WaitForEnd(second->audit_id());
  ASSERT_EQ(audit.state(), v1::SUCCEEDED) << audit.error();
  EXPECT_EQ(audit.tasks().succeeded(), 2u);
  EXPECT_EQ(audit.steps_done(), audit.steps_total());
  const std::string scorer_metrics = HttpGet(cluster_->scorer_metrics_port(), "/metrics");
  EXPECT_THAT(scorer_metrics, HasSubstr("memaudit_scorer_reused_models_total 4"));
  // The worker ran one task per audit: models 0-3, then 4-7.
  const std::string worker_metrics = HttpGet(cluster_->worker_metrics_port(0), "/metrics");
  EXPECT_THAT(worker_metrics, HasSubstr("memaudit_worker_tasks_total{outcome=\"succeeded\"} 2"));
  auto results = client_->Report(second->audit_id());
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_EQ(Numbers(*results), Numbers(baseline_)) << "packed and grown = unpacked from scratch";
}

TEST_F(MembershipAuditTest, KilledWorkerTaskIsReleasedAndResultsAreUnchanged) {
  // About a second per model, so heartbeats (every 200 ms) show progress.
  v1::AuditSpec spec = TinyMembershipSpec(4, 100);
  spec.mutable_membership()->mutable_dataset()->set_pool_size(400);
  spec.mutable_membership()->mutable_model()->set_hidden(0, 256);
  ASSERT_NO_FATAL_FAILURE(RunBaseline(spec));

  // Now kill the only worker while it trains a model after the first.
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1, /*lease_ttl_ms=*/1000, "-killed"));
  auto submitted = client_->Submit(spec);
  MEMAUDIT_ASSERT_OK(submitted);
  bool killed = false;
  bool retried = false;
  uint64_t steps_when_last_done = 0;
  absl::Status watched = client_->Watch(submitted->audit_id(), [&](const v1::AuditEvent& e) {
    // Re-queued without an attempt spent: a silent worker may have been preempted.
    if (e.type() == v1::TASK_RELEASED) {
      retried = true;
      EXPECT_THAT(e.message(), HasSubstr("lease expired"));
      EXPECT_THAT(e.message(), HasSubstr("attempt not counted"));
    }
    EXPECT_NE(e.type(), v1::TASK_RETRIED);
    if (e.type() == v1::TASK_SUCCEEDED) steps_when_last_done = e.audit().steps_done();
    // A heartbeat has reported steps of a model after the first: it is
    // mid-task. Any of the three later models will do, so a fast machine whose
    // second model ends between two heartbeats still gets its kill.
    const uint32_t done = e.audit().tasks().succeeded();
    if (!killed && done >= 1 && done < 4 && e.audit().tasks().running() == 1 &&
        e.audit().steps_done() > steps_when_last_done) {
      cluster_->worker(0)->Signal(SIGKILL);
      killed = true;
      MEMAUDIT_EXPECT_OK(cluster_->AddWorker());
    }
    return true;
  });
  MEMAUDIT_ASSERT_OK(watched);
  ASSERT_TRUE(killed);
  EXPECT_TRUE(retried) << "the dead worker's task must be re-queued";
  EXPECT_EQ(cluster_->worker(0)->Wait(), 128 + SIGKILL);
  auto audit = client_->Get(submitted->audit_id());
  ASSERT_EQ(audit->state(), v1::SUCCEEDED) << audit->error();
  auto results = client_->Report(submitted->audit_id());
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_EQ(Numbers(*results), Numbers(baseline_))
      << "a re-leased task must reproduce its signals bit for bit";
}

TEST_F(MembershipAuditTest, CancelStopsTheWorkers) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  auto submitted = client_->Submit(TinyMembershipSpec(8, 2000));
  MEMAUDIT_ASSERT_OK(submitted);
  // Cancel once training has visibly started.
  absl::Status watched = client_->Watch(submitted->audit_id(), [&](const v1::AuditEvent& e) {
    if (e.audit().steps_done() > 0) {
      auto cancelled = client_->Cancel(submitted->audit_id());
      MEMAUDIT_EXPECT_OK(cancelled);
      EXPECT_EQ(cancelled->state(), v1::CANCELLED);
    }
    return true;
  });
  MEMAUDIT_ASSERT_OK(watched);
  auto audit = client_->Get(submitted->audit_id());
  EXPECT_EQ(audit->state(), v1::CANCELLED);
  EXPECT_EQ(audit->tasks().cancelled(), 8u);
  EXPECT_EQ(audit->tasks().succeeded(), 0u);
  // The worker stops the task at its next heartbeat and stays alive, idle.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_FALSE(cluster_->worker(0)->Exited());
  auto after = client_->Get(submitted->audit_id());
  EXPECT_EQ(after->tasks().running(), 0u);
  EXPECT_LT(after->steps_done(), after->steps_total());
}

// The TPR at `fpr` of an attack's results.
double TprAt(const v1::AttackResult& a, double fpr) {
  for (const v1::OperatingPoint& p : a.operating_points()) {
    if (p.fpr_target() == fpr) return p.tpr();
  }
  ADD_FAILURE() << "no operating point at " << fpr;
  return -1;
}

// Membership of documents in a language model through the services: with
// reference models on random halves, LiRA and RMIA find far more of an
// overfit transformer's training sequences at 1% FPR than the loss
// (perplexity) attack, and every attack of documents is scored with its
// intervals.
TEST_F(MembershipAuditTest, LiraBeatsTheLossAttackOnTheDocumentsOfAnOverfitTransformer) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  Finished run;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(TinyDocumentsSpec(), &run));
  const v1::Audit& audit = run.audit;
  EXPECT_EQ(audit.tasks().total(), 16u);
  EXPECT_EQ(audit.steps_done(), audit.steps_total()) << "the plan counts each model's steps";
  const v1::AuditResults* results = &run.results;
  std::map<std::string, const v1::AttackResult*> by_name;
  for (const v1::AttackResult& a : results->attacks()) {
    by_name[membership::AttackName(a.attack())] = &a;
    EXPECT_LE(a.auc_low(), a.auc()) << a.attack();
    EXPECT_GE(a.auc_high(), a.auc()) << a.attack();
    EXPECT_LE(a.auc_rerun_low(), a.auc()) << a.attack();
    EXPECT_GE(a.auc_rerun_high(), a.auc()) << a.attack();
  }
  EXPECT_THAT(results->spec().membership().attacks(),
              ::testing::ElementsAre("lira_online", "lira_offline", "lira_online_fixed_variance",
                                     "lira_offline_fixed_variance", "rmia", "loss", "zlib", "min_k",
                                     "min_k_plus", "reference"));
  ASSERT_EQ(by_name.size(), 10u);
  const double loss = TprAt(*by_name.at("loss"), 0.01);
  EXPECT_GT(TprAt(*by_name.at("lira_online"), 0.01), loss + 0.2);
  EXPECT_GT(TprAt(*by_name.at("rmia"), 0.01), loss + 0.2);
  EXPECT_GT(by_name.at("reference")->auc(), by_name.at("loss")->auc());
  EXPECT_THAT(cli::HtmlReport(audit, *results), HasSubstr("min_k_plus"));

  // A text attack needs documents.
  v1::AuditSpec dataset = TinyMembershipSpec();
  dataset.mutable_membership()->add_attacks("zlib");
  auto refused = client_->Submit(dataset);
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("membership.attacks[0]: \"zlib\" scores documents only"));
}

// A team's own language model as the target: a GPT that
// examples/models/train_target_documents.py trains on alternate blocks of a
// text's lines, scored as model N against reference transformers trained on
// halves of the pool; a pool sequence is its member when it occurs in the
// text it trained on.
TEST_F(MembershipAuditTest, ATeamsGptIsAuditedForTheSequencesItTrainedOn) {
  const std::string dir = FreshTestDir("documents-target");
  ASSERT_EQ(Shell(absl::StrCat("mkdir -p ", dir)).exit_code, 0);
  const Output trained = Shell(absl::StrCat(
      "/usr/bin/python3 ", MEMAUDIT_SOURCE_DIR,
      "/examples/models/train_target_documents.py --corpus /usr/share/games/fortunes "
      "--max-chars 12000 --epochs 120 --width 64 --ffn 128 --learning-rate 0.005 --corpus-out ",
      dir, "/corpus.txt --members-out ", dir, "/members.txt --out ", dir, "/gpt.pt"));
  if (trained.exit_code != 0) GTEST_SKIP() << "python3-torch: " << trained.text;
  data_roots_ = {dir};
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  v1::AuditSpec spec = TinyDocumentsSpec();
  v1::MembershipAudit* m = spec.mutable_membership();
  m->set_reference_models(8);
  m->mutable_documents()->mutable_corpus()->set_path(dir + "/corpus.txt");
  m->mutable_target()->set_torchscript_path(dir + "/gpt.pt");
  m->mutable_target()->set_members_path(dir + "/members.txt");
  Finished run;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &run));
  EXPECT_EQ(run.audit.tasks().total(), 9u) << "8 reference models and the target";
  const v1::AuditResults* results = &run.results;
  const v1::TargetModelSpec& target = results->spec().membership().target();
  EXPECT_THAT(target.content_hash(), ::testing::StartsWith("sha256:"));
  EXPECT_GT(target.members(), 100u) << "the lines of the text it trained on";
  EXPECT_EQ(results->members() + results->non_members(), 240u) << "one target, the pool";
  EXPECT_GT(results->members(), 60u);
  EXPECT_GT(results->non_members(), 60u);
  ASSERT_EQ(results->attacks_size(), 10);
  for (const v1::AttackResult& a : results->attacks()) {
    EXPECT_GT(a.auc(), 0.75) << membership::AttackName(a.attack());
  }
  EXPECT_THAT(cli::RenderResults(*results, cli::OutputFormat::kTable),
              HasSubstr("trained on the "));
}

TEST_F(MembershipAuditTest, MalformedSpecIsRefusedWithTheFieldNamed) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  v1::AuditSpec spec = TinyMembershipSpec();
  spec.mutable_membership()->set_reference_models(3);
  spec.mutable_membership()->mutable_training()->set_epochs(0);
  auto refused = client_->Submit(spec);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("membership.reference_models"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("membership.training.epochs"));
  // The same problems as data, in the status's details (errors.proto).
  auto details = refused.status().GetPayload(kErrorDetailsPayload);
  ASSERT_TRUE(details.has_value());
  v1::ErrorStatus status;
  ASSERT_TRUE(status.ParseFromString(std::string(*details)));
  EXPECT_EQ(status.code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  ASSERT_EQ(status.details_size(), 1);
  v1::FieldViolations violations;
  ASSERT_TRUE(status.details(0).UnpackTo(&violations));
  std::vector<std::string> fields;
  for (const auto& v : violations.violations()) fields.push_back(v.field());
  EXPECT_THAT(fields, ::testing::UnorderedElementsAre("membership.reference_models",
                                                      "membership.training.epochs"));
  EXPECT_THAT(violations.violations(0).description(), HasSubstr("(got "));

  v1::AuditSpec unlearning;

  unlearning.set_name("test");
  unlearning.mutable_unlearning()->set_method("retrain");
  auto bad_kind = client_->Submit(unlearning);
  EXPECT_THAT(bad_kind, StatusIs(absl::StatusCode::kInvalidArgument));

  auto list = client_->List(10);
  MEMAUDIT_ASSERT_OK(list);
  EXPECT_EQ(list->audits_size(), 0) << "a refused spec must not create an audit";
  EXPECT_THAT(client_->Get("a-missing"), StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace memaudit::testing
