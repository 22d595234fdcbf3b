#include "common/rpc/malformed_request.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/metrics/metrics.h"
#include "common/rpc/grpc_server_metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "memaudit/v1/scorer.grpc.pb.h"
#include "memaudit/v1/worker.grpc.pb.h"

namespace memaudit {
namespace {

using ::testing::HasSubstr;

constexpr char kLease[] = "/memaudit.v1.WorkerService/Lease";
constexpr char kHeartbeat[] = "/memaudit.v1.WorkerService/Heartbeat";
constexpr char kRegister[] = "/memaudit.v1.WorkerService/Register";
constexpr char kWatchResults[] = "/memaudit.v1.ScorerService/WatchResults";

// Field 1 (worker_id in LeaseRequest, audit_id in GetResultsRequest), a
// string: tag 0x0a, length, bytes.
std::string StringField1(const std::string& bytes) {
  return std::string("\x0a", 1) + static_cast<char>(bytes.size()) + bytes;
}
const std::string kInvalidUtf8 = StringField1("\xc3\x28 not utf-8");
const std::string kValid = StringField1("worker-1");
// Wire type 7 does not exist; a length past the end of the message.
const std::string kGarbage = "\x0f\xff\xff\xff garbage";
const std::string kTruncated = std::string("\x0a\x40", 2) + "short";

std::string MalformedMessage(const std::string& method) {
  return "request: not a valid " + method +
         " message (malformed protobuf, or invalid UTF-8 in a string field)";
}

// Handlers that fail with their own INTERNAL, one with a message and one
// without, synchronous and callback.
class SyncWorker final : public v1::WorkerService::Service {
 public:
  grpc::Status Lease(grpc::ServerContext*, const v1::LeaseRequest*, v1::LeaseResponse*) override {
    return grpc::Status(grpc::StatusCode::INTERNAL, "lease store: on fire");
  }
  grpc::Status Heartbeat(grpc::ServerContext*, const v1::HeartbeatRequest*,
                         v1::HeartbeatResponse*) override {
    return grpc::Status(grpc::StatusCode::INTERNAL, "");
  }
};

class CallbackWorker final : public v1::WorkerService::CallbackService {
 public:
  grpc::ServerUnaryReactor* Lease(grpc::CallbackServerContext* ctx, const v1::LeaseRequest*,
                                  v1::LeaseResponse*) override {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status(grpc::StatusCode::INTERNAL, "lease store: on fire"));
    return reactor;
  }
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* ctx, const v1::HeartbeatRequest*,
                                      v1::HeartbeatResponse*) override {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status(grpc::StatusCode::INTERNAL, ""));
    return reactor;
  }
};

class SyncScorer final : public v1::ScorerService::Service {
 public:
  grpc::Status WatchResults(grpc::ServerContext*, const v1::GetResultsRequest*,
                            grpc::ServerWriter<v1::AuditResults>*) override {
    return grpc::Status(grpc::StatusCode::INTERNAL, "results store: on fire");
  }
};

class CallbackScorer final : public v1::ScorerService::CallbackService {
 public:
  grpc::ServerWriteReactor<v1::AuditResults>* WatchResults(grpc::CallbackServerContext*,
                                                           const v1::GetResultsRequest*) override {
    class Failing final : public grpc::ServerWriteReactor<v1::AuditResults> {
     public:
      Failing() { Finish(grpc::Status(grpc::StatusCode::INTERNAL, "results store: on fire")); }
      void OnDone() override { delete this; }
    };
    return new Failing;
  }
};

