#include "services/worker/worker_metrics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::worker {
namespace {

using ::testing::HasSubstr;

TEST(WorkerMetricsTest, CountsStepsAndMeasuresThroughputFromTheFirstStep) {
  FakeClock clock;
  metrics::Registry registry;
  WorkerMetrics metrics(&clock, &registry);
  // Every series exists before any work, at 0.
  EXPECT_THAT(registry.Serialize(),
              HasSubstr("memaudit_worker_tasks_total{outcome=\"failed\"} 0\n"));

  metrics.TaskStarted();
  clock.AdvanceMs(5000);  // loading data: not training time
  metrics.Progress({1, 16});
  clock.AdvanceMs(2000);
  metrics.Progress({21, 336});
  clock.AdvanceMs(500);
  metrics.TaskEnded("succeeded");

  const std::string text = registry.Serialize();
  EXPECT_THAT(text, HasSubstr("memaudit_worker_training_steps_total 21\n"));
  EXPECT_THAT(text, HasSubstr("memaudit_worker_training_examples_total 336\n"));
  EXPECT_THAT(text, HasSubstr("memaudit_worker_training_steps_per_second 10\n"));
  EXPECT_THAT(text, HasSubstr("memaudit_worker_training_examples_per_second 160\n"));
  EXPECT_THAT(text, HasSubstr("memaudit_worker_tasks_total{outcome=\"succeeded\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("memaudit_worker_task_duration_seconds_sum{outcome=\"succeeded\"} 7.5\n"));

  // A second task adds to the counters from its own zero.
  metrics.TaskStarted();
  metrics.Progress({1, 16});
  clock.AdvanceMs(1000);
  metrics.Progress({5, 80});
  metrics.TaskEnded("stopped");
  const std::string after = registry.Serialize();
  EXPECT_THAT(after, HasSubstr("memaudit_worker_training_steps_total 26\n"));
  EXPECT_THAT(after, HasSubstr("memaudit_worker_training_steps_per_second 4\n"));
  EXPECT_THAT(after, HasSubstr("memaudit_worker_tasks_total{outcome=\"stopped\"} 1\n"));
}

TEST(WorkerMetricsTest, WithoutARegistryEveryCallIsANoOp) {
  FakeClock clock;
  WorkerMetrics metrics(&clock, nullptr);
  metrics.TaskStarted();
  metrics.Progress({1, 1});
  metrics.TaskEnded("failed");
}

}  // namespace
}  // namespace memaudit::worker
