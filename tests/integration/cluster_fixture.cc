#include "tests/integration/cluster_fixture.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "memaudit/v1/scorer.grpc.pb.h"

namespace memaudit::testing {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string Memaudit() { return absl::StrCat(MEMAUDIT_BIN_DIR, "/memaudit"); }

Output Shell(const std::string& command) {
  Output out{0, ""};
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return Output{-1, "popen failed"};
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.text.append(buffer, n);
  out.exit_code = WEXITSTATUS(pclose(pipe));
  return out;
}

std::string RunCapture(const std::string& command) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  pclose(pipe);
  return out;
}

std::string Chromium(const std::string& profile) {
  return absl::StrCat(kChromium,
                      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                      " --disable-background-networking --disable-component-update --disable-sync"
                      " --enable-logging=stderr --v=0 --user-data-dir=",
                      profile);
}

std::string Numbers(v1::AuditResults results) {
  results.clear_audit_id();
  results.clear_spec();
  results.clear_reused();  // where runs came from, not what they measure
  return results.SerializeAsString();
}

std::string RegisterWorker(v1::WorkerService::Stub* coordinator) {
  grpc::ClientContext ctx;
  v1::RegisterRequest req;
  v1::RegisterResponse resp;
  const grpc::Status status = coordinator->Register(&ctx, req, &resp);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return resp.worker_id();
}

v1::LeaseResponse LeaseTask(v1::WorkerService::Stub* coordinator, const std::string& worker_id) {
  grpc::ClientContext ctx;
  v1::LeaseRequest req;
  req.set_worker_id(worker_id);
  req.set_wait_ms(5000);
  v1::LeaseResponse resp;
  const grpc::Status status = coordinator->Lease(&ctx, req, &resp);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return resp;
}

grpc::Status CompleteTask(v1::WorkerService::Stub* coordinator, const std::string& worker_id,
                          const std::string& lease_id) {
  grpc::ClientContext ctx;
  v1::CompleteRequest req;
  req.set_worker_id(worker_id);
  req.set_lease_id(lease_id);
  v1::CompleteResponse resp;
  return coordinator->Complete(&ctx, req, &resp);
}

grpc::Status FailTask(v1::WorkerService::Stub* coordinator, const std::string& worker_id,
                      const std::string& lease_id, v1::FailureKind kind) {
  grpc::ClientContext ctx;
  v1::FailRequest req;
  req.set_worker_id(worker_id);
  req.set_lease_id(lease_id);
  req.set_kind(kind);
  req.set_error("failed by the test");
  v1::FailResponse resp;
  return coordinator->Fail(&ctx, req, &resp);
}

grpc::Status SendObservations(v1::ScorerService::Stub* scorer,
                              const std::vector<v1::Observation>& observations) {
  grpc::ClientContext ctx;
  v1::IngestResponse resp;
  auto writer = scorer->Ingest(&ctx, &resp);
  for (const v1::Observation& o : observations) {
    if (!writer->Write(o)) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

bool HasSeries(const std::string& metrics, const std::string& name,
               const std::map<std::string, std::string>& labels) {
  std::istringstream lines(metrics);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.compare(0, name.size() + 1, name + "{") != 0) continue;
    // key="value" pairs up to the closing brace; values may escape \" and \\.
    std::map<std::string, std::string> found;
    size_t i = name.size() + 1;
    while (i < line.size() && line[i] != '}') {
      const size_t eq = line.find("=\"", i);
      if (eq == std::string::npos) break;
      const std::string key = line.substr(i, eq - i);
      std::string value;
      for (i = eq + 2; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '\\' && i + 1 < line.size()) ++i;
        value += line[i];
      }
      found[key] = value;
      i += 1;  // the closing quote
      if (i < line.size() && line[i] == ',') ++i;
    }
    bool all = true;
    for (const auto& [key, value] : labels) {
      auto it = found.find(key);
      all = all && it != found.end() && it->second == value;
    }
    if (all) return true;
  }
  return false;
}

