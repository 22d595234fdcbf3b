#include "services/worker/heartbeats.h"

#include <gtest/gtest.h>

#include <vector>

namespace memaudit::worker {
namespace {

// Records every request and answers as the test says.
struct FakeCoordinator {
  absl::Mutex mu;
  std::vector<v1::HeartbeatRequest> requests ABSL_GUARDED_BY(mu);
  bool knows_more = true;  // answers `more` (a current coordinator)
  std::string stop_lease;  // this lease is told to stop
  grpc::Status answer = grpc::Status::OK;

  Heartbeats::Send Sender() {
    return [this](const v1::HeartbeatRequest& req, v1::HeartbeatResponse* resp) {
      absl::MutexLock lock(&mu);
      requests.push_back(req);
      if (!answer.ok()) return answer;
      resp->set_stop(req.lease_id() == stop_lease);
      if (resp->stop()) resp->set_reason("cancelled");
      if (knows_more) {
        for (const v1::LeaseBeat& beat : req.more()) {
          v1::LeaseVerdict* verdict = resp->add_more();
          verdict->set_stop(beat.lease_id() == stop_lease);
          if (verdict->stop()) verdict->set_reason("cancelled");
        }
      }
      return grpc::Status::OK;
    };
  }
  size_t calls() {
    absl::MutexLock lock(&mu);
    return requests.size();
  }
};

bool Eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 1000 && !done(); ++i) absl::SleepFor(absl::Milliseconds(5));
  return done();
}

TEST(HeartbeatsTest, OneCallPerRoundBeatsEveryLeaseAndStopsTheOneToldTo) {
  FakeCoordinator coordinator;
  coordinator.stop_lease = "l-2";
  std::atomic<uint64_t> steps[3] = {{10}, {20}, {30}};
  StopOrder stops[3];
  Heartbeats beats(absl::Milliseconds(20), coordinator.Sender());
  {
    Heartbeats::Lease a(&beats, "w", "l-1", &steps[0], &stops[0]);
    Heartbeats::Lease b(&beats, "w", "l-2", &steps[1], &stops[1]);
    Heartbeats::Lease c(&beats, "w", "l-3", &steps[2], &stops[2]);
    ASSERT_TRUE(Eventually([&] { return stops[1].given.load(); }));
    EXPECT_FALSE(stops[0].given);
    EXPECT_FALSE(stops[2].given);
    absl::MutexLock lock(&stops[1].mu);
    EXPECT_EQ(stops[1].reason, "cancelled");
  }
  absl::MutexLock lock(&coordinator.mu);
  const v1::HeartbeatRequest& first = coordinator.requests.front();
  EXPECT_EQ(first.worker_id(), "w");
  EXPECT_EQ(first.lease_id(), "l-1");
  EXPECT_EQ(first.steps_done(), 10u);
  ASSERT_EQ(first.more_size(), 2);
  EXPECT_EQ(first.more(0).lease_id(), "l-2");
  EXPECT_EQ(first.more(1).steps_done(), 30u);
}

TEST(HeartbeatsTest, ACoordinatorThatAnswersNoMoreGetsTheRestOneCallEach) {
  FakeCoordinator coordinator;
  coordinator.knows_more = false;
  coordinator.stop_lease = "l-3";
  std::atomic<uint64_t> steps[3] = {{0}, {0}, {0}};
  StopOrder stops[3];
  Heartbeats beats(absl::Milliseconds(20), coordinator.Sender());
  Heartbeats::Lease a(&beats, "w", "l-1", &steps[0], &stops[0]);
  Heartbeats::Lease b(&beats, "w", "l-2", &steps[1], &stops[1]);
  Heartbeats::Lease c(&beats, "w", "l-3", &steps[2], &stops[2]);
  ASSERT_TRUE(Eventually([&] { return stops[2].given.load(); }));
  absl::MutexLock lock(&coordinator.mu);
  ASSERT_GE(coordinator.requests.size(), 3u);
  EXPECT_EQ(coordinator.requests[0].more_size(), 2);
  EXPECT_EQ(coordinator.requests[1].lease_id(), "l-2");
  EXPECT_EQ(coordinator.requests[2].lease_id(), "l-3");
}

TEST(HeartbeatsTest, NoLeaseNoCallAndAnUnansweredBeatStopsNothing) {
  FakeCoordinator coordinator;
  coordinator.answer = grpc::Status(grpc::StatusCode::UNAVAILABLE, "down");
  coordinator.stop_lease = "l-1";
  Heartbeats beats(absl::Milliseconds(10), coordinator.Sender());
  absl::SleepFor(absl::Milliseconds(60));
  EXPECT_EQ(coordinator.calls(), 0u) << "no lease held";
  std::atomic<uint64_t> steps{0};
  StopOrder stop;
  {
    Heartbeats::Lease a(&beats, "w", "l-1", &steps, &stop);
    ASSERT_TRUE(Eventually([&] { return coordinator.calls() >= 3; }));
    EXPECT_FALSE(stop.given);
  }
  const size_t after = coordinator.calls();
  absl::SleepFor(absl::Milliseconds(60));
  EXPECT_LE(coordinator.calls(), after + 1) << "a lease let go is no longer beaten";
}

}  // namespace
}  // namespace memaudit::worker
