// The services as README's "Running the services yourself" starts them:
// certificates made by scripts/make-certs.sh (Debian's openssl), a scorer, a
// coordinator and a worker as separate processes over mutual TLS, and the
// memaudit CLI submitting with a team certificate from the environment.
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/process.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/certs_deployment.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;

class TlsDeploymentTest : public CertsDeploymentTest {};

TEST_F(TlsDeploymentTest, OpensslCertificatesRunAnAuditEndToEnd) {
  std::unique_ptr<Subprocess> scorer, coordinator, worker;
  const int scorer_port = Start("scorer", Tls("scorer"), &scorer);
  ASSERT_NE(scorer_port, 0);
  std::vector<std::string> coordinator_args = Tls("coordinator");
  coordinator_args.push_back("--scorer");
  coordinator_args.push_back(absl::StrCat("localhost:", scorer_port));
  coordinator_args.push_back("--waiting-warning-ms");
  coordinator_args.push_back("300");
  const int coordinator_port = Start("coordinator", coordinator_args, &coordinator);
  ASSERT_NE(coordinator_port, 0);
  std::vector<std::string> worker_args = Tls("worker-0");
  worker_args.push_back("--coordinator");
  worker_args.push_back(absl::StrCat("localhost:", coordinator_port));
  worker_args.push_back("--metrics-listen");
  worker_args.push_back("127.0.0.1:0");
  // The worker comes late: the watching CLI is told that no worker has taken
  // a task (audit_waiting), then the audit runs to its end.
  std::thread late_worker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
    Start("worker", worker_args, &worker);
  });

  const std::string coordinator_flag = absl::StrCat(" --coordinator localhost:", coordinator_port);
  const std::string submitted =
      Cli(absl::StrCat("submit ", dir_, "/spec.yaml --watch", coordinator_flag));
  late_worker.join();
  EXPECT_THAT(submitted, HasSubstr("exit=0")) << submitted << Slurp(dir_ + "/worker.log");
  EXPECT_THAT(submitted, HasSubstr("audit_waiting : no worker has taken a task in "));
  EXPECT_THAT(submitted, HasSubstr("s; workers connected: 0 (start one"));
  EXPECT_THAT(Cli(absl::StrCat("status -o json", coordinator_flag)), HasSubstr("SUCCEEDED"));
  // The services said they serve TLS, not plain text.
  EXPECT_THAT(Slurp(dir_ + "/coordinator.log"), ::testing::Not(HasSubstr("INSECURE")));

  // A client that trusts another CA fails the handshake: UNAVAILABLE, exit 3.
  const std::string other = dir_ + "/other";
  ASSERT_EQ(RunStatus(absl::StrCat("bash ", MEMAUDIT_SOURCE_DIR, "/scripts/make-certs.sh ", other,
                                   " >/dev/null")),
            0);
  const std::string wrong_ca =
      RunCapture(absl::StrCat("MEMAUDIT_TLS_CA=", other, "/ca.crt timeout 60 ", MEMAUDIT_BIN_DIR,
                              "/memaudit status", coordinator_flag, " 2>&1; echo exit=$?"));
  EXPECT_THAT(wrong_ca, HasSubstr("exit=3"));
  // A plain-text client reaches no one either.
  const std::string plain =
      RunCapture(absl::StrCat("timeout 60 ", MEMAUDIT_BIN_DIR, "/memaudit status --insecure",
                              coordinator_flag, " 2>&1; echo exit=$?"));
  EXPECT_THAT(plain, HasSubstr("exit=3"));

  worker->Signal(SIGTERM);
  worker->Stop();
}

TEST_F(TlsDeploymentTest, ServicesRefuseToStartWithoutCertificatesOrInsecure) {
  const std::string out =
      RunCapture(absl::StrCat("timeout 20 ", MEMAUDIT_BIN_DIR,
                              "/memaudit-scorer --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 "
                              "--db ",
                              dir_, "/s.db 2>&1; echo exit=$?"));
  EXPECT_THAT(out, HasSubstr("--tls-ca: required (or --insecure"));
  EXPECT_THAT(out, HasSubstr("exit=1"));
}

}  // namespace
}  // namespace memaudit::testing
