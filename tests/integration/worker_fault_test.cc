// The worker never aborts (issue 12). A worker loop runs in this process
// against a real coordinator and scorer (child processes), with the real
// kind handlers except for one task whose engine throws from inside the run,
// as LibTorch does on a CUDA out-of-memory or a shape mismatch. The task
// fails cleanly: at once, with the exception's message as the audit's error,
// when the failure is deterministic; retried when it is transient (out of
// memory). Either way the same loop goes on to lease and train the next
// audit's tasks.
#include <atomic>
#include <chrono>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "services/worker/kind_handler.h"
#include "services/worker/worker_loop.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kFaultMessage[] = "injected engine fault: mat1 and mat2 shapes cannot be multiplied";

enum class Fault { kRuntimeError, kBadAlloc };

// The real handlers, except that the first task it is given (the victim)
// throws `fault` on its first `times` runs, after training a little, so the
// heartbeat thread is running when the exception unwinds.
class FaultyEngine : public worker::KindHandler {
 public:
  FaultyEngine(Fault fault, int times) : fault_(fault), times_(times) {}

  absl::StatusOr<std::vector<v1::Observation>> Run(
      const v1::Task& task, const worker::StepCallback& on_steps,
      const worker::ObservationSink& send_early) const override {
    const std::string id = task.audit_id() + "/" + task.task_id();
    bool fail = false;
    {
      absl::MutexLock lock(&mu_);
      if (victim_.empty()) victim_ = id;
      if (id == victim_) {
        ++victim_runs_;
        fail = victim_runs_ <= times_;
      }
    }
    if (fail) {
      on_steps(1, 16);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));  // > 2 heartbeats
      if (fault_ == Fault::kBadAlloc) throw std::bad_alloc();
      throw std::runtime_error(kFaultMessage);
    }
    return worker::HandlerFor(task.spec().kind_case())->Run(task, on_steps, send_early);
  }

  std::string victim_task() const {
    absl::MutexLock lock(&mu_);
    return victim_.substr(victim_.find('/') + 1);
  }
  int victim_runs() const {
    absl::MutexLock lock(&mu_);
    return victim_runs_;
  }

 private:
  const Fault fault_;
  const int times_;
  mutable absl::Mutex mu_;
  mutable std::string victim_ ABSL_GUARDED_BY(mu_);
  mutable int victim_runs_ ABSL_GUARDED_BY(mu_) = 0;
};

class WorkerFaultTest : public ClusterTest {
 protected:
  // A cluster without worker processes, and one in-process worker loop
  // whose engine is `engine_`.
  void StartFaultyWorker(Fault fault, int times) {
    ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0));
    engine_ = std::make_unique<FaultyEngine>(fault, times);
    worker::WorkerOptions options;
    options.coordinator = cluster_->coordinator_address();
    options.lease_wait_ms = 200;
    loop_ = std::make_unique<worker::WorkerLoop>(
        options, nullptr,
        [this](AuditKind) -> const worker::KindHandler* { return engine_.get(); });
    runner_ = std::thread([this] {
      result_ = loop_->Run();
      returned_ = true;
    });
  }

  void TearDown() override {
    if (loop_ == nullptr) return;
    loop_->Stop();
    runner_.join();
    MEMAUDIT_EXPECT_OK(result_);
  }

  struct Outcome {
    v1::Audit audit;
    std::vector<v1::AuditEvent> events;
  };
  // Submits `spec` and follows its events until the audit ends.
  Outcome RunAudit(const v1::AuditSpec& spec) {
    Outcome out;
    auto submitted = client_->Submit(spec);
    MEMAUDIT_EXPECT_OK(submitted);
    if (!submitted.ok()) return out;
    MEMAUDIT_EXPECT_OK(client_->Watch(submitted->audit_id(), [&](const v1::AuditEvent& e) {
      out.events.push_back(e);
      return true;
    }));
    auto audit = client_->Get(submitted->audit_id());
    MEMAUDIT_EXPECT_OK(audit);
    if (audit.ok()) out.audit = *audit;
    return out;
  }

  static std::vector<v1::AuditEvent> OfType(const Outcome& o, const std::string& type) {
    std::vector<v1::AuditEvent> of;
    for (const v1::AuditEvent& e : o.events) {
      if (e.type() == type) of.push_back(e);
    }
    return of;
  }

  // The loop is still running, and trains a whole audit with the real engine.
  void ExpectTheWorkerGoesOn() {
    EXPECT_FALSE(returned_);
    Finished next;
    ASSERT_NO_FATAL_FAILURE(RunToCompletion(TinyMembershipSpec(), &next));
    EXPECT_FALSE(returned_);
  }

  std::unique_ptr<FaultyEngine> engine_;
  std::unique_ptr<worker::WorkerLoop> loop_;
  std::thread runner_;
  absl::Status result_;
  std::atomic<bool> returned_{false};
};

