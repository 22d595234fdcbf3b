// What a real Prometheus scrapes from a finished membership audit matches
// what the audit did and what its report says.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "audits/membership/attacks.h"
#include "tests/integration/observed_audit.h"

namespace memaudit::testing {
namespace {

TEST_F(PrometheusTest, CoordinatorSeriesMatchTheAudit) {
  for (const char* job : {"coordinator", "scorer", "worker"}) {
    const double expected = std::string(job) == "worker" ? kWorkers : 1;
    EXPECT_EQ(prometheus().WaitForValue(absl::StrCat("sum(up{job=\"", job, "\"})"), expected),
              expected)
        << job;
  }
  EXPECT_EQ(prometheus().WaitForValue("memaudit_coordinator_tasks{state=\"succeeded\"}", kModels),
            kModels);
  EXPECT_EQ(prometheus().WaitForValue("memaudit_coordinator_queue_depth", 0), 0);
  EXPECT_EQ(prometheus().WaitForValue("memaudit_coordinator_leases", 0), 0);
  EXPECT_EQ(prometheus().WaitForValue("memaudit_coordinator_workers_connected", kWorkers),
            kWorkers);
  // audit_info names the audit's kind, name and team; its progress is whole.
  EXPECT_EQ(
      prometheus().WaitForValue(absl::StrCat("memaudit_coordinator_audit_info{audit=\"", audit_id(),
                                             "\",kind=\"membership\",name=\"", audit().name(),
                                             "\",team=\"", audit().team(), "\"}"),
                                1),
      1);
  EXPECT_EQ(
      prometheus().WaitForValue(
          absl::StrCat("memaudit_coordinator_audit_progress_ratio{audit=\"", audit_id(), "\"}"), 1),
      1);
  EXPECT_EQ(
      prometheus().WaitForValue(
          "sum(memaudit_coordinator_task_duration_seconds_count{outcome=\"succeeded\"})", kModels),
      kModels);
  EXPECT_EQ(prometheus().WaitForValue("sum(memaudit_coordinator_task_retries_total)", 0), 0);
  // Every worker's Complete went through the interceptor on the coordinator.
  EXPECT_EQ(
      prometheus().WaitForValue("sum(memaudit_grpc_server_handled_total{job=\"coordinator\","
                                "method=\"/memaudit.v1.WorkerService/Complete\",code=\"OK\"})",
                                kModels),
      kModels);
  EXPECT_GT(prometheus().WaitForValue(
                "sum(memaudit_grpc_server_handling_seconds_count{job=\"coordinator\","
                "method=\"/memaudit.v1.AuditService/Submit\"})",
                1),
            0);
}

TEST_F(PrometheusTest, ScorerGaugesEqualTheReport) {
  const v1::AuditResults& report = results();
  ASSERT_TRUE(report.complete());
  ASSERT_GT(report.attacks_size(), 0);
  for (const v1::AttackResult& attack : report.attacks()) {
    const std::string selector = absl::StrCat("{audit=\"", audit_id(), "\",attack=\"",
                                              membership::AttackName(attack.attack()), "\"");
    const double auc = SingleValue(
        prometheus().WaitFor(absl::StrCat("memaudit_membership_auc_ratio", selector, "}"),
                             [](const nlohmann::json& r) { return r.size() == 1; }));
    EXPECT_NEAR(auc, attack.auc(), 1e-9) << membership::AttackName(attack.attack());
    for (const v1::OperatingPoint& point : attack.operating_points()) {
      const double tpr = SingleValue(
          prometheus().WaitFor(absl::StrCat("memaudit_membership_tpr_ratio", selector, ",fpr=\"",
                                            absl::StrFormat("%g", point.fpr_target()), "\"}"),
                               [](const nlohmann::json& r) { return r.size() == 1; }));
      EXPECT_NEAR(tpr, point.tpr(), 1e-9)
          << membership::AttackName(attack.attack()) << " @ " << point.fpr_target();
    }
  }
  // Each model sent phi and loss on the pool and, for RMIA (among the
  // default attacks), its loss on the population.
  EXPECT_EQ(prometheus().WaitForValue("sum(memaudit_scorer_observations_total{outcome=\"stored\"})",
                                      3 * kModels),
            3 * kModels);
  EXPECT_EQ(prometheus().WaitForValue(
                "memaudit_scorer_scoring_duration_seconds_count{kind=\"membership\"}", 1),
            1);
  const double warnings = report.warnings_size();
  EXPECT_EQ(
      prometheus().WaitForValue(
          absl::StrCat("memaudit_scorer_audit_warnings{audit=\"", audit_id(), "\"}"), warnings),
      warnings);
}

TEST_F(PrometheusTest, WorkerCountersAddUpToTheAudit) {
  // The workers trained this audit only, each task exactly once.
  const double steps = static_cast<double>(audit().steps_total());
  ASSERT_GT(steps, 0);
  EXPECT_EQ(prometheus().WaitForValue("sum(memaudit_worker_training_steps_total)", steps), steps);
  EXPECT_EQ(
      prometheus().WaitForValue("sum(memaudit_worker_tasks_total{outcome=\"succeeded\"})", kModels),
      kModels);
  EXPECT_EQ(
      prometheus().WaitForValue("sum(memaudit_worker_tasks_total{outcome=~\"failed|stopped\"})", 0),
      0);
  EXPECT_EQ(prometheus().WaitForValue(
                "sum(memaudit_worker_task_duration_seconds_count{outcome=\"succeeded\"})", kModels),
            kModels);
  // Every model trains on about half the pool for 20 epochs.
  const double examples =
      SingleValue(prometheus().WaitFor("sum(memaudit_worker_training_examples_total)",
                                       [](const nlohmann::json& r) { return SingleValue(r) > 0; }));
  EXPECT_GT(examples, steps);
  EXPECT_GT(
      SingleValue(prometheus().WaitFor("max(memaudit_worker_training_steps_per_second)",
                                       [](const nlohmann::json& r) { return SingleValue(r) > 0; })),
      0);
  EXPECT_GT(
      SingleValue(prometheus().WaitFor("max(memaudit_worker_training_examples_per_second)",
                                       [](const nlohmann::json& r) { return SingleValue(r) > 0; })),
      0);
}

}  // namespace
}  // namespace memaudit::testing
