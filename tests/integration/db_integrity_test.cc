// The real coordinator and scorer binaries on damaged and empty database
// files: each refuses to start, at once, with a message that names the file
// and the remedy; --init starts on an empty file.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/client.h"
#include "common/base/process.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/tiny_specs.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;

const char* const kServices[] = {"coordinator", "scorer"};

std::string Binary(const std::string& service) {
  return absl::StrCat(MEMAUDIT_BIN_DIR, "/memaudit-", service);
}

int64_t FileSize(const std::string& path) {
  struct stat file;
  return stat(path.c_str(), &file) == 0 ? static_cast<int64_t>(file.st_size) : -1;
}

class DatabaseIntegrityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshTestDir();
    ASSERT_EQ(std::system(absl::StrCat("mkdir -p '", dir_, "'").c_str()), 0);
  }

  std::string Db(const std::string& service) const {
    return absl::StrCat(dir_, "/", service, ".db");
  }

  // Starts a service on free ports and waits until it serves; returns its
  // gRPC port (0 on failure, with the test failed).
  int Start(const std::string& service, std::vector<std::string> extra,
            std::unique_ptr<Subprocess>* process) {
    const std::string port_file = absl::StrCat(dir_, "/", service, ".port");
    std::remove(port_file.c_str());
    std::vector<std::string> argv = {
        Binary(service),    "--db",        Db(service),   "--listen", "127.0.0.1:0",
        "--metrics-listen", "127.0.0.1:0", "--port-file", port_file,  "--insecure"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto spawned = Subprocess::Spawn(argv, absl::StrCat(dir_, "/", service, ".log"));
    EXPECT_THAT(spawned, IsOk());
    if (!spawned.ok()) return 0;
    *process = std::move(*spawned);
    auto port = WaitForPortFile(port_file, 20000, process->get());
    EXPECT_THAT(port, IsOk()) << Slurp(absl::StrCat(dir_, "/", service, ".log"));
    return port.ok() ? *port : 0;
  }

  // A first run: both services on fresh files (created without --init), one
  // audit submitted (rows in both databases), then a clean stop.
  void FirstRun() {
    std::unique_ptr<Subprocess> scorer, coordinator;
    const int scorer_port = Start("scorer", {}, &scorer);
    ASSERT_NE(scorer_port, 0);
    const int coordinator_port =
        Start("coordinator", {"--scorer", absl::StrCat("127.0.0.1:", scorer_port)}, &coordinator);
    ASSERT_NE(coordinator_port, 0);
    ClientCredentials plain_text;
    plain_text.tls.insecure = true;
    auto client = cli::Client::Connect(absl::StrCat("127.0.0.1:", coordinator_port), plain_text);
    MEMAUDIT_ASSERT_OK(client);
    MEMAUDIT_ASSERT_OK(client->Submit(TinyMembershipSpec()));
    EXPECT_EQ(coordinator->Stop(), 0);
    EXPECT_EQ(scorer->Stop(), 0);
    for (const char* service : kServices) {
      ASSERT_GT(FileSize(Db(service)), 16384) << service;
      // Checkpointed on the clean stop: everything is in the main file.
      ASSERT_EQ(FileSize(Db(service) + "-wal"), -1) << service;
    }
  }

  // Runs a service that is expected to refuse its database: its output, and
  // the seconds until it exited.
  struct Refusal {
    std::string output;
    double seconds = 0;
  };
  Refusal RunToExit(const std::string& service) {
    const absl::Time start = absl::Now();
    Refusal r;
    r.output = RunCapture(absl::StrCat("{ timeout 60 ", Binary(service), " --db '", Db(service),
                                       "' --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 2>&1; "
                                       "echo \"exit status $?\"; }"));
    r.seconds = absl::ToDoubleSeconds(absl::Now() - start);
    return r;
  }

  std::string dir_;
};

TEST_F(DatabaseIntegrityTest, DamagedDatabaseIsRefusedAtStart) {
  ASSERT_NO_FATAL_FAILURE(FirstRun());
  std::mt19937 rng(2024);
  for (const char* service : kServices) {
    SCOPED_TRACE(service);
    const std::string db = Db(service);
    const int64_t size = FileSize(db);
    std::string noise(8192, '\0');
    for (char& c : noise) c = static_cast<char>(rng());
    {
      std::fstream file(db, std::ios::in | std::ios::out | std::ios::binary);
      file.seekp(size / 2 - 4096);
      file.write(noise.data(), static_cast<std::streamsize>(noise.size()));
      ASSERT_TRUE(file.good());
    }
    const std::string damaged = Slurp(db);
    const Refusal r = RunToExit(service);
    EXPECT_THAT(r.output, HasSubstr("exit status 1"));
    EXPECT_LT(r.seconds, 5.0);
    EXPECT_THAT(r.output, HasSubstr(absl::StrCat("database ", db, " is damaged")));
    EXPECT_THAT(r.output, HasSubstr("PRAGMA quick_check"));
    EXPECT_THAT(r.output, HasSubstr("Restore it from a backup, or move it aside"));
    EXPECT_EQ(Slurp(db), damaged) << "the refused file was written to";
  }
}

TEST_F(DatabaseIntegrityTest, EmptyFileIsRefusedWithoutInit) {
  for (const char* service : kServices) {
    SCOPED_TRACE(service);
    std::ofstream(Db(service)).close();
    const Refusal r = RunToExit(service);
    EXPECT_THAT(r.output, HasSubstr("exit status 1"));
    EXPECT_LT(r.seconds, 5.0);
    EXPECT_THAT(r.output,
                HasSubstr(absl::StrCat("database ", Db(service), " is an empty file (0 bytes)")));
    EXPECT_THAT(r.output, HasSubstr("start again with --init"));
    EXPECT_EQ(FileSize(Db(service)), 0);
  }
}

TEST_F(DatabaseIntegrityTest, InitStartsOnAnEmptyFileAndTheDatabaseIsKept) {
  for (const char* service : kServices) {
    SCOPED_TRACE(service);
    std::ofstream(Db(service)).close();
    std::unique_ptr<Subprocess> process;
    ASSERT_NE(Start(service, {"--init"}, &process), 0);
    EXPECT_EQ(process->Stop(), 0);
    EXPECT_GT(FileSize(Db(service)), 0);
    // A real database now: it starts without --init.
    ASSERT_NE(Start(service, {}, &process), 0);
    EXPECT_EQ(process->Stop(), 0);
  }
}

}  // namespace
}  // namespace memaudit::testing
