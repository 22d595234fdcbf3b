// The services as README's "Running the services yourself" starts them:
// certificates made by scripts/make-certs.sh (Debian's openssl), each
// service a separate process over mutual TLS, started by the test.
#ifndef MEMAUDIT_TESTS_INTEGRATION_CERTS_DEPLOYMENT_H_
#define MEMAUDIT_TESTS_INTEGRATION_CERTS_DEPLOYMENT_H_

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/process.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {

class CertsDeploymentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshTestDir();
    certs_ = dir_ + "/certs";
    ASSERT_EQ(RunStatus(absl::StrCat("MEMAUDIT_TEAMS='alpha' bash ", MEMAUDIT_SOURCE_DIR,
                                     "/scripts/make-certs.sh ", certs_, " >/dev/null")),
              0);
    std::ofstream(dir_ + "/spec.yaml") << TinyMembershipYaml("tls-deployment");
  }

  static int RunStatus(const std::string& command) { return std::system(command.c_str()); }

  std::vector<std::string> Tls(const std::string& party) const {
    return {"--tls-cert", absl::StrCat(certs_, "/", party, ".crt"),
            "--tls-key",  absl::StrCat(certs_, "/", party, ".key"),
            "--tls-ca",   certs_ + "/ca.crt"};
  }

  // Starts memaudit-<service> with `args` and waits for its port file.
  int Start(const std::string& service, std::vector<std::string> args,
            std::unique_ptr<Subprocess>* process) {
    const std::string port_file = absl::StrCat(dir_, "/", service, ".port");
    std::vector<std::string> argv = {absl::StrCat(MEMAUDIT_BIN_DIR, "/memaudit-", service)};
    argv.insert(argv.end(), args.begin(), args.end());
    if (service != "worker") {
      for (const std::string& a :
           {std::string("--listen"), std::string("127.0.0.1:0"), std::string("--port-file"),
            port_file, std::string("--metrics-listen"), std::string("127.0.0.1:0"),
            std::string("--db"), absl::StrCat(dir_, "/", service, ".db"),
            std::string("--capability-key-file"), certs_ + "/capability.key"}) {
        argv.push_back(a);
      }
    }
    auto spawned = Subprocess::Spawn(argv, absl::StrCat(dir_, "/", service, ".log"));
    EXPECT_THAT(spawned, memaudit::testing::IsOk());
    if (!spawned.ok()) return 0;
    *process = std::move(*spawned);
    if (service == "worker") return 0;
    auto port = WaitForPortFile(port_file, 20000, process->get());
    EXPECT_THAT(port, memaudit::testing::IsOk()) << Slurp(absl::StrCat(dir_, "/", service, ".log"));
    return port.ok() ? *port : 0;
  }

  // The memaudit CLI with team alpha's certificate in the environment.
  std::string Cli(const std::string& args, const std::string& party = "team-alpha") const {
    return RunCapture(absl::StrCat("MEMAUDIT_TLS_CA=", certs_, "/ca.crt MEMAUDIT_TLS_CERT=", certs_,
                                   "/", party, ".crt MEMAUDIT_TLS_KEY=", certs_, "/", party,
                                   ".key timeout 120 ", MEMAUDIT_BIN_DIR, "/memaudit ", args,
                                   " 2>&1; echo exit=$?"));
  }

  std::string dir_, certs_;
};

}  // namespace memaudit::testing

#endif  // MEMAUDIT_TESTS_INTEGRATION_CERTS_DEPLOYMENT_H_
