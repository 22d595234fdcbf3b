// Shared set-up for integration tests: a fresh directory, an embedded
// cluster of real service processes, and small specs that train in seconds.
#ifndef MEMAUDIT_TESTS_INTEGRATION_CLUSTER_FIXTURE_H_
#define MEMAUDIT_TESTS_INTEGRATION_CLUSTER_FIXTURE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/embedded_cluster.h"
#include "gtest/gtest.h"
#include "memaudit/v1/results.pb.h"
#include "memaudit/v1/scorer.grpc.pb.h"
#include "memaudit/v1/spec.pb.h"
#include "memaudit/v1/worker.grpc.pb.h"
#include "tests/integration/tiny_specs.h"

namespace memaudit::testing {

// Results without the audit id, the spec and the reused runs' provenance
// they carry, for comparing two audits of the same recipe (packed or not,
// grown or not).
std::string Numbers(v1::AuditResults results);

// A worker's calls made by hand, as a test playing a worker makes them:
// Register (the worker id; "" with a test failure), one Lease waiting up to
// 5 s, and one Ingest stream of `observations` (its status).
std::string RegisterWorker(v1::WorkerService::Stub* coordinator);
v1::LeaseResponse LeaseTask(v1::WorkerService::Stub* coordinator, const std::string& worker_id);
// Complete and Fail of `lease_id`, sending `worker_id` (may be empty).
grpc::Status CompleteTask(v1::WorkerService::Stub* coordinator, const std::string& worker_id,
                          const std::string& lease_id);
grpc::Status FailTask(v1::WorkerService::Stub* coordinator, const std::string& worker_id,
                      const std::string& lease_id, v1::FailureKind kind);
grpc::Status SendObservations(v1::ScorerService::Stub* scorer,
                              const std::vector<v1::Observation>& observations);

// GET http://127.0.0.1:port/path; returns the body ("" on failure).
std::string HttpGet(int port, const std::string& path);

// Whether the text exposition `metrics` has a series of `name` whose labels
// include every one of `labels` (others, such as team, may be there too).
bool HasSeries(const std::string& metrics, const std::string& name,
               const std::map<std::string, std::string>& labels);

// Headless Chromium, which renders the HTML report and the dashboard preview.
inline constexpr char kChromium[] = "/usr/bin/chromium";

// The whole content of a file ("" if unreadable).
std::string Slurp(const std::string& path);

// Runs a shell command; returns its stdout and stderr together.
std::string RunCapture(const std::string& command);

// A shell command's exit status and its stdout and stderr together.
struct Output {
  int exit_code;
  std::string text;
};
Output Shell(const std::string& command);

// The memaudit CLI binary of this build.
std::string Memaudit();

// The Chromium command line with flags that keep it from reaching for the
// network or a display, using `profile` as its user-data directory.
std::string Chromium(const std::string& profile);

// A fresh directory under the test temp dir, named after the running test.
std::string FreshTestDir(const std::string& suffix = "");

class ClusterTest : public ::testing::Test {
 protected:
  void StartCluster(uint32_t workers, int64_t lease_ttl_ms = 10000, const std::string& suffix = "");
  // Waits (via Watch) until the audit ends; returns its final snapshot.
  v1::Audit WaitForEnd(const std::string& audit_id);
  // Runs `spec` undisturbed on a fresh one-worker cluster (then stopped) and
  // stores its results in `baseline_`: what a disturbed run must reproduce.
  void RunBaseline(const v1::AuditSpec& spec);
  // Submits `spec` to the running cluster, waits for the audit to succeed and
  // fetches its results, asserting they are complete.
  struct Finished {
    std::string audit_id;
    v1::Audit audit;
    v1::AuditResults results;
  };
  void RunToCompletion(const v1::AuditSpec& spec, Finished* out);
  // Follows the scorer's WatchResults stream for `audit_id` to its end: every
  // update, the last one complete. Empty (with a test failure) if the
  // stream ends in an error.
  std::vector<v1::AuditResults> WatchResults(const std::string& audit_id);
  // A channel to `address` (a service of the running cluster) as the
  // cluster's administrator.
  std::shared_ptr<grpc::Channel> AdminChannel(const std::string& address) const;
  // "MEMAUDIT_TLS_CA=… MEMAUDIT_TLS_CERT=… MEMAUDIT_TLS_KEY=… ": a shell
  // prefix giving the memaudit CLI the cluster's client certificate.
  std::string CliCredentialsEnv() const;

  v1::AuditResults baseline_;
  // The services' --data-root for the next StartCluster; empty = their
  // defaults (Debian's dataset and corpus directories). A test whose spec
  // names a file of its own lists the file's directory here.
  std::vector<std::string> data_roots_;
  // More flags for every worker of the next StartCluster (--numerics native).
  std::vector<std::string> worker_args_;

  std::unique_ptr<cli::EmbeddedCluster> cluster_;
  std::unique_ptr<cli::Client> client_;
  std::string dir_;
};

}  // namespace memaudit::testing

#endif  // MEMAUDIT_TESTS_INTEGRATION_CLUSTER_FIXTURE_H_