TEST_F(WorkerFaultTest, AnEngineExceptionFailsTheAuditAtOnceWithItsMessage) {
  ASSERT_NO_FATAL_FAILURE(StartFaultyWorker(Fault::kRuntimeError, /*times=*/100));
  v1::AuditSpec spec = TinyMembershipSpec();
  spec.mutable_resources()->set_max_attempts(3);
  const Outcome outcome = RunAudit(spec);

  // Deterministic: no retry, the budget of 3 notwithstanding.
  EXPECT_EQ(outcome.audit.state(), v1::FAILED);
  EXPECT_THAT(outcome.audit.error(),
              AllOf(HasSubstr("task " + engine_->victim_task() + " failed after 1 attempt(s)"),
                    HasSubstr(kFaultMessage)));
  EXPECT_TRUE(OfType(outcome, "task_retried").empty());
  ASSERT_EQ(OfType(outcome, "task_failed").size(), 1u);
  EXPECT_EQ(OfType(outcome, "task_failed")[0].task_id(), engine_->victim_task());
  EXPECT_EQ(engine_->victim_runs(), 1);

  ExpectTheWorkerGoesOn();
}

TEST_F(WorkerFaultTest, OutOfMemoryIsRetriedAndTheAuditSucceeds) {
  ASSERT_NO_FATAL_FAILURE(StartFaultyWorker(Fault::kBadAlloc, /*times=*/1));
  v1::AuditSpec spec = TinyMembershipSpec();
  spec.mutable_resources()->set_max_attempts(3);
  const Outcome outcome = RunAudit(spec);

  EXPECT_EQ(outcome.audit.state(), v1::SUCCEEDED) << outcome.audit.error();
  const std::vector<v1::AuditEvent> retried = OfType(outcome, "task_retried");
  ASSERT_EQ(retried.size(), 1u);
  EXPECT_EQ(retried[0].task_id(), engine_->victim_task());
  EXPECT_THAT(retried[0].message(),
              AllOf(HasSubstr("ran out of memory"), HasSubstr("(attempt 1 of 3)")));
  EXPECT_EQ(engine_->victim_runs(), 2);
  auto results = client_->Report(outcome.audit.audit_id());
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_TRUE(results->complete());

  ExpectTheWorkerGoesOn();
}

TEST_F(WorkerFaultTest, OutOfMemoryOnEveryAttemptFailsTheAuditAfterItsBudget) {
  ASSERT_NO_FATAL_FAILURE(StartFaultyWorker(Fault::kBadAlloc, /*times=*/100));
  v1::AuditSpec spec = TinyMembershipSpec();
  spec.mutable_resources()->set_max_attempts(2);
  const Outcome outcome = RunAudit(spec);

  EXPECT_EQ(outcome.audit.state(), v1::FAILED);
  EXPECT_THAT(outcome.audit.error(),
              AllOf(HasSubstr("failed after 2 attempt(s)"), HasSubstr("ran out of memory")));
  EXPECT_EQ(OfType(outcome, "task_retried").size(), 1u);
  EXPECT_EQ(engine_->victim_runs(), 2);

  ExpectTheWorkerGoesOn();
}

}  // namespace
}  // namespace memaudit::testing
