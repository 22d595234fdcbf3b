// What an anonymous caller, one team or one worker can do to the others
// (docs/security.md, "Threat model"), against the services started as the
// README's manual run starts them, certificates from scripts/make-certs.sh:
//   - anonymous 250 MB messages are refused before their payload is read,
//     and the coordinator, inside a 2 GiB memory cgroup, barely notices;
//   - a team's bloated Submits (100 MB, unknown fields, 2,000-deep nesting)
//     are refused with a reason and leave nothing stored anywhere;
//   - a worker that does not hold a lease, or no longer does, is refused at
//     Ingest, and a stale lease's observations are dropped;
//   - --require-client-cert refuses a TLS client without a certificate.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/sqlite.h"
#include "memaudit/v1/audit.grpc.pb.h"
#include "memaudit/v1/scorer.grpc.pb.h"
#include "memaudit/v1/worker.grpc.pb.h"
#include "tests/integration/certs_deployment.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;

// A process's peak resident memory (VmHWM) in MiB; -1 when unreadable.
int64_t PeakRssMib(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    int64_t kib = 0;
    const std::vector<std::string> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (parts.size() >= 2 && absl::SimpleAtoi(parts[1], &kib)) return kib / 1024;
  }
  return -1;
}

// A cgroup (v1 memory controller) under this process's own, holding one
// process to `limit_mib`; Active() is false where none can be made (then
// the test measures peak memory only).
class MemoryCgroup {
 public:
  MemoryCgroup(pid_t pid, int64_t limit_mib) {
    std::ifstream self("/proc/self/cgroup");
    std::string line, parent;
    while (std::getline(self, line)) {
      const size_t at = line.find(":memory:");
      if (at != std::string::npos) parent = line.substr(at + 8);
    }
    if (parent.empty()) return;
    dir_ = absl::StrCat("/sys/fs/cgroup/memory", parent == "/" ? "" : parent, "/memaudit-test-",
                        getpid(), "-", pid);
    if (::mkdir(dir_.c_str(), 0755) != 0) {
      dir_.clear();
      return;
    }
    active_ = Write("memory.limit_in_bytes", absl::StrCat(limit_mib << 20)) &&
              Write("cgroup.procs", absl::StrCat(pid));
  }
  ~MemoryCgroup() {
    if (!dir_.empty()) ::rmdir(dir_.c_str());  // once its process has exited
  }
  bool Active() const { return active_; }
  // Times the limit was hit (memory.failcnt); -1 when unreadable.
  int64_t Failures() const {
    int64_t n = -1;
    return absl::SimpleAtoi(absl::StripAsciiWhitespace(Slurp(dir_ + "/memory.failcnt")), &n) ? n
                                                                                             : -1;
  }

 private:
  bool Write(const std::string& file, const std::string& value) const {
    std::ofstream out(absl::StrCat(dir_, "/", file));
    out << value;
    out.flush();
    return out.good();
  }
  std::string dir_;
  bool active_ = false;
};

// One unary call of raw bytes (no parsing on this side): what any client,
// hostile or not, can put on the wire.
grpc::Status RawCall(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                     const std::string& payload) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  grpc::Slice slice(payload);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

// A length-delimited field on the wire: tag, length, bytes.
std::string LengthDelimited(uint32_t field, const std::string& bytes) {
  std::string out;
  auto varint = [&out](uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  };
  varint((uint64_t{field} << 3) | 2);
  varint(bytes.size());
  out += bytes;
  return out;
}

