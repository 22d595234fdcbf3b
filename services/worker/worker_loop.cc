#include "services/worker/worker_loop.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/base/clock.h"
#include "common/base/sqlite.h"
#include "common/messages/task_fit.h"
#include "common/rpc/status_grpc.h"
#include "services/worker/device_pool.h"
#include "services/worker/engine_access.h"
#include "services/worker/failure_kind.h"
#include "services/worker/task_runner.h"

namespace memaudit::worker {
namespace {

// How long a stopping worker waits for Leave's answer.
constexpr int kLeaveDeadlineMs = 1000;

std::shared_ptr<grpc::Channel> Channel(const std::string& address,
                                       const ClientCredentials& credentials) {
  grpc::ChannelArguments args;
  // After an outage the channel reconnects within 5 s of the service being
  // back, not after gRPC's default backoff of up to 120 s: the retries of a
  // stream or a report (a few seconds apart) would otherwise fail fast
  // against a channel still waiting to reconnect.
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  auto channel = MakeChannel(address, credentials, args);
  if (!channel.ok()) {
    // main checked the files at start: they have gone since.
    spdlog::critical("{}", channel.status().ToString());
    std::_Exit(1);
  }
  return *std::move(channel);
}

void Deadline(grpc::ClientContext* ctx, int ms) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(ms));
}

std::string Hostname() {
  char name[256] = {0};
  gethostname(name, sizeof(name) - 1);
  return name;
}

}  // namespace

class WorkerLoop::StoppableCall {
 public:
  StoppableCall(WorkerLoop* loop, grpc::ClientContext* ctx) : loop_(loop), ctx_(ctx) {
    absl::MutexLock lock(&loop_->mu_);
    // Stop() has run its cancellations already: this call ends at once
    // (a context cancelled before its call starts cancels the call).
    if (loop_->stopping_) ctx_->TryCancel();
    loop_->stoppable_calls_.insert(ctx_);
  }
  ~StoppableCall() {
    absl::MutexLock lock(&loop_->mu_);
    loop_->stoppable_calls_.erase(ctx_);
  }
  StoppableCall(const StoppableCall&) = delete;
  StoppableCall& operator=(const StoppableCall&) = delete;

 private:
  WorkerLoop* const loop_;
  grpc::ClientContext* const ctx_;
};

namespace {

// A task's thread trains on its devices (a model of a task needing several
// GPUs trains data-parallel across them, engine/data_parallel.h).
void PinThreadToDevices(const std::string& task_id, const std::vector<std::string>& devices) {
  if (devices.empty()) return;
  if (absl::Status s = Engine().set_thread_devices(devices); !s.ok()) {
    spdlog::error("task {}: {}", task_id, s.ToString());
    return;
  }
  spdlog::info("task {}: on {}", task_id, absl::StrJoin(devices, ", "));
}

}  // namespace

// A task on its thread. `done` is set (under WorkerLoop::mu_) as its
// thread's last act, so Reap may join it.
struct WorkerLoop::RunningTask {
  TaskNeeds needs;
  std::vector<size_t> device_slots;  // the GPUs it holds: indices into devices
  bool done = false;
  std::thread thread;
};

WorkerLoop::WorkerLoop(WorkerOptions options, prometheus::Registry* metrics, HandlerLookup handlers)
    : options_(std::move(options)),
      handlers_(std::move(handlers)),
      coordinator_(v1::WorkerService::NewStub(Channel(options_.coordinator, options_.credentials))),
      metrics_(RealClock::Get(), metrics) {
  offer_.set_threads(options_.threads);
  offer_.set_gpus(options_.gpus);
  offer_.set_memory_mb(options_.memory_mb);
  offer_.set_hostname(Hostname());
  offer_.set_numeric_class(options_.numeric_class);
}

WorkerLoop::~WorkerLoop() {
  Stop();
  Reap(/*all=*/true);
}

void WorkerLoop::Stop() {
  stopping_ = true;
  absl::MutexLock lock(&mu_);
  // An idle worker waits in a Lease long-poll (lease_wait_ms): it ends now,
  // not when the coordinator answers.
  for (grpc::ClientContext* ctx : stoppable_calls_) ctx->TryCancel();
  // Wakes Run's wait for a free thread and every PauseUnlessStopping (their
  // conditions are evaluated again as `mu_` is released).
  changed_.SignalAll();
}

