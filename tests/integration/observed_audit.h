// Audits run to completion on an embedded cluster while a real Prometheus
// scrapes the coordinator, the scorer and both workers. Set up once per suite
// and shared by its tests, because starting Prometheus and training is the
// slow part:
// - PrometheusTest: one small membership audit, so every counter can be
//   checked exactly against it (prometheus_test.cc, dashboard variables);
// - EveryKindObservedTest: one small audit of each kind, so every panel of
//   the Grafana dashboard can be checked for data (dashboard_test.cc).
#ifndef MEMAUDIT_TESTS_INTEGRATION_OBSERVED_AUDIT_H_
#define MEMAUDIT_TESTS_INTEGRATION_OBSERVED_AUDIT_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/embedded_cluster.h"
#include "gtest/gtest.h"
#include "memaudit/v1/audit.pb.h"
#include "memaudit/v1/results.pb.h"
#include "tests/integration/prometheus_server.h"

namespace memaudit::testing {

struct Observed {
  std::string dir;
  std::unique_ptr<cli::EmbeddedCluster> cluster;
  std::unique_ptr<cli::Client> client;
  std::unique_ptr<PrometheusServer> prometheus;
  std::vector<v1::Audit> audits;           // final states, in submission order
  std::vector<v1::AuditResults> results;   // what GetResults (the report) says
  std::map<std::string, std::string> ids;  // kind -> audit id
  std::string error;                       // why set-up failed, if it did
  double started_unix_s = 0;               // when the first audit was submitted
};

// Starts the cluster and Prometheus under `name`, runs every spec to its end
// (all submitted at once), and waits until Prometheus has scraped the final
// state. Null when Prometheus is not installed; `error` says what failed.
std::unique_ptr<Observed> ObserveAudits(const std::string& name,
                                        const std::vector<v1::AuditSpec>& specs);
bool PrometheusInstalled();

class PrometheusTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kModels = 4;
  static constexpr uint32_t kWorkers = 2;

  static void SetUpTestSuite();
  static void TearDownTestSuite();
  // Skips without Prometheus; fails when the suite's set-up failed.
  void SetUp() override;

  static Observed* observed_;

  PrometheusServer& prometheus() { return *observed_->prometheus; }
  const std::string& audit_id() { return observed_->audits[0].audit_id(); }
  const v1::Audit& audit() { return observed_->audits[0]; }
  const v1::AuditResults& results() { return observed_->results[0]; }
};

class EveryKindObservedTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;

  static Observed* observed_;

  PrometheusServer& prometheus() { return *observed_->prometheus; }
};

}  // namespace memaudit::testing

#endif  // MEMAUDIT_TESTS_INTEGRATION_OBSERVED_AUDIT_H_