class HostileCallersTest : public CertsDeploymentTest {
 protected:
  // The scorer and the coordinator, the coordinator with `coordinator_extra`.
  void StartServices(const std::vector<std::string>& coordinator_extra = {}) {
    scorer_port_ = Start("scorer", Tls("scorer"), &scorer_);
    ASSERT_NE(scorer_port_, 0);
    std::vector<std::string> args = Tls("coordinator");
    args.insert(args.end(), {"--scorer", absl::StrCat("localhost:", scorer_port_)});
    args.insert(args.end(), coordinator_extra.begin(), coordinator_extra.end());
    coordinator_port_ = Start("coordinator", args, &coordinator_);
    ASSERT_NE(coordinator_port_, 0);
  }
  // A channel to `port` as `party` (a make-certs.sh file name), or with no
  // client certificate at all when `party` is empty.
  std::shared_ptr<grpc::Channel> Channel(int port, const std::string& party) const {
    ClientCredentials as;
    as.tls.ca = certs_ + "/ca.crt";
    if (!party.empty()) {
      as.tls.cert = absl::StrCat(certs_, "/", party, ".crt");
      as.tls.key = absl::StrCat(certs_, "/", party, ".key");
    }
    auto channel = MakeChannel(absl::StrCat("localhost:", port), as);
    EXPECT_TRUE(channel.ok()) << channel.status();
    return channel.ok() ? *channel : nullptr;
  }
  // Audits the scorer's database holds.
  int64_t ScorerAudits() const {
    auto db = sql::Database::Open(dir_ + "/scorer.db");
    if (!db.ok()) return -1;
    auto count = (*db)->Prepare("SELECT COUNT(*) FROM audits");
    if (!count.ok() || !count->Step().ok()) return -1;
    return count->Int(0);
  }

  std::unique_ptr<Subprocess> scorer_, coordinator_;
  int scorer_port_ = 0, coordinator_port_ = 0;
};

TEST_F(HostileCallersTest, AnonymousHugeMessagesAreRefusedBeforeTheirPayloadIsRead) {
  const std::string metrics_port_file = dir_ + "/coordinator.metrics-port";
  ASSERT_NO_FATAL_FAILURE(StartServices({"--metrics-port-file", metrics_port_file}));
  MemoryCgroup limit(coordinator_->pid(), 2048);
  std::printf("coordinator in a 2 GiB memory cgroup: %s\n", limit.Active() ? "yes" : "no");
  const int64_t before = PeakRssMib(coordinator_->pid());
  // Five anonymous TLS clients at once, 250 MB each, at the coordinator and
  // (one more) at the scorer.
  const std::string payload(250'000'000, 'x');
  std::vector<std::future<grpc::Status>> calls;
  for (int i = 0; i < 5; ++i) {
    calls.push_back(std::async(std::launch::async, [&] {
      return RawCall(Channel(coordinator_port_, ""), "/memaudit.v1.AuditService/Submit", payload);
    }));
  }
  calls.push_back(std::async(std::launch::async, [&] {
    return RawCall(Channel(scorer_port_, ""), "/memaudit.v1.ScorerService/Ingest", payload);
  }));
  for (auto& call : calls) {
    const grpc::Status status = call.get();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
  }
  const int64_t after = PeakRssMib(coordinator_->pid());
  std::printf("coordinator peak RSS: %lld MiB before, %lld MiB after five 250 MB calls\n",
              static_cast<long long>(before), static_cast<long long>(after));
  EXPECT_FALSE(coordinator_->Exited());
  EXPECT_FALSE(scorer_->Exited());
  EXPECT_LT(after - before, 64) << "the payloads were buffered";
  // Counted as refused, never as handled.
  auto metrics_port = WaitForPortFile(metrics_port_file, 5000, coordinator_.get());
  ASSERT_TRUE(metrics_port.ok()) << metrics_port.status();
  const std::string metrics = HttpGet(*metrics_port, "/metrics");
  EXPECT_THAT(metrics, HasSubstr("memaudit_grpc_server_refused_total{code=\"UNAUTHENTICATED\"} 5"));
  EXPECT_THAT(metrics, ::testing::Not(HasSubstr("code=\"UNAUTHENTICATED\",method=")));
  if (limit.Active()) {
    EXPECT_EQ(limit.Failures(), 0);
  }
  // A team's call still answers.
  auto audits = v1::AuditService::NewStub(Channel(coordinator_port_, "team-alpha"));
  grpc::ClientContext ctx;
  v1::ListRequest list;
  v1::ListResponse listed;
  EXPECT_TRUE(audits->List(&ctx, list, &listed).ok());
}

