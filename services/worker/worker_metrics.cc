#include "services/worker/worker_metrics.h"

#include <vector>

namespace memaudit::worker {
namespace {

constexpr char kTasks[] = "memaudit_worker_tasks_total";
constexpr char kTaskDuration[] = "memaudit_worker_task_duration_seconds";
constexpr char kSteps[] = "memaudit_worker_training_steps_total";
constexpr char kExamples[] = "memaudit_worker_training_examples_total";
constexpr char kStepRate[] = "memaudit_worker_training_steps_per_second";
constexpr char kExampleRate[] = "memaudit_worker_training_examples_per_second";

// Same range as the coordinator's task durations, so the two compare.
const prometheus::Histogram::BucketBoundaries& DurationBuckets() {
  static const prometheus::Histogram::BucketBoundaries buckets = {
      0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400};
  return buckets;
}

}  // namespace

WorkerMetrics::WorkerMetrics(const Clock* clock, prometheus::Registry* registry) : clock_(clock) {
  if (registry == nullptr) return;
  tasks_ = &metrics::AddCounter(*registry, kTasks, "Tasks this worker finished, by outcome.");
  // Every series exists from the start at 0, so rate() and dashboards see it
  // before the first task ends.
  for (const char* outcome : {"succeeded", "failed", "released", "stopped"})
    tasks_->Add({{"outcome", outcome}});
  durations_ = &metrics::AddHistogram(
      *registry, kTaskDuration, "Time from receiving a lease to reporting its end, by outcome.");
  steps_ =
      &metrics::AddCounter(*registry, kSteps, "Optimizer steps taken, over all tasks.").Add({});
  examples_ =
      &metrics::AddCounter(*registry, kExamples, "Training examples processed, over all tasks.")
           .Add({});
  step_rate_ = &metrics::AddGauge(*registry, kStepRate,
                                  "Optimizer steps per second in the current or last task.")
                    .Add({});
  example_rate_ = &metrics::AddGauge(*registry, kExampleRate,
                                     "Training examples per second in the current or last task.")
                       .Add({});
}

void WorkerMetrics::Task::Progress(const TrainingProgress& progress) {
  const WorkerMetrics& m = *metrics_;
  if (m.steps_ == nullptr) return;
  const int64_t now = m.clock_->NowMs();
  if (progress.steps > last_.steps) m.steps_->Increment(progress.steps - last_.steps);
  if (progress.examples > last_.examples)
    m.examples_->Increment(progress.examples - last_.examples);
  last_ = progress;
  if (!have_first_step_) {
    have_first_step_ = true;
    first_step_ms_ = now;
    first_step_ = progress;
    return;
  }
  if (now <= first_step_ms_) return;  // too soon to measure with a ms clock
  const double seconds = static_cast<double>(now - first_step_ms_) / 1000.0;
  m.step_rate_->Set(static_cast<double>(progress.steps - first_step_.steps) / seconds);
  m.example_rate_->Set(static_cast<double>(progress.examples - first_step_.examples) / seconds);
}

void WorkerMetrics::Task::Ended(const char* outcome) {
  const WorkerMetrics& m = *metrics_;
  if (m.tasks_ == nullptr) return;
  const prometheus::Labels labels = {{"outcome", outcome}};
  m.tasks_->Add(labels).Increment();
  m.durations_->Add(labels, DurationBuckets())
      .Observe(static_cast<double>(m.clock_->NowMs() - start_ms_) / 1000.0);
}

}  // namespace memaudit::worker
