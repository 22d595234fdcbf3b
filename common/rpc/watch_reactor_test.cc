#include "common/rpc/watch_reactor.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/base/change_notifier.h"
#include "common/base/deadline_timer.h"
#include "gtest/gtest.h"
#include "memaudit/v1/scorer.grpc.pb.h"

namespace memaudit {
namespace {

// What the watches of the test follow: a value that changes, and whether it
// is final.
struct Followed {
  std::atomic<int> value{0};
  std::atomic<bool> final{false};
  std::atomic<int> polls{0};
};

// Writes `value` (as the results' audit id) whenever it changed since the
// last write, until it is final.
class ValueWatch final : public WatchReactor<v1::AuditResults> {
 public:
  ValueWatch(ChangeNotifier* changes, absl::Duration wait, Followed* followed)
      : WatchReactor(changes, wait), changes_(changes), followed_(followed) {}

 private:
  Step Poll() override {
    ++followed_->polls;
    Step step;
    step.seen = changes_->version();
    const int value = followed_->value;
    if (value != last_) {
      step.writes.emplace_back().set_audit_id(std::to_string(value));
      last_ = value;
    }
    if (followed_->final) step.then = Step::Then::kFinish;
    return step;
  }

  ChangeNotifier* const changes_;
  Followed* const followed_;
  int last_ = -1;
};

class ValueService final
    : public v1::ScorerService::WithCallbackMethod_WatchResults<v1::ScorerService::Service> {
 public:
  ValueService(ChangeNotifier* changes, absl::Duration wait, Followed* followed)
      : changes_(changes), wait_(wait), followed_(followed) {}

  grpc::ServerWriteReactor<v1::AuditResults>* WatchResults(grpc::CallbackServerContext*,
                                                           const v1::GetResultsRequest*) override {
    auto* watch = new ValueWatch(changes_, wait_, followed_);
    watch->Start();
    return watch;
  }

 private:
  ChangeNotifier* const changes_;
  const absl::Duration wait_;
  Followed* const followed_;
};

class WatchReactorTest : public ::testing::Test {
 protected:
  void Serve(absl::Duration wait) {
    service_ = std::make_unique<ValueService>(&changes_, wait, &followed_);
    grpc::ServerBuilder builder;
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::ScorerService::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
  }
  void TearDown() override {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    }
  }

  DeadlineTimer timer_;
  ChangeNotifier changes_{&timer_};
  Followed followed_;
  std::unique_ptr<ValueService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::ScorerService::Stub> stub_;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST_F(WatchReactorTest, AStoppedNotifierEndsAWaitingStreamAtOnceWithUnavailable) {
  // A wait far longer than the test: only the stop can end it.
  Serve(absl::Seconds(60));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto reader = stub_->WatchResults(&ctx, v1::GetResultsRequest());
  v1::AuditResults got;
  ASSERT_TRUE(reader->Read(&got));
  EXPECT_EQ(got.audit_id(), "0");
  // What changed just before the stop is still written.
  followed_.value = 1;
  const auto start = std::chrono::steady_clock::now();
  changes_.Stop();
  std::vector<std::string> after;
  while (reader->Read(&got)) after.push_back(got.audit_id());
  const grpc::Status status = reader->Finish();
  EXPECT_LT(SecondsSince(start), 5.0);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_EQ(after, std::vector<std::string>{"1"});
  // Not a spin: one poll for the change, at most one more for the stop.
  EXPECT_LE(followed_.polls.load(), 3);
}

TEST_F(WatchReactorTest, AStreamStartedAfterTheStopEndsAtOnce) {
  Serve(absl::Seconds(60));
  changes_.Stop();
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto reader = stub_->WatchResults(&ctx, v1::GetResultsRequest());
  v1::AuditResults got;
  ASSERT_TRUE(reader->Read(&got));
  EXPECT_FALSE(reader->Read(&got));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(WatchReactorTest, TimeoutsAreNotTakenForAStop) {
  // Short waits: the stream re-polls after each, and goes on.
  Serve(absl::Milliseconds(20));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto reader = stub_->WatchResults(&ctx, v1::GetResultsRequest());
  v1::AuditResults got;
  ASSERT_TRUE(reader->Read(&got));
  const auto start = std::chrono::steady_clock::now();
  while (followed_.polls < 5 && SecondsSince(start) < 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(followed_.polls.load(), 5);
  // A change is still seen, and a final value ends the stream with OK.
  followed_.value = 2;
  followed_.final = true;
  changes_.Bump();
  ASSERT_TRUE(reader->Read(&got));
  EXPECT_EQ(got.audit_id(), "2");
  EXPECT_FALSE(reader->Read(&got));
  EXPECT_TRUE(reader->Finish().ok());
}

}  // namespace
}  // namespace memaudit