TEST_F(HostileCallersTest, ATeamsBloatedSubmitsAreRefusedAndLeaveNothingBehind) {
  ASSERT_NO_FATAL_FAILURE(StartServices());
  MemoryCgroup limit(coordinator_->pid(), 2048);
  const std::shared_ptr<grpc::Channel> alpha = Channel(coordinator_port_, "team-alpha");
  const std::string spec = TinyMembershipSpec().SerializeAsString();
  const std::string submit = "/memaudit.v1.AuditService/Submit";
  // 100 MB under a field number AuditSpec does not have: past the
  // coordinator's receive limit, refused as it arrives.
  const std::string bloated =
      LengthDelimited(1, spec + LengthDelimited(9999, std::string(100'000'000, 'u')));
  for (int i = 0; i < 12; ++i) {
    const grpc::Status status = RawCall(alpha, submit, bloated);
    ASSERT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  }
  // Small enough to arrive: the unknown field is named and refused.
  const grpc::Status unknown =
      RawCall(alpha, submit, LengthDelimited(1, spec + LengthDelimited(9999, "smuggled")));
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(unknown.error_message(), HasSubstr("spec: unknown field 9999 (bytes, 8 bytes)"));
  // 2,000 nested groups of an unknown field: protobuf's parser stops at its
  // depth limit, and the caller learns the message is malformed.
  std::string nested;
  for (int i = 0; i < 2000; ++i) nested.push_back(static_cast<char>((9 << 3) | 3));
  for (int i = 0; i < 2000; ++i) nested.push_back(static_cast<char>((9 << 3) | 4));
  const grpc::Status deep = RawCall(alpha, submit, LengthDelimited(1, spec + nested));
  EXPECT_EQ(deep.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << deep.error_message();
  EXPECT_THAT(deep.error_message(), HasSubstr("request: not a valid"));

  const int64_t peak = PeakRssMib(coordinator_->pid());
  std::printf("coordinator peak RSS after 12 Submits of 100 MB: %lld MiB\n",
              static_cast<long long>(peak));
  EXPECT_FALSE(coordinator_->Exited());
  EXPECT_LT(peak, 2048);
  if (limit.Active()) {
    EXPECT_EQ(limit.Failures(), 0);
  }
  // Nothing was stored, at the coordinator or at the scorer.
  auto audits = v1::AuditService::NewStub(alpha);
  grpc::ClientContext ctx;
  v1::ListRequest list;
  v1::ListResponse listed;
  ASSERT_TRUE(audits->List(&ctx, list, &listed).ok());
  EXPECT_EQ(listed.audits_size(), 0);
  EXPECT_EQ(ScorerAudits(), 0);
}

// The observations of task `index` of a TinyMembershipSpec audit (one model
// per task), under `capability`.
std::vector<v1::Observation> TaskObservations(const std::string& audit_id, uint32_t index,
                                              const std::string& capability) {
  std::vector<v1::Observation> out;
  for (const char* signal : {"phi", "loss"}) {
    v1::Observation& o = out.emplace_back();
    o.set_audit_id(audit_id);
    o.set_run(index);
    o.set_point("final");
    o.set_signal(signal);
    for (int j = 0; j < 200; ++j) o.add_values(0.25);
    o.set_capability(capability);
  }
  return out;
}

TEST_F(HostileCallersTest, OnlyTheLeaseHolderWritesAndAStaleLeasesWritesAreDropped) {
  ASSERT_NO_FATAL_FAILURE(StartServices());
  auto audits = v1::AuditService::NewStub(Channel(coordinator_port_, "team-alpha"));
  v1::SubmitResponse submitted;
  {
    grpc::ClientContext ctx;
    v1::SubmitRequest req;
    *req.mutable_spec() = TinyMembershipSpec(4);
    const grpc::Status status = audits->Submit(&ctx, req, &submitted);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  const std::string audit_id = submitted.audit_id();
  // Two workers, two identities (make-certs.sh's default worker-0, worker-1).
  struct Worker {
    std::unique_ptr<v1::WorkerService::Stub> coordinator;
    std::unique_ptr<v1::ScorerService::Stub> scorer;
    std::string id;
  };
  auto join = [&](const std::string& party) {
    Worker w{v1::WorkerService::NewStub(Channel(coordinator_port_, party)),
             v1::ScorerService::NewStub(Channel(scorer_port_, party)), ""};
    w.id = RegisterWorker(w.coordinator.get());
    return w;
  };
  Worker a = join("worker-0");
  Worker b = join("worker-1");
  auto lease = [](Worker& w) { return LeaseTask(w.coordinator.get(), w.id); };
  const v1::LeaseResponse held = lease(a);
  ASSERT_TRUE(held.has_task());
  const uint32_t index = held.task().index();

  // Worker b cannot beat, complete, fail or write under a's lease.
  {
    grpc::ClientContext ctx;
    v1::HeartbeatRequest req;
    req.set_worker_id(b.id);
    req.set_lease_id(held.lease_id());
    v1::HeartbeatResponse resp;
    EXPECT_EQ(b.coordinator->Heartbeat(&ctx, req, &resp).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  EXPECT_EQ(CompleteTask(b.coordinator.get(), b.id, held.lease_id()).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(FailTask(b.coordinator.get(), b.id, held.lease_id(), v1::TASK_FINAL).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  const grpc::Status stolen =
      SendObservations(b.scorer.get(), TaskObservations(audit_id, index, held.capability()));
  EXPECT_EQ(stolen.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(stolen.error_message(), HasSubstr("for worker worker-1"));

  // The holder writes one of its two observations, then gives the lease back.
  const std::vector<v1::Observation> mine = TaskObservations(audit_id, index, held.capability());
  ASSERT_TRUE(SendObservations(a.scorer.get(), {mine[0]}).ok());
  ASSERT_TRUE(FailTask(a.coordinator.get(), a.id, held.lease_id(), v1::INTERRUPTED).ok());
  // Given back: refused, and what it stored is gone.
  const grpc::Status late = SendObservations(a.scorer.get(), {mine[1]});
  EXPECT_EQ(late.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(late.error_message(), HasSubstr("has ended (given back)"));
  EXPECT_EQ(ScorerAudits(), 1);
  {
    auto db = sql::Database::Open(dir_ + "/scorer.db");
    ASSERT_TRUE(db.ok());
    auto count = (*db)->Prepare("SELECT COUNT(*) FROM observations");
    ASSERT_TRUE(count.ok() && count->Step().ok());
    EXPECT_EQ(count->Int(0), 0) << "the given-back lease's observation was dropped";
  }
  // The task's next lease (b's) writes; a's old capability stays refused.
  v1::LeaseResponse next;
  do {
    next = lease(b);
  } while (next.has_task() && next.task().index() != index);
  ASSERT_TRUE(next.has_task());
  EXPECT_TRUE(
      SendObservations(b.scorer.get(), TaskObservations(audit_id, index, next.capability())).ok());
  EXPECT_EQ(SendObservations(a.scorer.get(), {mine[1]}).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(HostileCallersTest, RequireClientCertRefusesATlsClientWithoutOne) {
  ASSERT_NO_FATAL_FAILURE(StartServices({"--require-client-cert"}));
  auto without = v1::AuditService::NewStub(Channel(coordinator_port_, ""));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::ListRequest list;
  v1::ListResponse listed;
  EXPECT_EQ(without->List(&ctx, list, &listed).error_code(), grpc::StatusCode::UNAVAILABLE)
      << "the handshake itself fails";
  auto with = v1::AuditService::NewStub(Channel(coordinator_port_, "team-alpha"));
  grpc::ClientContext ok_ctx;
  EXPECT_TRUE(with->List(&ok_ctx, list, &listed).ok());
}

}  // namespace
}  // namespace memaudit::testing
