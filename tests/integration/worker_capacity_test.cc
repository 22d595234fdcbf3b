// What a worker takes and for how long it lives, against a real coordinator
// and scorer (child processes) with in-process worker loops: tasks run at
// once as far as the worker's threads allow, with numbers identical to one
// at a time; a task is leased only to a worker it fits (threads, GPU or
// CPU); a batch worker exits when idle or after --max-tasks; and a worker
// waits for a coordinator that is not there yet instead of giving up.
#include <algorithm>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "services/worker/device_pool.h"
#include "services/worker/kind_handler.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/in_process_worker.h"
#include "tests/integration/tiny_specs.h"

namespace memaudit::testing {
namespace {

// The real handlers, counting how many tasks run at once and recording which
// devices (worker::TaskDeviceSlots) each held and whether two tasks running
// at once ever shared one.
class RecordingEngine : public worker::KindHandler {
 public:
  absl::StatusOr<std::vector<v1::Observation>> Run(
      const v1::Task& task, const worker::StepCallback& on_steps,
      const worker::ObservationSink& send_early) const override {
    const std::vector<size_t> slots = worker::TaskDeviceSlots();
    {
      absl::MutexLock lock(&mu_);
      for (size_t slot : slots) {
        seen_.insert(slot);
        shared_ = shared_ || !held_.insert(slot).second;
      }
      ++running_;
      most_ = std::max(most_, running_);
    }
    auto out = worker::HandlerFor(task.spec().kind_case())->Run(task, on_steps, send_early);
    absl::MutexLock lock(&mu_);
    for (size_t slot : slots) held_.erase(slot);
    --running_;
    return out;
  }

  int most_at_once() const {
    absl::MutexLock lock(&mu_);
    return most_;
  }
  std::set<size_t> seen() const {
    absl::MutexLock lock(&mu_);
    return seen_;
  }
  bool shared() const {
    absl::MutexLock lock(&mu_);
    return shared_;
  }

 private:
  mutable absl::Mutex mu_;
  mutable int running_ ABSL_GUARDED_BY(mu_) = 0;
  mutable int most_ ABSL_GUARDED_BY(mu_) = 0;
  mutable std::set<size_t> held_ ABSL_GUARDED_BY(mu_);
  mutable std::set<size_t> seen_ ABSL_GUARDED_BY(mu_);
  mutable bool shared_ ABSL_GUARDED_BY(mu_) = false;
};

// Four models, one per task.
v1::AuditSpec FourTaskSpec() {
  v1::AuditSpec spec = TinyMembershipSpec(/*models=*/4, /*epochs=*/3);
  spec.mutable_resources()->set_models_per_task(1);
  return spec;
}

class WorkerCapacityTest : public ClusterTest {
 protected:
  worker::WorkerOptions Options(uint32_t threads) const {
    worker::WorkerOptions options;
    options.coordinator = cluster_->coordinator_address();
    options.credentials = cluster_->worker_credentials();
    options.lease_wait_ms = 200;
    options.threads = threads;
    return options;
  }

  // The audit's snapshot once `done` holds or `timeout` passes.
  v1::Audit PollUntil(const std::string& audit_id, absl::Duration timeout,
                      const std::function<bool(const v1::Audit&)>& done) {
    const absl::Time end = absl::Now() + timeout;
    v1::Audit audit;
    while (absl::Now() < end) {
      auto got = client_->Get(audit_id);
      if (got.ok()) {
        audit = *got;
        if (done(audit)) break;
      }
      absl::SleepFor(absl::Milliseconds(200));
    }
    return audit;
  }
};

TEST_F(WorkerCapacityTest, TasksRunAtOnceWithinTheThreadsWithTheNumbersOfOneAtATime) {
  const v1::AuditSpec spec = FourTaskSpec();
  ASSERT_NO_FATAL_FAILURE(RunBaseline(spec));  // one single-threaded worker process
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0));
  RecordingEngine engine;
  InProcessWorker worker(Options(/*threads=*/2), &engine);
  Finished finished;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &finished));
  EXPECT_EQ(engine.most_at_once(), 2);
  EXPECT_EQ(Numbers(finished.results), Numbers(baseline_));
}

// A worker offering two devices (simulated: the CPU twice) runs a GPU task
// on each at once, each on its own.
TEST_F(WorkerCapacityTest, AWorkerOfferingTwoDevicesRunsATaskOnEachAtOnce) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0));
  v1::AuditSpec spec = FourTaskSpec();
  spec.mutable_resources()->set_gpus_per_task(1);
  RecordingEngine engine;
  worker::WorkerOptions options = Options(/*threads=*/4);
  options.devices = {"cpu", "cpu"};
  options.gpus = 2;
  InProcessWorker worker(options, &engine);
  Finished finished;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &finished));
  EXPECT_EQ(engine.most_at_once(), 2) << "two GPUs, two tasks at once (threads allow 4)";
  EXPECT_EQ(engine.seen(), (std::set<size_t>{0, 1}));
  EXPECT_FALSE(engine.shared()) << "two tasks at once on one device";
}