absl::Status WorkerLoop::Register() {
  v1::RegisterRequest req;
  *req.mutable_capabilities() = offer_;
  // The coordinator may be starting, restarting or rescheduled: a worker
  // waits for it however long that takes, rather than exiting into a
  // restart loop.
  absl::Duration backoff = absl::Milliseconds(500);
  for (int attempt = 1; !stopping_; ++attempt) {
    v1::RegisterResponse resp;
    grpc::ClientContext ctx;
    Deadline(&ctx, 2000);
    ctx.set_wait_for_ready(true);
    grpc::Status status;
    {
      StoppableCall stoppable(this, &ctx);
      status = coordinator_->Register(&ctx, req, &resp);
    }
    if (!status.ok() && stopping_) break;
    if (status.ok()) {
      worker_id_ = resp.worker_id();
      heartbeat_ms_ = resp.heartbeat_interval_ms() > 0 ? resp.heartbeat_interval_ms() : 1000;
      if (heartbeats_ == nullptr) {
        heartbeats_ = std::make_unique<Heartbeats>(
            absl::Milliseconds(heartbeat_ms_),
            [this](const v1::HeartbeatRequest& req, v1::HeartbeatResponse* out) {
              grpc::ClientContext ctx;
              Deadline(&ctx, 5000);
              return coordinator_->Heartbeat(&ctx, req, out);
            });
      }
      scorer_ = v1::ScorerService::NewStub(Channel(resp.scorer_address(), options_.credentials));
      spdlog::info("registered as {}; scorer at {}", worker_id_, resp.scorer_address());
      return absl::OkStatus();
    }
    if (status.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
        status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      // No retry makes these credentials a worker's.
      return absl::Status(FromGrpc(status).code(),
                          absl::StrCat("register: ", status.error_message()));
    }
    spdlog::warn("register (attempt {}): {} (retrying in {})", attempt, status.error_message(),
                 absl::FormatDuration(backoff));
    PauseUnlessStopping(backoff);
    backoff = std::min(backoff * 2, options_.max_register_backoff);
  }
  return absl::OkStatus();
}

v1::WorkerCapabilities WorkerLoop::Free() const {
  v1::WorkerCapabilities free = offer_;
  free.clear_hostname();
  absl::MutexLock lock(&mu_);
  for (const auto& [id, task] : running_) {
    if (!task->done) Reserve(task->needs, &free);
  }
  return free;
}

void WorkerLoop::Start(v1::LeaseResponse lease) {
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_task_++;
  auto task = std::make_unique<RunningTask>();
  task->needs = NeedsOf(lease.task().spec().resources());
  std::vector<size_t> held;
  for (const auto& [other_id, other] : running_) {
    if (!other->done) {
      held.insert(held.end(), other->device_slots.begin(), other->device_slots.end());
    }
  }
  task->device_slots = PickDevices(options_.devices.size(), held, task->needs.gpus);
  // Leased against Free(), which counts the same tasks: never short.
  if (task->device_slots.size() < task->needs.gpus && !options_.devices.empty()) {
    spdlog::error("task {}: {} GPU(s) free of the {} it needs", lease.task().task_id(),
                  task->device_slots.size(), task->needs.gpus);
  }
  std::vector<std::string> devices;
  for (size_t slot : task->device_slots) devices.push_back(options_.devices[slot]);
  RunningTask* raw = task.get();
  running_[id] = std::move(task);
  raw->thread = std::thread([this, raw, devices, lease = std::move(lease)] {
    SetTaskDeviceSlots(raw->device_slots);
    PinThreadToDevices(lease.task().task_id(), devices);
    WorkerMetrics::Task meter = metrics_.TaskStarted();
    meter.Ended(RunOneNoThrow(lease, &meter));
    absl::MutexLock done_lock(&mu_);
    raw->done = true;
    last_busy_ = absl::Now();
    changed_.SignalAll();
  });
}

