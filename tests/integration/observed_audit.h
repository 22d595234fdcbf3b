// One small membership audit run to completion on an embedded cluster while
// a real Prometheus scrapes the coordinator, the scorer and both workers.
// Set up once per suite run and shared by its tests (prometheus_test.cc,
// dashboard_test.cc), because starting Prometheus and training is the slow
// part.
#ifndef MEMAUDIT_TESTS_INTEGRATION_OBSERVED_AUDIT_H_
#define MEMAUDIT_TESTS_INTEGRATION_OBSERVED_AUDIT_H_

#include <memory>
#include <string>

#include "cli/client.h"
#include "cli/embedded_cluster.h"
#include "gtest/gtest.h"
#include "memaudit/v1/audit.pb.h"
#include "memaudit/v1/results.pb.h"
#include "tests/integration/prometheus_server.h"

namespace memaudit::testing {

class PrometheusTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kModels = 4;
  static constexpr uint32_t kWorkers = 2;

  static void SetUpTestSuite();
  static void TearDownTestSuite();
  // Skips without Prometheus; fails when the suite's set-up failed.
  void SetUp() override;

  struct Observed {
    std::string dir;
    std::unique_ptr<cli::EmbeddedCluster> cluster;
    std::unique_ptr<cli::Client> client;
    std::unique_ptr<PrometheusServer> prometheus;
    v1::Audit audit;           // its final state
    v1::AuditResults results;  // what GetResults (the report) says
    std::string error;         // why set-up failed, if it did
  };
  static Observed* observed_;

  PrometheusServer& prometheus() { return *observed_->prometheus; }
  const std::string& audit_id() { return observed_->audit.audit_id(); }
};

}  // namespace memaudit::testing

#endif  // MEMAUDIT_TESTS_INTEGRATION_OBSERVED_AUDIT_H_