TEST_F(WorkerCapacityTest, ATaskWaitsForAWorkerItFits) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0));
  v1::AuditSpec two_threads = FourTaskSpec();
  two_threads.mutable_resources()->set_threads_per_task(2);
  v1::AuditSpec gpu = FourTaskSpec();
  gpu.mutable_resources()->set_gpus_per_task(1);
  v1::AuditSpec big = FourTaskSpec();
  big.mutable_resources()->set_memory_mb_per_task(64);
  auto needs_two = client_->Submit(two_threads);
  auto needs_gpu = client_->Submit(gpu);
  auto needs_memory = client_->Submit(big);
  MEMAUDIT_ASSERT_OK(needs_two);
  MEMAUDIT_ASSERT_OK(needs_gpu);
  MEMAUDIT_ASSERT_OK(needs_memory);

  // One thread, no GPU, 32 MiB: none of the three fits.
  worker::WorkerOptions small = Options(/*threads=*/1);
  small.memory_mb = 32;
  auto first = std::make_unique<InProcessWorker>(small, nullptr);
  absl::SleepFor(absl::Seconds(3));
  for (const auto* id :
       {&needs_two->audit_id(), &needs_gpu->audit_id(), &needs_memory->audit_id()}) {
    auto audit = client_->Get(*id);
    MEMAUDIT_ASSERT_OK(audit);
    EXPECT_EQ(audit->state(), v1::QUEUED) << *id;
    EXPECT_EQ(audit->tasks().queued(), audit->tasks().total()) << *id;
  }
  first.reset();

  // Two threads and 1 GiB: the CPU audits run; the GPU one waits on.
  worker::WorkerOptions larger = Options(/*threads=*/2);
  larger.memory_mb = 1024;
  InProcessWorker second(larger, nullptr);
  EXPECT_EQ(WaitForEnd(needs_two->audit_id()).state(), v1::SUCCEEDED);
  EXPECT_EQ(WaitForEnd(needs_memory->audit_id()).state(), v1::SUCCEEDED);
  auto waiting = client_->Get(needs_gpu->audit_id());
  MEMAUDIT_ASSERT_OK(waiting);
  EXPECT_EQ(waiting->state(), v1::QUEUED);
}

TEST_F(WorkerCapacityTest, ABatchWorkerExitsOnceIdle) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0));
  auto submitted = client_->Submit(TinyMembershipSpec());
  MEMAUDIT_ASSERT_OK(submitted);
  worker::WorkerOptions options = Options(/*threads=*/1);
  options.exit_when_idle = absl::Seconds(2);
  InProcessWorker worker(options, nullptr);
  EXPECT_EQ(WaitForEnd(submitted->audit_id()).state(), v1::SUCCEEDED);
  ASSERT_TRUE(worker.WaitForReturn(absl::Seconds(30)));
  MEMAUDIT_EXPECT_OK(worker.result());
}

TEST_F(WorkerCapacityTest, MaxTasksEndsTheWorkerAfterThatMany) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0));
  auto submitted = client_->Submit(FourTaskSpec());
  MEMAUDIT_ASSERT_OK(submitted);
  worker::WorkerOptions options = Options(/*threads=*/1);
  options.max_tasks = 1;
  {
    InProcessWorker worker(options, nullptr);
    ASSERT_TRUE(worker.WaitForReturn(absl::Seconds(120)));
    MEMAUDIT_EXPECT_OK(worker.result());
  }
  const v1::Audit after_one =
      PollUntil(submitted->audit_id(), absl::Seconds(5),
                [](const v1::Audit& a) { return a.tasks().running() == 0; });
  EXPECT_EQ(after_one.tasks().succeeded(), 1u);
  EXPECT_EQ(after_one.tasks().queued(), 3u);
  // Another finishes the audit.
  InProcessWorker next(Options(/*threads=*/1), nullptr);
  EXPECT_EQ(WaitForEnd(submitted->audit_id()).state(), v1::SUCCEEDED);
}

TEST_F(WorkerCapacityTest, AWorkerWaitsForACoordinatorThatIsNotThereYet) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0));
  // Nothing listens on port 1: Register fails over and over.
  worker::WorkerOptions options = Options(/*threads=*/1);
  options.coordinator = "127.0.0.1:1";
  options.max_register_backoff = absl::Milliseconds(500);
  InProcessWorker worker(options, nullptr);
  EXPECT_FALSE(worker.WaitForReturn(absl::Seconds(8)));  // 60 tries used to end by now
  const absl::Time stop = absl::Now();
  worker.Stop();
  EXPECT_LT(absl::Now() - stop, absl::Seconds(3));
  MEMAUDIT_EXPECT_OK(worker.result());
}

}  // namespace
}  // namespace memaudit::testing