// One server per handler style: synchronous (INTERNAL "" for an unparsable
// request) or callback (UNIMPLEMENTED ""), with the interceptor ahead of
// the metrics.
class MalformedRequestTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { StartServer(/*intercept=*/true); }

  void StartServer(bool intercept) {
    if (server_ != nullptr) server_->Shutdown();
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    if (GetParam()) {
      builder.RegisterService(&callback_worker_);
      builder.RegisterService(&callback_scorer_);
    } else {
      builder.RegisterService(&sync_worker_);
      builder.RegisterService(&sync_scorer_);
    }
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
    if (intercept) creators.push_back(MalformedRequestInterceptor());
    creators.push_back(GrpcServerMetrics(&registry_));
    builder.experimental().SetInterceptorCreators(std::move(creators));
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                   grpc::InsecureChannelCredentials());
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  // Sends `bytes` as the one request message of `method` (none if nullopt)
  // and returns the status: the same on the wire for a unary and a
  // server-streaming call.
  grpc::Status Call(const std::string& method, const std::optional<std::string>& bytes) {
    grpc::GenericStub stub(channel_);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    grpc::CompletionQueue cq;
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
        stub.PrepareCall(&ctx, method, &cq);
    auto step = [&cq](void* tag) {
      void* got = nullptr;
      bool ok = false;
      EXPECT_TRUE(cq.Next(&got, &ok));
      EXPECT_EQ(got, tag);
      return ok;
    };
    int tags[5];
    call->StartCall(&tags[0]);
    step(&tags[0]);
    if (bytes.has_value()) {
      grpc::Slice slice(*bytes);
      grpc::ByteBuffer request(&slice, 1);
      call->Write(request, &tags[1]);
      step(&tags[1]);
    }
    call->WritesDone(&tags[2]);
    step(&tags[2]);
    // Every handler here fails: no message comes back.
    grpc::ByteBuffer response;
    call->Read(&response, &tags[3]);
    EXPECT_FALSE(step(&tags[3]));
    grpc::Status status;
    call->Finish(&status, &tags[4]);
    step(&tags[4]);
    return status;
  }

  SyncWorker sync_worker_;
  CallbackWorker callback_worker_;
  SyncScorer sync_scorer_;
  CallbackScorer callback_scorer_;
  prometheus::Registry registry_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_P(MalformedRequestTest, GarbageIsInvalidArgumentNamingTheMethod) {
  for (const std::string& bytes : {kGarbage, kTruncated}) {
    const grpc::Status status = Call(kLease, bytes);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(status.error_message(), MalformedMessage(kLease));
  }
}

TEST_P(MalformedRequestTest, InvalidUtf8InAStringFieldIsInvalidArgument) {
  const grpc::Status status = Call(kLease, kInvalidUtf8);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), MalformedMessage(kLease));
}

TEST_P(MalformedRequestTest, ServerStreamingRequestsToo) {
  for (const std::string& bytes : {kGarbage, kInvalidUtf8}) {
    const grpc::Status status = Call(kWatchResults, bytes);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(status.error_message(), MalformedMessage(kWatchResults));
  }
}

TEST_P(MalformedRequestTest, HandlersOwnStatusesPassUnchanged) {
  grpc::Status status = Call(kLease, kValid);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(status.error_message(), "lease store: on fire");
  // Even an INTERNAL with no message: the request parsed, so it is the
  // handler's.
  status = Call(kHeartbeat, kValid);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(status.error_message(), "");
  status = Call(kWatchResults, kValid);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(status.error_message(), "results store: on fire");
  // A method the service leaves unimplemented answers UNIMPLEMENTED with no
  // message, as a callback handler's parse failure does: kept.
  status = Call(kRegister, "");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(status.error_message(), "");
  // A method no service has: kept.
  status = Call("/memaudit.v1.WorkerService/MadeUp", kGarbage);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

// What the interceptor is for, and a canary for a gRPC upgrade: if this
// fails, gRPC reports an unparsable request differently now, and the
// interceptor's assumptions (malformed_request.h) need checking again.
TEST_P(MalformedRequestTest, WithoutItGrpcBlamesTheServerAndSaysNothing) {
  StartServer(/*intercept=*/false);
  const grpc::StatusCode expected =
      GetParam() ? grpc::StatusCode::UNIMPLEMENTED : grpc::StatusCode::INTERNAL;
  for (const char* method : {kLease, kWatchResults}) {
    for (const std::string& bytes : {kGarbage, kInvalidUtf8}) {
      const grpc::Status status = Call(method, bytes);
      EXPECT_EQ(status.error_code(), expected) << method;
      EXPECT_EQ(status.error_message(), "") << method;
    }
  }
}

TEST_P(MalformedRequestTest, NoRequestMessageAtAll) {
  const grpc::Status status = Call(kLease, std::nullopt);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_EQ(status.error_message(), MalformedMessage(kLease));
}

TEST_P(MalformedRequestTest, MetricsCountTheRewrittenCode) {
  Call(kLease, kGarbage);
  server_->Shutdown();
  const std::string text = metrics::Exposition(registry_);
  EXPECT_THAT(text, HasSubstr("memaudit_grpc_server_handled_total{code=\"INVALID_ARGUMENT\","
                              "method=\"/memaudit.v1.WorkerService/Lease\"} 1"));
}

INSTANTIATE_TEST_SUITE_P(HandlerStyles, MalformedRequestTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Callback" : "Sync";
                         });

}  // namespace
}  // namespace memaudit
