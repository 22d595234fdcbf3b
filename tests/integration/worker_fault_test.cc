// The worker never aborts (issue 12). A worker loop runs in this process
// against a real coordinator and scorer (child processes), with the real
// kind handlers except for one task whose engine throws from inside the run,
// as LibTorch does on a CUDA out-of-memory or a shape mismatch. The task
// fails cleanly: at once, with the exception's message as the audit's error,
// when the failure is deterministic; retried when it is transient (out of
// memory). Either way the same loop goes on to lease and train the next
// audit's tasks.
//
// Failures that are not the task's own cost no attempt: a worker stopped
// mid-task releases its task (trained again without an attempt counted, so
// an audit allowed one attempt per task still succeeds), a data-parallel
// task across two devices too, with an undisturbed run's numbers; a scorer or
// coordinator outage is waited out without retraining. A CUDA error is reported, then the worker
// stops leasing and its Run() fails (memaudit-worker exits 1 on that). A final failure reported
// while the coordinator does not answer is reported again until it does, rather than lost to a
// lease expiry and retried.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/messages/event_types.h"
#include "common/testing/status_matchers.h"
#include "engine/device.h"
#include "gmock/gmock.h"
#include "services/worker/kind_handler.h"
#include "services/worker/worker_loop.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/in_process_worker.h"

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

// The real handlers, except that the first task it is given (the victim)
// runs `victim` in place of the engine on its first run; every later run of
// it trains for real.
class VictimEngine : public worker::KindHandler {
 public:
  using Run1 = std::function<absl::StatusOr<std::vector<v1::Observation>>(
      const v1::Task&, const worker::StepCallback&, const worker::ObservationSink&)>;
  explicit VictimEngine(Run1 victim) : victim_(std::move(victim)) {}

  absl::StatusOr<std::vector<v1::Observation>> Run(
      const v1::Task& task, const worker::StepCallback& on_steps,
      const worker::ObservationSink& send_early) const override {
    const std::string id = task.audit_id() + "/" + task.task_id();
    bool first = false;
    {
      absl::MutexLock lock(&mu_);
      if (victim_id_.empty()) victim_id_ = id;
      if (id == victim_id_) first = ++victim_runs_ == 1;
    }
    if (first) return victim_(task, on_steps, send_early);
    return worker::HandlerFor(task.spec().kind_case())->Run(task, on_steps, send_early);
  }

  std::string victim_task() const {
    absl::MutexLock lock(&mu_);
    return victim_id_.substr(victim_id_.find('/') + 1);
  }
  int victim_runs() const {
    absl::MutexLock lock(&mu_);
    return victim_runs_;
  }

 private:
  const Run1 victim_;
  mutable absl::Mutex mu_;
  mutable std::string victim_id_ ABSL_GUARDED_BY(mu_);
  mutable int victim_runs_ ABSL_GUARDED_BY(mu_) = 0;
};

// The real handlers, recording the devices each run's thread is pinned to.
// With `hold_first`, the first run, once it has trained a step, notifies
// `training` and holds there, mid-training, until its worker says stop
// (on_steps answers false).
class DevicesRecordingEngine : public worker::KindHandler {
 public:
  explicit DevicesRecordingEngine(bool hold_first) : hold_first_(hold_first) {}

  absl::StatusOr<std::vector<v1::Observation>> Run(
      const v1::Task& task, const worker::StepCallback& on_steps,
      const worker::ObservationSink& send_early) const override {
    bool first = false;
    {
      absl::MutexLock lock(&mu_);
      first = hold_first_ && runs_.empty();
      runs_.push_back(engine::ThreadDevices());
    }
    const worker::StepCallback notifying = [&](uint64_t steps, uint64_t examples) {
      if (!first || steps == 0) return on_steps(steps, examples);
      if (!training.HasBeenNotified()) training.Notify();
      const absl::Time end = absl::Now() + absl::Seconds(60);
      while (on_steps(steps, examples) && absl::Now() < end) {
        absl::SleepFor(absl::Milliseconds(20));
      }
      return false;
    };
    return worker::HandlerFor(task.spec().kind_case())->Run(task, notifying, send_early);
  }