void WorkerLoop::Reap(bool all) {
  std::vector<std::unique_ptr<RunningTask>> ended;
  {
    absl::MutexLock lock(&mu_);
    if (all) {
      mu_.Await(absl::Condition(
          +[](std::map<uint64_t, std::unique_ptr<RunningTask>>* running) {
            for (const auto& [id, task] : *running) {
              if (!task->done) return false;
            }
            return true;
          },
          &running_));
    }
    for (auto it = running_.begin(); it != running_.end();) {
      if (it->second->done) {
        ended.push_back(std::move(it->second));
        it = running_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& task : ended) task->thread.join();  // never under mu_: it takes mu_ to end
}

void WorkerLoop::Leave() {
  v1::LeaveRequest req;
  req.set_worker_id(worker_id_);
  v1::LeaveResponse resp;
  grpc::ClientContext ctx;
  // Shutting down: a coordinator out of reach costs this wait at most, and
  // the lease then expires as if the worker had crashed.
  Deadline(&ctx, kLeaveDeadlineMs);
  const grpc::Status status = coordinator_->Leave(&ctx, req, &resp);
  if (!status.ok()) {
    spdlog::warn("leave: {} (any lease still held expires)", status.error_message());
  } else if (resp.released() > 0) {
    spdlog::info("leave: {} lease(s) granted as the worker stopped given back", resp.released());
  }
}

absl::Status WorkerLoop::Run() {
  if (absl::Status s = Register(); !s.ok()) return s;
  {
    absl::MutexLock lock(&mu_);
    last_busy_ = absl::Now();
  }
  uint32_t leased = 0;
  bool lease_cut_short = false;
  while (!stopping_) {
    Reap(/*all=*/false);
    {
      absl::MutexLock lock(&mu_);
      if (!device_error_.ok()) break;
    }
    if (options_.max_tasks > 0 && leased >= options_.max_tasks) {
      spdlog::info("leased {} task(s) (--max-tasks): finishing them, then exiting", leased);
      break;
    }
    const v1::WorkerCapabilities free = Free();
    if (free.threads() == 0) {
      // Every thread is busy: wait for a task to end.
      absl::MutexLock lock(&mu_);
      changed_.WaitWithTimeout(&mu_, absl::Seconds(1));
      continue;
    }
    v1::LeaseRequest req;
    req.set_worker_id(worker_id_);
    req.set_wait_ms(options_.lease_wait_ms);
    *req.mutable_capabilities() = offer_;
    *req.mutable_free() = free;
    v1::LeaseResponse resp;
    grpc::ClientContext ctx;
    Deadline(&ctx, static_cast<int>(options_.lease_wait_ms) + 5000);
    grpc::Status status;
    {
      StoppableCall stoppable(this, &ctx);
      status = coordinator_->Lease(&ctx, req, &resp);
    }
    // Cancelled by Stop(). A task granted just before still starts, and
    // is released at once (its training checks `stopping_`); one granted as
    // the call was cancelled is given back by Leave below.
    if (!status.ok() && stopping_) {
      lease_cut_short = true;
      break;
    }
    if (status.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
      // The coordinator no longer takes this worker id (its capability key
      // changed): register again, which fails if this worker may not lease.
      spdlog::warn("lease: {} (registering again)", status.error_message());
      if (absl::Status s = Register(); !s.ok()) return s;
      continue;
    }
    if (!status.ok()) {
      spdlog::warn("lease: {}", status.error_message());
      {
        absl::MutexLock lock(&mu_);
        last_busy_ = absl::Now();  // an outage is not idleness
      }
      PauseUnlessStopping(absl::Milliseconds(500));
      continue;
    }
    if (resp.has_task()) {
      ++leased;
      {
        absl::MutexLock lock(&mu_);
        last_busy_ = absl::Now();
      }
      Start(std::move(resp));
      continue;
    }
    if (options_.exit_when_idle > absl::ZeroDuration()) {
      absl::MutexLock lock(&mu_);
      if (running_.empty() && absl::Now() - last_busy_ >= options_.exit_when_idle) {
        spdlog::info("no task for {} (--exit-when-idle): exiting",
                     absl::FormatDuration(options_.exit_when_idle));
        break;
      }
    }
  }
  Reap(/*all=*/true);
  if (lease_cut_short) Leave();
  absl::MutexLock lock(&mu_);
  if (!device_error_.ok()) {
    // The task is reported (and retried elsewhere); this process's CUDA
    // context may fail every task it takes from now on.
    return absl::InternalError(
        absl::StrCat("stopped leasing after a CUDA error, which can leave the process's CUDA "
                     "context unusable; exiting so that a fresh process takes over: ",
                     device_error_.message()));
  }
  return absl::OkStatus();
}

const char* WorkerLoop::RunOneNoThrow(const v1::LeaseResponse& lease, WorkerMetrics::Task* meter) {
  try {
    return RunOne(lease, meter);
  } catch (...) {
    const absl::Status status =
        StatusOfCurrentException(absl::StrCat("worker running task ", lease.task().task_id()));
    try {
      // No heartbeat runs now: try while the coordinator may still hold it.
      return ReportFailure(lease, status, [] { return true; });
    } catch (...) {
      // Unreported, the lease expires and the coordinator retries the task.
      spdlog::error("task {}: could not report {}", lease.task().task_id(), status.ToString());
    }
    return "failed";
  }
}

const char* WorkerLoop::RunOne(const v1::LeaseResponse& lease, WorkerMetrics::Task* meter) {
  const v1::Task& task = lease.task();
  spdlog::info("task {} (attempt {}): training", task.task_id(), task.attempt());
  std::atomic<uint64_t> steps{0};
  StopOrder stop;
  const std::function<bool()> lease_held = [&stop] { return !stop.given; };
  // The heartbeat runs until the task's end is reported: through training,
  // streaming and Complete, so that waiting out a scorer or coordinator
  // outage never costs the lease while the coordinator can be reached. One
  // call beats every task of this worker (heartbeats.h).
  Heartbeats::Lease beating(heartbeats_.get(), worker_id_, lease.lease_id(), &steps, &stop);
  // Never throws (task_runner.h): the engine's exceptions are statuses here.
  absl::StatusOr<std::vector<v1::Observation>> observations = RunTask(
      handlers_, options_.data_roots, task,
      [&](const TrainingProgress& progress) {
        steps = progress.steps;
        meter->Progress(progress);
        return !stop.given && !stopping_;
      },
      [&](const std::vector<v1::Observation>& early) {
        return StreamToScorer(early, lease.capability(), lease_held);
      });
  const absl::Status outcome =
      observations.ok() && !stop.given
          ? StreamToScorer(*std::move(observations), lease.capability(), lease_held)
          : observations.status();
  if (stop.given) {
    absl::MutexLock lock(&stop.mu);
    spdlog::info("task {}: stopped by coordinator ({})", task.task_id(), stop.reason);
    return "stopped";
  }
  if (!outcome.ok()) return ReportFailure(lease, outcome, lease_held);
  v1::CompleteRequest req;
  req.set_worker_id(worker_id_);
  req.set_lease_id(lease.lease_id());
  req.set_numeric_environment(TrainingEnvironment());
  const absl::Status completed =
      Report(lease, "complete", lease_held, [&](grpc::ClientContext* ctx) {
        v1::CompleteResponse resp;
        return coordinator_->Complete(ctx, req, &resp);
      });
  if (completed.ok()) {
    spdlog::info("task {}: done after {} steps", task.task_id(), steps.load());
    return "succeeded";
  }
  // The lease was taken back meanwhile, or the worker is shutting down with
  // the coordinator out of reach: the coordinator re-queues the task.
  spdlog::warn("task {}: complete refused: {}", task.task_id(), completed.ToString());
  return "stopped";
}

const char* WorkerLoop::ReportFailure(const v1::LeaseResponse& lease, absl::Status status,
                                      const std::function<bool()>& lease_held) {
  const bool shutting_down = stopping_;
  // Stopped by Stop(): the worker is going away, not the task failing.
  if (shutting_down && status.code() == absl::StatusCode::kCancelled) {
    status = absl::CancelledError(absl::StrCat("worker ", worker_id_, " shutting down"));
  }
  const FailureVerdict verdict = ClassifyFailure(status, shutting_down);
  if (verdict.device_unusable) {
    absl::MutexLock lock(&mu_);
    device_error_ = status;
  }
  spdlog::warn("task {} {} ({}): {}", lease.task().task_id(),
               verdict.kind == v1::INTERRUPTED ? "released" : "failed",
               v1::FailureKind_Name(verdict.kind), status.ToString());
  v1::FailRequest req;
  req.set_worker_id(worker_id_);
  req.set_lease_id(lease.lease_id());
  req.set_error(std::string(status.message()));
  req.set_kind(verdict.kind);
  req.set_retryable(verdict.kind != v1::TASK_FINAL);  // what an older coordinator reads
  const absl::Status reported = Report(lease, "fail", lease_held, [&](grpc::ClientContext* ctx) {
    v1::FailResponse resp;
    return coordinator_->Fail(ctx, req, &resp);
  });
  // Unheard, the lease expires and the coordinator re-queues the task.
  if (!reported.ok()) spdlog::warn("fail: {}", reported.ToString());
  return verdict.kind == v1::INTERRUPTED ? "released" : "failed";
}

absl::Status WorkerLoop::Report(const v1::LeaseResponse& lease, const char* what,
                                const std::function<bool()>& lease_held,
                                const std::function<grpc::Status(grpc::ClientContext*)>& call) {
  // Once stopping, a preempted pod's grace period is short: a few more seconds.
  std::optional<absl::Time> give_up;
  absl::Duration backoff = absl::Milliseconds(200);
  for (int attempt = 1;; ++attempt) {
    if (stopping_ && !give_up.has_value()) give_up = absl::Now() + absl::Seconds(5);
    grpc::ClientContext ctx;
    // Waits for the channel to (re)connect rather than failing at once
    // while the coordinator restarts; the deadline bounds the wait.
    ctx.set_wait_for_ready(true);
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    absl::Status status = FromGrpc(call(&ctx));
    // A full disk at the coordinator clears once space is freed: worth the
    // same patience as an outage while the lease is held.
    if (status.code() != absl::StatusCode::kUnavailable &&
        status.code() != absl::StatusCode::kDeadlineExceeded && !sql::IsDiskFull(status)) {
      return status;
    }
    if (!lease_held() || (give_up.has_value() && absl::Now() + backoff >= *give_up)) {
      return status;
    }
    spdlog::warn("{} (task {}, attempt {}): {} (retrying in {})", what, lease.task().task_id(),
                 attempt, status.ToString(), absl::FormatDuration(backoff));
    // A Stop() meanwhile cuts the pause short: its few seconds of tries
    // start at once. Once stopping, each pause is the whole backoff.
    if (stopping_) {
      absl::SleepFor(backoff);
    } else {
      PauseUnlessStopping(backoff);
    }
    backoff = std::min(backoff * 2, absl::Seconds(5));
  }
}

void WorkerLoop::PauseUnlessStopping(absl::Duration duration) const {
  absl::MutexLock lock(&mu_);
  // Stop() sets `stopping_` and then takes `mu_`, which evaluates this again.
  mu_.AwaitWithTimeout(
      absl::Condition(
          +[](const std::atomic<bool>* stopping) { return stopping->load(); }, &stopping_),
      duration);
}

absl::Status WorkerLoop::StreamToScorer(std::vector<v1::Observation> observations,
                                        const std::string& capability,
                                        const std::function<bool()>& lease_held) {
  // The scorer stores an observation only with its task's capability.
  for (v1::Observation& o : observations) o.set_capability(capability);
  absl::Duration backoff = absl::Milliseconds(500);
  absl::Status last;
  for (int attempt = 1;; ++attempt) {
    v1::IngestResponse resp;
    grpc::ClientContext ctx;
    Deadline(&ctx, 60000);
    auto writer = scorer_->Ingest(&ctx, &resp);
    for (const v1::Observation& o : observations) {
      if (!writer->Write(o)) break;
    }
    writer->WritesDone();
    last = FromGrpc(writer->Finish());
    if (last.ok()) return last;
    // A scorer restarting, rescheduled or drained is waited for while the
    // lease is held; once stopping, the task is released at once (a
    // preempted pod has a short grace period).
    const bool out_of_reach = last.code() == absl::StatusCode::kUnavailable ||
                              last.code() == absl::StatusCode::kDeadlineExceeded;
    if (!out_of_reach || stopping_ || !lease_held()) break;
    spdlog::warn("ingest (attempt {}): {} (retrying in {})", attempt, last.ToString(),
                 absl::FormatDuration(backoff));
    PauseUnlessStopping(backoff);
    backoff = std::min(backoff * 2, absl::Seconds(5));
  }
  // The reason the audit's events give for the release or failure.
  return absl::Status(last.code(),
                      absl::StrCat("streaming signals to the scorer: ", last.message()));
}

}  // namespace memaudit::worker
