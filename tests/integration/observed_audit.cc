#include "tests/integration/observed_audit.h"

#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

bool PrometheusInstalled() { return access(kPrometheusBinary, X_OK) == 0; }

}  // namespace

PrometheusTest::Observed* PrometheusTest::observed_ = nullptr;

void PrometheusTest::SetUpTestSuite() {
  if (!PrometheusInstalled()) return;
  observed_ = new Observed();
  Observed& o = *observed_;
  o.dir = absl::StrCat(::testing::TempDir(), "memaudit-it-", getpid(), "-observed");
  std::system(absl::StrCat("rm -rf '", o.dir, "'").c_str());

  cli::ClusterOptions options;
  options.dir = o.dir + "/cluster";
  options.workers = kWorkers;
  options.heartbeat_ms = 200;
  options.bin_dir = MEMAUDIT_BIN_DIR;
  auto cluster = cli::EmbeddedCluster::Start(options);
  if (!cluster.ok()) {
    o.error = cluster.status().ToString();
    return;
  }
  o.cluster = std::move(*cluster);
  o.client = std::make_unique<cli::Client>(o.cluster->coordinator_address());

  ScrapeJob worker_job{"worker", {}};
  for (size_t i = 0; i < o.cluster->worker_count(); ++i) {
    worker_job.ports.push_back(o.cluster->worker_metrics_port(i));
    if (worker_job.ports.back() == 0) {
      o.error = absl::StrCat("worker ", i, " serves no /metrics; see ", options.dir);
      return;
    }
  }
  auto prometheus = PrometheusServer::Start(
      o.dir + "/prometheus", {{"coordinator", {o.cluster->coordinator_metrics_port()}},
                              {"scorer", {o.cluster->scorer_metrics_port()}},
                              worker_job});
  if (!prometheus.ok()) {
    o.error = prometheus.status().ToString();
    return;
  }
  o.prometheus = std::move(*prometheus);

  // Enough epochs that training spans several scrapes.
  auto submitted = o.client->Submit(TinyMembershipSpec(kModels, /*epochs=*/20));
  if (!submitted.ok()) {
    o.error = submitted.status().ToString();
    return;
  }
  absl::Status watched =
      o.client->Watch(submitted->audit_id(), [](const v1::AuditEvent&) { return true; });
  auto audit = o.client->Get(submitted->audit_id());
  auto results = o.client->Report(submitted->audit_id());
  if (!watched.ok() || !audit.ok() || !results.ok()) {
    o.error = absl::StrCat("audit did not finish: ", watched.ToString(), " ",
                           audit.status().ToString(), " ", results.status().ToString());
    return;
  }
  o.audit = *audit;
  o.results = *results;
  // Let Prometheus scrape the final state of every process once, so each
  // test starts from a settled view (tests still poll for what they check).
  const std::string settled = absl::StrCat(
      "memaudit_coordinator_tasks{state=\"succeeded\"} == ", kModels,
      " and on() sum(memaudit_worker_tasks_total{outcome=\"succeeded\"}) == ", kModels,
      " and on() count(memaudit_membership_auc_ratio{audit=\"", o.audit.audit_id(), "\"}) > 0");
  if (o.prometheus
          ->WaitFor(
              settled, [](const nlohmann::json& r) { return !r.empty(); }, 30000)
          .empty()) {
    o.error = absl::StrCat("Prometheus never scraped the finished audit: ", settled);
  }
}

void PrometheusTest::TearDownTestSuite() {
  if (observed_ == nullptr) return;
  // Prometheus first, so it does not log the services going away.
  observed_->prometheus.reset();
  if (observed_->cluster) observed_->cluster->Stop();
  delete observed_;
  observed_ = nullptr;
}

void PrometheusTest::SetUp() {
  if (!PrometheusInstalled()) {
    GTEST_SKIP() << kPrometheusBinary << " not installed (scripts/install-deps.sh installs it)";
  }
  ASSERT_NE(observed_, nullptr);
  ASSERT_EQ(observed_->error, "");
  ASSERT_EQ(observed_->audit.state(), v1::SUCCEEDED) << observed_->audit.error();
}

}  // namespace memaudit::testing
