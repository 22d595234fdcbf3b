// The worker's Prometheus families:
//
//   memaudit_worker_tasks_total{outcome}                   counter
//   memaudit_worker_task_duration_seconds{outcome}         histogram
//   memaudit_worker_training_steps_total                   counter
//   memaudit_worker_training_examples_total                counter
//   memaudit_worker_training_steps_per_second              gauge
//   memaudit_worker_training_examples_per_second           gauge
//
// outcome is "succeeded" (completed and acknowledged), "failed" (reported
// as failed: the task's own failure), "released" (handed back without
// counting an attempt: shutdown, the scorer or coordinator unreachable) or
// "stopped" (the coordinator took the lease back or the audit was
// cancelled). The throughput gauges are the average over a task's training
// so far (the task that reported last, when several run at once), timed
// from its first step so that data loading does not count as training time.
#ifndef MEMAUDIT_SERVICES_WORKER_WORKER_METRICS_H_
#define MEMAUDIT_SERVICES_WORKER_WORKER_METRICS_H_

#include <cstdint>

#include "common/base/clock.h"
#include "common/metrics/metrics.h"
#include "services/worker/task_runner.h"

namespace memaudit::worker {

class WorkerMetrics {
 public:
  // One task's share: made when its lease arrives, used by that task's
  // thread only (tasks run concurrently; the families are thread-safe).
  class Task {
   public:
    // `progress` is cumulative within the task.
    void Progress(const TrainingProgress& progress);
    // `outcome`: see above.
    void Ended(const char* outcome);

   private:
    friend class WorkerMetrics;
    Task(const WorkerMetrics* metrics, int64_t start_ms) : metrics_(metrics), start_ms_(start_ms) {}
    const WorkerMetrics* metrics_;
    int64_t start_ms_;
    // The first step seen in this task, the baseline for throughput.
    bool have_first_step_ = false;
    int64_t first_step_ms_ = 0;
    TrainingProgress first_step_;
    TrainingProgress last_;
  };

  // `registry` may be null: every call is then a no-op.
  WorkerMetrics(const Clock* clock, prometheus::Registry* registry);

  Task TaskStarted() const { return Task(this, clock_->NowMs()); }

 private:
  const Clock* const clock_;
  // All null without a registry. Held so a training step costs no lookups.
  prometheus::Family<prometheus::Counter>* tasks_ = nullptr;
  prometheus::Family<prometheus::Histogram>* durations_ = nullptr;
  prometheus::Counter* steps_ = nullptr;
  prometheus::Counter* examples_ = nullptr;
  prometheus::Gauge* step_rate_ = nullptr;
  prometheus::Gauge* example_rate_ = nullptr;
};

}  // namespace memaudit::worker

#endif  // MEMAUDIT_SERVICES_WORKER_WORKER_METRICS_H_
