#include "common/rpc/grpc_server_metrics.h"

#include <grpcpp/grpcpp.h>

#include "common/rpc/serving.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "memaudit/v1/worker.grpc.pb.h"

namespace memaudit {
namespace {

TEST(GrpcMethodLabelTest, KeepsCompiledInMethodsAndBucketsTheRest) {
  // Referencing the message links worker.pb.cc, which registers the service.
  ASSERT_NE(v1::LeaseRequest::descriptor(), nullptr);
  EXPECT_EQ(GrpcMethodLabel("/memaudit.v1.WorkerService/Lease"),
            "/memaudit.v1.WorkerService/Lease");
  EXPECT_EQ(GrpcMethodLabel("/grpc.health.v1.Health/Check"), "/grpc.health.v1.Health/Check");
  EXPECT_EQ(GrpcMethodLabel("/memaudit.v1.WorkerService/MadeUp"), "unknown");
  EXPECT_EQ(GrpcMethodLabel("/no.such.Service/Lease"), "unknown");
  EXPECT_EQ(GrpcMethodLabel("garbage"), "unknown");
  EXPECT_EQ(GrpcMethodLabel(""), "unknown");
}

TEST(GrpcServerMetricsTest, CountsAndTimesEveryCallByMethodAndCode) {
  prometheus::Registry registry;
  // The generated base class answers every method with UNIMPLEMENTED.
  v1::WorkerService::Service service;
  ServingFlags flags;
  flags.tls.insecure = true;
  auto serving = StartServing(flags, {&service}, &registry);
  MEMAUDIT_ASSERT_OK(serving);
  auto stub = v1::WorkerService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(serving->port), grpc::InsecureChannelCredentials()));
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext ctx;
    v1::RegisterResponse resp;
    EXPECT_EQ(stub->Register(&ctx, v1::RegisterRequest(), &resp).error_code(),
              grpc::StatusCode::UNIMPLEMENTED);
  }
  serving->server->Shutdown();
  const std::string text = metrics::Exposition(registry);
  const std::string labels =
      "{code=\"UNIMPLEMENTED\",method=\"/memaudit.v1.WorkerService/Register\"}";
  EXPECT_NE(text.find("memaudit_grpc_server_handled_total" + labels + " 3"), std::string::npos)
      << text;
  EXPECT_NE(text.find("memaudit_grpc_server_handling_seconds_count" + labels + " 3"),
            std::string::npos)
      << text;
}

TEST(GrpcCodeNameTest, NamesCanonicalCodes) {
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::OK), "OK");
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::FAILED_PRECONDITION), "FAILED_PRECONDITION");
  EXPECT_STREQ(GrpcCodeName(99), "UNKNOWN");
  EXPECT_STREQ(GrpcCodeName(-1), "UNKNOWN");
}

}  // namespace
}  // namespace memaudit
