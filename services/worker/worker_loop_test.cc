// WorkerLoop::Stop against a fake coordinator: a stop ends the worker at
// once, whatever it waits in (a Lease long-poll, a Register to a coordinator
// not there yet, a backoff pause), instead of when that wait runs out.
#include "services/worker/worker_loop.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "gtest/gtest.h"
#include "memaudit/v1/worker.grpc.pb.h"

namespace memaudit::worker {
namespace {

// Registers anyone; answers a Lease only when the caller cancels it (a
// coordinator with no task for as long as the worker cares to wait).
class IdleCoordinator final : public v1::WorkerService::Service {
 public:
  grpc::Status Register(grpc::ServerContext*, const v1::RegisterRequest*,
                        v1::RegisterResponse* resp) override {
    resp->set_worker_id("w-1");
    resp->set_scorer_address("127.0.0.1:1");
    resp->set_heartbeat_interval_ms(1000);
    return grpc::Status::OK;
  }
  grpc::Status Lease(grpc::ServerContext* ctx, const v1::LeaseRequest*,
                     v1::LeaseResponse*) override {
    ++leases_waiting_;
    while (!ctx->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    --leases_waiting_;
    return grpc::Status(grpc::StatusCode::CANCELLED, "the worker went away");
  }

  int leases_waiting() const { return leases_waiting_; }

 private:
  std::atomic<int> leases_waiting_{0};
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

WorkerOptions Options(const std::string& coordinator) {
  WorkerOptions options;
  options.coordinator = coordinator;
  options.credentials.tls.insecure = true;
  // Far longer than the bounds below: only the stop can end the waits.
  options.lease_wait_ms = 30000;
  options.max_register_backoff = absl::Seconds(30);
  return options;
}

TEST(WorkerLoopStopTest, StopEndsALeaseLongPollAtOnce) {
  IdleCoordinator coordinator;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&coordinator);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);

  WorkerLoop loop(Options("127.0.0.1:" + std::to_string(port)));
  absl::Status result = absl::UnknownError("still running");
  std::atomic<bool> returned{false};
  std::thread runner([&] {
    result = loop.Run();
    returned = true;
  });
  const auto waiting = std::chrono::steady_clock::now();
  while (coordinator.leases_waiting() == 0 && SecondsSince(waiting) < 30) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(coordinator.leases_waiting(), 1);

  const auto start = std::chrono::steady_clock::now();
  loop.Stop();
  while (!returned && SecondsSince(start) < 40) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const double took = SecondsSince(start);
  runner.join();
  EXPECT_TRUE(result.ok()) << result;
  EXPECT_LT(took, 1.0) << "the Lease long-poll (30 s) was waited out";
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

TEST(WorkerLoopStopTest, StopEndsRegisteringWithACoordinatorThatIsNotThere) {
  // Nothing listens there: Register waits for the channel (wait_for_ready),
  // then backs off, again and again.
  WorkerLoop loop(Options("127.0.0.1:1"));
  absl::Status result = absl::UnknownError("still running");
  std::atomic<bool> returned{false};
  std::thread runner([&] {
    result = loop.Run();
    returned = true;
  });
  // About 0.25 s into the 0.5 s pause after the first try (which waits 2 s
  // for the channel); on a slow machine still in that try, or in the
  // second: each ends at once too.
  std::this_thread::sleep_for(std::chrono::milliseconds(2250));
  ASSERT_FALSE(returned);
  const auto start = std::chrono::steady_clock::now();
  loop.Stop();
  while (!returned && SecondsSince(start) < 40) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const double took = SecondsSince(start);
  runner.join();
  EXPECT_TRUE(result.ok()) << result;
  EXPECT_LT(took, 1.0);
}

}  // namespace
}  // namespace memaudit::worker