  std::vector<std::vector<std::string>> runs() const {
    absl::MutexLock lock(&mu_);
    return runs_;
  }
  mutable absl::Notification training;

 private:
  const bool hold_first_;
  mutable absl::Mutex mu_;
  mutable std::vector<std::vector<std::string>> runs_ ABSL_GUARDED_BY(mu_);
};

// Membership of a small CNN whose every model trains data-parallel across
// two devices of one worker, with one attempt per task.
v1::AuditSpec DataParallelSpec() {
  v1::AuditSpec spec = TinyMembershipSpec(/*models=*/4, /*epochs=*/4);
  v1::ModelSpec* model = spec.mutable_membership()->mutable_model();
  model->set_architecture("cnn");
  model->clear_hidden();
  for (uint32_t width : {4, 8, 16}) model->add_hidden(width);
  spec.mutable_resources()->set_gpus_per_task(2);
  spec.mutable_resources()->set_max_attempts(1);
  return spec;
}

class WorkerFaultTest : public ClusterTest {
 protected:
  // A cluster without worker processes, and one in-process worker loop
  // whose engine is `engine_`.
  void StartFaultyWorker(Fault fault, int times) {
    ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0));
    engine_ = std::make_unique<FaultyEngine>(fault, times);
    loop_ = StartLoop(engine_.get());
  }

  // `devices`: the devices it offers, one GPU each (none: a CPU worker).
  InProcessWorker* StartLoop(const worker::KindHandler* engine,
                             const std::vector<std::string>& devices = {}) {
    worker::WorkerOptions options;
    options.coordinator = cluster_->coordinator_address();
    options.credentials = cluster_->worker_credentials();
    options.lease_wait_ms = 200;
    options.devices = devices;
    options.gpus = static_cast<uint32_t>(devices.size());
    loops_.push_back(std::make_unique<InProcessWorker>(options, engine));
    return loops_.back().get();
  }

  void TearDown() override {
    for (auto& l : loops_) {
      l->Stop();
      if (!expect_error_.count(l.get())) {
        MEMAUDIT_EXPECT_OK(l->result());
      }
    }
  }

  struct Outcome {
    v1::Audit audit;
    std::vector<v1::AuditEvent> events;
  };
  // Submits `spec` and follows its events until the audit ends, calling
  // `on_event` (if any) with each.
  Outcome RunAudit(const v1::AuditSpec& spec,
                   const std::function<void(const v1::AuditEvent&)>& on_event = nullptr) {
    auto submitted = client_->Submit(spec);
    MEMAUDIT_EXPECT_OK(submitted);
    if (!submitted.ok()) return {};
    return Follow(submitted->audit_id(), on_event);
  }

  // Follows an audit's events (from the first) until it ends.
  Outcome Follow(const std::string& audit_id,
                 const std::function<void(const v1::AuditEvent&)>& on_event = nullptr) {
    Outcome out;
    MEMAUDIT_EXPECT_OK(client_->Watch(audit_id, [&](const v1::AuditEvent& e) {
      out.events.push_back(e);
      if (on_event) on_event(e);
      return true;
    }));
    auto audit = client_->Get(audit_id);
    MEMAUDIT_EXPECT_OK(audit);
    if (audit.ok()) out.audit = *audit;
    return out;
  }

  // The audit's results are all there.
  void ExpectCompleteResults(const Outcome& outcome) {
    auto results = client_->Report(outcome.audit.audit_id());
    MEMAUDIT_ASSERT_OK(results);
    EXPECT_TRUE(results->complete());
  }

  // Every lease of `task_id` was its first attempt.
  static void ExpectOnlyFirstAttempts(const Outcome& o, const std::string& task_id) {
    const std::vector<v1::AuditEvent> leased = OfType(o, "task_leased", task_id);
    EXPECT_FALSE(leased.empty());
    for (const v1::AuditEvent& e : leased) EXPECT_THAT(e.message(), HasSubstr("attempt 1 on "));
  }

  static std::vector<v1::AuditEvent> OfType(const Outcome& o, const std::string& type,
                                            const std::string& task_id = "") {
    std::vector<v1::AuditEvent> of;
    for (const v1::AuditEvent& e : o.events) {
      if (EventTypeName(e.type()) == type && (task_id.empty() || e.task_id() == task_id))
        of.push_back(e);
    }
    return of;
  }

  // The loop is still running, and trains a whole audit with the real engine.
  void ExpectTheWorkerGoesOn() {
    EXPECT_FALSE(loop_->returned());
    Finished next;
    ASSERT_NO_FATAL_FAILURE(RunToCompletion(TinyMembershipSpec(), &next));
    EXPECT_FALSE(loop_->returned());
  }

  std::unique_ptr<FaultyEngine> engine_;
  std::vector<std::unique_ptr<InProcessWorker>> loops_;
  // Loops whose Run() is expected to fail (checked by the test itself).
  std::set<const InProcessWorker*> expect_error_;
  InProcessWorker* loop_ = nullptr;  // StartFaultyWorker's
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

