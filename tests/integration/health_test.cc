// Every memaudit server answers the standard gRPC health check.
#include <grpcpp/grpcpp.h>

#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

class HealthTest : public ClusterTest {};

grpc::health::v1::HealthCheckResponse::ServingStatus Check(std::shared_ptr<grpc::Channel> channel,
                                                           const std::string& address) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  grpc::Status status = stub->Check(&ctx, req, &resp);
  EXPECT_TRUE(status.ok()) << address << ": " << status.error_message();
  return resp.status();
}

TEST_F(HealthTest, CoordinatorAndScorerAreServing) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  for (const std::string& address : {cluster_->coordinator_address(), cluster_->scorer_address()}) {
    EXPECT_EQ(Check(AdminChannel(address), address),
              grpc::health::v1::HealthCheckResponse::SERVING);
  }
}

}  // namespace
}  // namespace memaudit::testing