std::string FreshTestDir(const std::string& suffix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string dir = absl::StrCat(::testing::TempDir(), "memaudit-it-", getpid(), "-",
                                 info->test_suite_name(), "-", info->name(), suffix);
  std::system(absl::StrCat("rm -rf '", dir, "'").c_str());
  return dir;
}

void ClusterTest::StartCluster(uint32_t workers, int64_t lease_ttl_ms, const std::string& suffix) {
  dir_ = FreshTestDir(suffix);
  cli::ClusterOptions options;
  options.dir = dir_;
  options.workers = workers;
  options.lease_ttl_ms = lease_ttl_ms;
  options.heartbeat_ms = 200;
  options.bin_dir = MEMAUDIT_BIN_DIR;
  options.data_roots = data_roots_;
  options.worker_args = worker_args_;
  auto cluster = cli::EmbeddedCluster::Start(options);
  MEMAUDIT_ASSERT_OK(cluster);
  cluster_ = std::move(*cluster);
  auto client =
      cli::Client::Connect(cluster_->coordinator_address(), cluster_->client_credentials());
  MEMAUDIT_ASSERT_OK(client);
  client_ = std::make_unique<cli::Client>(*std::move(client));
}

v1::Audit ClusterTest::WaitForEnd(const std::string& audit_id) {
  absl::Status watched = client_->Watch(audit_id, [](const v1::AuditEvent&) { return true; });
  MEMAUDIT_EXPECT_OK(watched);
  auto audit = client_->Get(audit_id);
  MEMAUDIT_EXPECT_OK(audit);
  return audit.ok() ? *audit : v1::Audit();
}

void ClusterTest::RunBaseline(const v1::AuditSpec& spec) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1, /*lease_ttl_ms=*/10000, "-baseline"));
  auto submitted = client_->Submit(spec);
  MEMAUDIT_ASSERT_OK(submitted);
  ASSERT_EQ(WaitForEnd(submitted->audit_id()).state(), v1::SUCCEEDED);
  auto results = client_->Report(submitted->audit_id());
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  baseline_ = *results;
  cluster_->Stop();
}

void ClusterTest::RunToCompletion(const v1::AuditSpec& spec, Finished* out) {
  auto submitted = client_->Submit(spec);
  MEMAUDIT_ASSERT_OK(submitted);
  out->audit_id = submitted->audit_id();
  out->audit = WaitForEnd(out->audit_id);
  ASSERT_EQ(out->audit.state(), v1::SUCCEEDED) << out->audit.error();
  auto results = client_->Report(out->audit_id);
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  out->results = *std::move(results);
}

std::shared_ptr<grpc::Channel> ClusterTest::AdminChannel(const std::string& address) const {
  auto channel = MakeChannel(address, cluster_->admin_credentials());
  EXPECT_TRUE(channel.ok()) << channel.status();
  return channel.ok() ? *channel : nullptr;
}

std::string ClusterTest::CliCredentialsEnv() const {
  const TlsFlags& tls = cluster_->client_credentials().tls;
  return absl::StrCat("MEMAUDIT_TLS_CA=", tls.ca, " MEMAUDIT_TLS_CERT=", tls.cert,
                      " MEMAUDIT_TLS_KEY=", tls.key, " ");
}

std::vector<v1::AuditResults> ClusterTest::WatchResults(const std::string& audit_id) {
  auto scorer = v1::ScorerService::NewStub(AdminChannel(cluster_->scorer_address()));
  grpc::ClientContext ctx;
  v1::GetResultsRequest req;
  req.set_audit_id(audit_id);
  auto reader = scorer->WatchResults(&ctx, req);
  std::vector<v1::AuditResults> updates;
  v1::AuditResults update;
  while (reader->Read(&update)) updates.push_back(update);
  const grpc::Status status = reader->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  if (!status.ok()) updates.clear();
  return updates;
}

}  // namespace memaudit::testing