// SIGTERM mid-task (memaudit-worker's signal thread calls Stop) is not the
// task's failure: the task is released, and an audit allowed one attempt
// per task succeeds on the next worker.
TEST_F(WorkerFaultTest, AWorkerStoppedMidTaskReleasesItAndTheAuditSucceedsOnAnother) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0));
  absl::Notification training;
  VictimEngine engine(
      [&](const v1::Task&, const worker::StepCallback& on_steps,
          const worker::ObservationSink&) -> absl::StatusOr<std::vector<v1::Observation>> {
        training.Notify();
        // Trains until told to stop, then returns what the engine returns.
        for (uint64_t step = 1; on_steps(step, 16 * step); ++step) {
          absl::SleepFor(absl::Milliseconds(20));
        }
        return absl::CancelledError("training stopped");
      });
  InProcessWorker* first = StartLoop(&engine);
  v1::AuditSpec spec = TinyMembershipSpec();
  spec.mutable_resources()->set_max_attempts(1);
  const Outcome outcome = RunAudit(spec, [&](const v1::AuditEvent& e) {
    if (e.type() != v1::TASK_LEASED || loops_.size() > 1) return;
    ASSERT_TRUE(training.WaitForNotificationWithTimeout(absl::Seconds(60)));
    first->Stop();
    StartLoop(&engine);
  });

  EXPECT_EQ(outcome.audit.state(), v1::SUCCEEDED) << outcome.audit.error();
  EXPECT_TRUE(first->returned());
  MEMAUDIT_EXPECT_OK(first->result());
  const std::vector<v1::AuditEvent> released =
      OfType(outcome, "task_released", engine.victim_task());
  ASSERT_EQ(released.size(), 1u);
  EXPECT_THAT(released[0].message(),
              AllOf(HasSubstr("shutting down"), HasSubstr("attempt not counted")));
  EXPECT_TRUE(OfType(outcome, "task_retried").empty());
  EXPECT_TRUE(OfType(outcome, "task_failed").empty());
  ExpectOnlyFirstAttempts(outcome, engine.victim_task());
  EXPECT_EQ(engine.victim_runs(), 2);
  ExpectCompleteResults(outcome);
}

