#include "tests/integration/observed_audit.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/messages/audit_kinds.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

constexpr uint32_t kObservedWorkers = 2;

// The gauge each kind's scorer publishes once its results exist; a kind
// without one here fails the test instead of waiting on another kind's gauge.
std::string ResultFamily(const std::string& kind) {
  if (kind == "membership") return "memaudit_membership_auc_ratio";
  if (kind == "exposure") return "memaudit_exposure_log2";
  if (kind == "forgetting") return "memaudit_forgetting_mi_accuracy_ratio";
  if (kind == "unlearning") return "memaudit_unlearning_auc_ratio";
  if (kind == "relational") return "memaudit_relational_rm_norm_ratio";
  if (kind == "dp_audit") return "memaudit_dp_audit_epsilon_lower";
  ADD_FAILURE() << "no result gauge known for kind " << kind;
  return "memaudit_no_such_family";
}

void Release(Observed*& observed) {
  if (observed == nullptr) return;
  // Prometheus first, so it does not log the services going away.
  observed->prometheus.reset();
  if (observed->cluster) observed->cluster->Stop();
  delete observed;
  observed = nullptr;
}

void CheckReady(const Observed* observed) {
  if (!PrometheusInstalled()) {
    GTEST_SKIP() << kPrometheusBinary << " not installed (scripts/install-deps.sh installs it)";
  }
  ASSERT_NE(observed, nullptr);
  ASSERT_EQ(observed->error, "");
  for (const v1::Audit& a : observed->audits) {
    ASSERT_EQ(a.state(), v1::SUCCEEDED) << a.kind() << ": " << a.error();
  }
}

}  // namespace

bool PrometheusInstalled() { return access(kPrometheusBinary, X_OK) == 0; }

std::unique_ptr<Observed> ObserveAudits(const std::string& name,
                                        const std::vector<v1::AuditSpec>& specs) {
  if (!PrometheusInstalled()) return nullptr;
  auto observed = std::make_unique<Observed>();
  Observed& o = *observed;
  o.dir = absl::StrCat(::testing::TempDir(), "memaudit-it-", getpid(), "-", name);
  std::system(absl::StrCat("rm -rf '", o.dir, "'").c_str());

  cli::ClusterOptions options;
  options.dir = o.dir + "/cluster";
  options.workers = kObservedWorkers;
  options.heartbeat_ms = 200;
  options.bin_dir = MEMAUDIT_BIN_DIR;
  auto cluster = cli::EmbeddedCluster::Start(options);
  if (!cluster.ok()) {
    o.error = cluster.status().ToString();
    return observed;
  }
  o.cluster = std::move(*cluster);
  auto client =
      cli::Client::Connect(o.cluster->coordinator_address(), o.cluster->client_credentials());
  if (!client.ok()) {
    o.error = client.status().ToString();
    return observed;
  }
  o.client = std::make_unique<cli::Client>(*std::move(client));

  ScrapeJob worker_job{"worker", {}};
  for (size_t i = 0; i < o.cluster->worker_count(); ++i) {
    worker_job.ports.push_back(o.cluster->worker_metrics_port(i));
    if (worker_job.ports.back() == 0) {
      o.error = absl::StrCat("worker ", i, " serves no /metrics; see ", options.dir);
      return observed;
    }
  }
  auto prometheus = PrometheusServer::Start(
      o.dir + "/prometheus", {{"coordinator", {o.cluster->coordinator_metrics_port()}},
                              {"scorer", {o.cluster->scorer_metrics_port()}},
                              worker_job});
  if (!prometheus.ok()) {
    o.error = prometheus.status().ToString();
    return observed;
  }
  o.prometheus = std::move(*prometheus);
  // Prometheus syncs its targets a few seconds after it is ready; audits
  // submitted before the first scrape would leave no time series behind.
  const size_t targets = 2 + worker_job.ports.size();
  if (o.prometheus
          ->WaitFor(
              absl::StrCat("count(up == 1) == ", targets),
              [](const nlohmann::json& r) { return !r.empty(); }, 30000)
          .empty()) {
    o.error = "Prometheus never scraped every target";
    return observed;
  }

  std::vector<std::string> ids;
  uint64_t tasks = 0;
  o.started_unix_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (const v1::AuditSpec& spec : specs) {
    auto submitted = o.client->Submit(spec);
    if (!submitted.ok()) {
      o.error = submitted.status().ToString();
      return observed;
    }
    ids.push_back(submitted->audit_id());
    tasks += submitted->tasks();
  }
  std::vector<std::string> settled = {
      absl::StrCat("memaudit_coordinator_tasks{state=\"succeeded\"} == ", tasks),
      absl::StrCat("sum(memaudit_worker_tasks_total{outcome=\"succeeded\"}) == ", tasks)};
  for (const std::string& id : ids) {
    absl::Status watched = o.client->Watch(id, [](const v1::AuditEvent&) { return true; });
    auto audit = o.client->Get(id);
    auto results = o.client->Report(id);
    if (!watched.ok() || !audit.ok() || !results.ok()) {
      o.error = absl::StrCat("audit ", id, " did not finish: ", watched.ToString(), " ",
                             audit.status().ToString(), " ", results.status().ToString());
      return observed;
    }
    o.audits.push_back(*audit);
    o.results.push_back(*results);
    o.ids[AuditKindName(audit->kind())] = id;
    settled.push_back(absl::StrCat("count(", ResultFamily(AuditKindName(audit->kind())),
                                   "{audit=\"", id, "\"}) > 0"));
  }
  // Let Prometheus scrape the final state of every process once, so each
  // test starts from a settled view (tests still poll for what they check).
  const std::string all_settled = absl::StrJoin(settled, " and on() ");
  if (o.prometheus
          ->WaitFor(
              all_settled, [](const nlohmann::json& r) { return !r.empty(); }, 30000)
          .empty()) {
    o.error = absl::StrCat("Prometheus never scraped the finished audits: ", all_settled);
  }
  return observed;
}

Observed* PrometheusTest::observed_ = nullptr;

void PrometheusTest::SetUpTestSuite() {
  static_assert(kWorkers == kObservedWorkers);
  // Enough epochs that training spans several scrapes.
  observed_ = ObserveAudits("observed", {TinyMembershipSpec(kModels, /*epochs=*/20)}).release();
}

void PrometheusTest::TearDownTestSuite() { Release(observed_); }

void PrometheusTest::SetUp() { CheckReady(observed_); }

Observed* EveryKindObservedTest::observed_ = nullptr;

void EveryKindObservedTest::SetUpTestSuite() {
  // Evaluation points feed the dashboard's exposure-during-training panel,
  // held-out sequences its extractable-memorization panel.
  v1::AuditSpec exposure = TinyExposureSpec();
  exposure.mutable_exposure()->set_eval_every_epoch(true);
  v1::ExtractableSpec* extractable = exposure.mutable_exposure()->mutable_extractable();
  extractable->set_prefix_chars(12);
  extractable->set_suffix_chars(12);
  extractable->add_duplicates(40);
  extractable->set_sequences(2);
  observed_ = ObserveAudits("every-kind",
                            {TinyMembershipSpec(), exposure, TinyForgettingSpec(),
                             TinyUnlearningSpec(), TinyLinearRelationalSpec(), TinyDpAuditSpec()})
                  .release();
}

void EveryKindObservedTest::TearDownTestSuite() { Release(observed_); }

void EveryKindObservedTest::SetUp() { CheckReady(observed_); }

}  // namespace memaudit::testing
