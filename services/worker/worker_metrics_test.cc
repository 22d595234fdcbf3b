#include "services/worker/worker_metrics.h"

#include <pthread.h>

#include <cerrno>

#include "common/metrics/metrics_endpoint.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::worker {
namespace {

using ::testing::HasSubstr;

TEST(WorkerMetricsTest, CountsStepsAndMeasuresThroughputFromTheFirstStep) {
  FakeClock clock;
  prometheus::Registry registry;
  WorkerMetrics metrics(&clock, &registry);
  // Every series exists before any work, at 0.
  EXPECT_THAT(metrics::Exposition(registry),
              HasSubstr("memaudit_worker_tasks_total{outcome=\"failed\"} 0\n"));

  WorkerMetrics::Task task1 = metrics.TaskStarted();
  clock.AdvanceMs(5000);  // loading data: not training time
  task1.Progress({1, 16});
  clock.AdvanceMs(2000);
  task1.Progress({21, 336});
  clock.AdvanceMs(500);
  task1.Ended("succeeded");

  const std::string text = metrics::Exposition(registry);
  EXPECT_THAT(text, HasSubstr("memaudit_worker_training_steps_total 21\n"));
  EXPECT_THAT(text, HasSubstr("memaudit_worker_training_examples_total 336\n"));
  EXPECT_THAT(text, HasSubstr("memaudit_worker_training_steps_per_second 10\n"));
  EXPECT_THAT(text, HasSubstr("memaudit_worker_training_examples_per_second 160\n"));
  EXPECT_THAT(text, HasSubstr("memaudit_worker_tasks_total{outcome=\"succeeded\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("memaudit_worker_task_duration_seconds_sum{outcome=\"succeeded\"} 7.5\n"));

  // A second task adds to the counters from its own zero.
  WorkerMetrics::Task task2 = metrics.TaskStarted();
  task2.Progress({1, 16});
  clock.AdvanceMs(1000);
  task2.Progress({5, 80});
  task2.Ended("stopped");
  const std::string after = metrics::Exposition(registry);
  EXPECT_THAT(after, HasSubstr("memaudit_worker_training_steps_total 26\n"));
  EXPECT_THAT(after, HasSubstr("memaudit_worker_training_steps_per_second 4\n"));
  EXPECT_THAT(after, HasSubstr("memaudit_worker_tasks_total{outcome=\"stopped\"} 1\n"));
}

TEST(WorkerMetricsTest, WithoutARegistryEveryCallIsANoOp) {
  FakeClock clock;
  WorkerMetrics metrics(&clock, nullptr);
  WorkerMetrics::Task task3 = metrics.TaskStarted();
  task3.Progress({1, 1});
  task3.Ended("failed");
}

// This binary loads LibTorch, as the worker does. Its static TLS leaves no
// room in the 100 KiB stacks Debian's civetweb asks for; if this ever stops
// failing, common/metrics/civetweb_thread_stacks.* can go.
TEST(WorkerMetricsEndpointTest, LibTorchLeavesNoRoomInCivetwebsStacks) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 102400);
  pthread_t thread;
  const int created = pthread_create(
      &thread, &attr, [](void*) -> void* { return nullptr; }, nullptr);
  if (created == 0) pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  EXPECT_EQ(created, EINVAL);
}

TEST(WorkerMetricsEndpointTest, StartsNextToLibTorch) {
  prometheus::Registry registry;
  WorkerMetrics metrics(RealClock::Get(), &registry);
  auto endpoint = MetricsEndpoint::Start(&registry, "127.0.0.1", 0);
  MEMAUDIT_ASSERT_OK(endpoint);
  EXPECT_GT((*endpoint)->port(), 0);
}

}  // namespace
}  // namespace memaudit::worker