// The same with memaudit-worker processes and a real SIGTERM (what
// Kubernetes sends a pod it evicts): the worker releases its task and exits
// 0, and a new worker process finishes the audit.
TEST_F(WorkerFaultTest, ASigtermedWorkerProcessReleasesItsTaskAndExitsCleanly) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  // Long enough to be mid-task when the signal lands.
  v1::AuditSpec spec = TinyMembershipSpec(/*models=*/4, /*epochs=*/200);
  spec.mutable_resources()->set_max_attempts(1);
  int exit_code = -1;
  const Outcome outcome = RunAudit(spec, [&](const v1::AuditEvent& e) {
    if (e.type() != v1::TASK_LEASED || exit_code != -1) return;
    cluster_->worker(0)->Signal(SIGTERM);
    exit_code = cluster_->worker(0)->Wait();
    MEMAUDIT_EXPECT_OK(cluster_->AddWorker());
  });

  EXPECT_EQ(outcome.audit.state(), v1::SUCCEEDED) << outcome.audit.error();
  EXPECT_EQ(exit_code, 0);
  const std::vector<v1::AuditEvent> released = OfType(outcome, "task_released");
  ASSERT_EQ(released.size(), 1u);
  EXPECT_THAT(released[0].message(), HasSubstr("shutting down"));
  EXPECT_TRUE(OfType(outcome, "task_retried").empty());
  ExpectOnlyFirstAttempts(outcome, released[0].task_id());
  ExpectCompleteResults(outcome);
}

// A task holding two devices of its worker (simulated: the CPU twice, Gloo
// between the ranks) trains each model data-parallel across them. A worker
// stopped mid-step (SIGTERM, a pod evicted) releases the task without an
// attempt spent, another worker trains it again, and the audit's numbers are
// an undisturbed run's bit for bit.
TEST_F(WorkerFaultTest, ADataParallelTaskStoppedMidStepCostsNoAttemptAndRepeatsBitForBit) {
  const std::vector<std::string> two = {"cpu", "cpu"};
  const v1::AuditSpec spec = DataParallelSpec();
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0, /*lease_ttl_ms=*/10000, "-baseline"));
  DevicesRecordingEngine undisturbed(/*hold_first=*/false);
  StartLoop(&undisturbed, two);
  const Outcome baseline = RunAudit(spec);
  ASSERT_EQ(baseline.audit.state(), v1::SUCCEEDED) << baseline.audit.error();
  auto baseline_results = client_->Report(baseline.audit.audit_id());
  MEMAUDIT_ASSERT_OK(baseline_results);
  for (const std::vector<std::string>& devices : undisturbed.runs()) EXPECT_EQ(devices, two);
  for (auto& l : loops_) l->Stop();
  loops_.clear();
  cluster_->Stop();

  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0, /*lease_ttl_ms=*/10000, "-stopped"));
  DevicesRecordingEngine engine(/*hold_first=*/true);
  InProcessWorker* first = StartLoop(&engine, two);
  const Outcome outcome = RunAudit(spec, [&](const v1::AuditEvent& e) {
    if (e.type() != v1::TASK_LEASED || loops_.size() > 1) return;
    ASSERT_TRUE(engine.training.WaitForNotificationWithTimeout(absl::Seconds(60)));
    first->Stop();
    StartLoop(&engine, two);
  });

  ASSERT_EQ(outcome.audit.state(), v1::SUCCEEDED) << outcome.audit.error();
  const std::vector<v1::AuditEvent> released = OfType(outcome, "task_released");
  ASSERT_EQ(released.size(), 1u);
  EXPECT_THAT(released[0].message(),
              AllOf(HasSubstr("shutting down"), HasSubstr("attempt not counted")));
  EXPECT_TRUE(OfType(outcome, "task_retried").empty());
  EXPECT_TRUE(OfType(outcome, "task_failed").empty());
  ExpectOnlyFirstAttempts(outcome, released[0].task_id());
  for (const std::vector<std::string>& devices : engine.runs()) EXPECT_EQ(devices, two);
  EXPECT_GT(engine.runs().size(), undisturbed.runs().size()) << "the stopped task ran again";
  auto results = client_->Report(outcome.audit.audit_id());
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_TRUE(results->complete());
  EXPECT_EQ(Numbers(*results), Numbers(*baseline_results));
}

// The scorer down while a task trains and when its signals are sent (a
// scorer pod rescheduled, rolled or drained) is waited out: the worker keeps
// its lease by heartbeating and streams again until the scorer is back, so
// the task is trained once, with no attempt spent and nothing released.
TEST_F(WorkerFaultTest, AScorerOutageIsWaitedOutWithoutRetrainingTheTask) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0));
  absl::Mutex mu;
  std::thread restarter;  // guarded by mu
  VictimEngine engine([&](const v1::Task& task, const worker::StepCallback& on_steps,
                          const worker::ObservationSink& send_early) {
    // The scorer crashes while the task trains and is back 10 s later,
    // longer than the lease TTL.
    cluster_->scorer()->Signal(SIGKILL);
    cluster_->scorer()->Wait();
    {
      absl::MutexLock lock(&mu);
      restarter = std::thread([this] {
        absl::SleepFor(absl::Seconds(10));
        MEMAUDIT_EXPECT_OK(cluster_->RestartScorer(SIGKILL));
      });
    }
    return worker::HandlerFor(task.spec().kind_case())->Run(task, on_steps, send_early);
  });
  StartLoop(&engine);
  v1::AuditSpec spec = TinyMembershipSpec();
  spec.mutable_resources()->set_max_attempts(1);
  const Outcome outcome = RunAudit(spec);
  {
    absl::MutexLock lock(&mu);
    if (restarter.joinable()) restarter.join();
  }

  EXPECT_EQ(outcome.audit.state(), v1::SUCCEEDED) << outcome.audit.error();
  EXPECT_TRUE(OfType(outcome, "task_released").empty());
  EXPECT_TRUE(OfType(outcome, "task_retried").empty());
  EXPECT_TRUE(OfType(outcome, "task_failed").empty());
  ExpectOnlyFirstAttempts(outcome, engine.victim_task());
  EXPECT_EQ(engine.victim_runs(), 1);
  ExpectCompleteResults(outcome);
}

// The coordinator down for longer than the lease TTL while a task trains
// (a crash, a reschedule) costs nothing: the worker trains on, reports
// Complete again until the restarted coordinator answers, and the restarted
// coordinator gives every held lease a TTL to be heard from.
TEST_F(WorkerFaultTest, ACoordinatorOutageLongerThanTheLeaseTtlCostsNothing) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0, /*lease_ttl_ms=*/10000));
  absl::Mutex mu;
  std::thread restarter;  // guarded by mu
  VictimEngine engine([&](const v1::Task& task, const worker::StepCallback& on_steps,
                          const worker::ObservationSink& send_early) {
    cluster_->coordinator()->Signal(SIGKILL);
    cluster_->coordinator()->Wait();
    {
      absl::MutexLock lock(&mu);
      restarter = std::thread([this] {
        absl::SleepFor(absl::Seconds(12));
        MEMAUDIT_EXPECT_OK(cluster_->RestartCoordinator(SIGKILL));
      });
    }
    return worker::HandlerFor(task.spec().kind_case())->Run(task, on_steps, send_early);
  });
  StartLoop(&engine);
  v1::AuditSpec spec = TinyMembershipSpec();
  spec.mutable_resources()->set_max_attempts(1);
  auto submitted = client_->Submit(spec);
  MEMAUDIT_ASSERT_OK(submitted);
  // A watch would end with the coordinator: wait for the restart, then follow.
  {
    absl::MutexLock lock(&mu);
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(
                                        +[](std::thread* t) { return t->joinable(); }, &restarter),
                                    absl::Seconds(120)))
        << "the victim never ran";
  }
  restarter.join();
  const Outcome outcome = Follow(submitted->audit_id());

  EXPECT_EQ(outcome.audit.state(), v1::SUCCEEDED) << outcome.audit.error();
  EXPECT_TRUE(OfType(outcome, "task_released").empty());
  EXPECT_TRUE(OfType(outcome, "task_retried").empty());
  ExpectOnlyFirstAttempts(outcome, engine.victim_task());
  EXPECT_EQ(engine.victim_runs(), 1);
  ExpectCompleteResults(outcome);
}

// A CUDA error other than out of memory may leave the process's CUDA
// context broken. The task is reported (an attempt spent: it may be the
// task's fault), then the worker leases nothing more and Run fails, which
// memaudit-worker turns into exit status 1 for its supervisor to restart it.
TEST_F(WorkerFaultTest, ACudaErrorIsReportedThenTheWorkerStopsLeasingWithAnError) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0));
  VictimEngine engine(
      [](const v1::Task&, const worker::StepCallback& on_steps,
         const worker::ObservationSink&) -> absl::StatusOr<std::vector<v1::Observation>> {
        on_steps(1, 16);
        throw std::runtime_error("CUDA error: an illegal memory access was encountered");
      });
  InProcessWorker* broken = StartLoop(&engine);
  expect_error_.insert(broken);
  v1::AuditSpec spec = TinyMembershipSpec();
  spec.mutable_resources()->set_max_attempts(2);
  auto submitted = client_->Submit(spec);
  MEMAUDIT_ASSERT_OK(submitted);

  ASSERT_TRUE(broken->WaitForReturn(absl::Seconds(60)));
  EXPECT_THAT(broken->result(),
              StatusIs(absl::StatusCode::kInternal,
                       AllOf(HasSubstr("stopped leasing"),
                             HasSubstr("CUDA error: an illegal memory access was encountered"))));
  // Reported before the worker stopped, and nothing else leased by it.
  auto audit = client_->Get(submitted->audit_id());
  MEMAUDIT_ASSERT_OK(audit);
  EXPECT_EQ(audit->state(), v1::RUNNING);
  EXPECT_EQ(audit->tasks().running(), 0u);
  EXPECT_EQ(audit->tasks().queued(), audit->tasks().total());

  // The restarted worker finishes the audit.
  StartLoop(&engine);
  const Outcome outcome = Follow(submitted->audit_id());
  EXPECT_EQ(outcome.audit.state(), v1::SUCCEEDED) << outcome.audit.error();
  const std::vector<v1::AuditEvent> retried = OfType(outcome, "task_retried", engine.victim_task());
  ASSERT_EQ(retried.size(), 1u);
  EXPECT_THAT(retried[0].message(), AllOf(HasSubstr("CUDA error: an illegal memory access"),
                                          HasSubstr("(attempt 1 of 2)")));
  EXPECT_EQ(engine.victim_runs(), 2);
  ExpectCompleteResults(outcome);
}

// A deterministic failure reported while the coordinator does not answer
// (SIGSTOP: a long pause, a partition) for longer than one report's
// deadline is reported again until it answers, within the lease: the audit
// fails at once, not after a lease expiry and a second attempt.
TEST_F(WorkerFaultTest, AFinalFailureIsReportedAgainUntilTheCoordinatorAnswers) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0, /*lease_ttl_ms=*/30000));
  absl::Mutex mu;
  std::thread resumer;  // guarded by mu
  VictimEngine engine(
      [&](const v1::Task&, const worker::StepCallback& on_steps,
          const worker::ObservationSink&) -> absl::StatusOr<std::vector<v1::Observation>> {
        on_steps(1, 16);
        const pid_t coordinator = cluster_->coordinator()->pid();
        kill(coordinator, SIGSTOP);
        {
          absl::MutexLock lock(&mu);
          resumer = std::thread([coordinator] {
            absl::SleepFor(absl::Seconds(12));
            kill(coordinator, SIGCONT);
          });
        }
        throw std::runtime_error(kFaultMessage);
      });
  StartLoop(&engine);
  v1::AuditSpec spec = TinyMembershipSpec();
  spec.mutable_resources()->set_max_attempts(3);
  const Outcome outcome = RunAudit(spec);
  {
    absl::MutexLock lock(&mu);
    if (resumer.joinable()) resumer.join();
  }

  EXPECT_EQ(outcome.audit.state(), v1::FAILED);
  EXPECT_THAT(outcome.audit.error(),
              AllOf(HasSubstr("task " + engine.victim_task() + " failed after 1 attempt(s)"),
                    HasSubstr(kFaultMessage)));
  EXPECT_TRUE(OfType(outcome, "task_retried").empty());
  EXPECT_EQ(engine.victim_runs(), 1);
}

}  // namespace
}  // namespace memaudit::testing
