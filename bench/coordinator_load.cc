// bench/coordinator_load: the coordinator's WorkerService under many workers
// and many stored tasks, on loopback.
//
//   build/bin/coordinator_load [--workers=100] [--stored-tasks=1000] [--seconds=10]
//       [--baseline-workers=10] [--baseline-seconds=S] [--wait-ms=2000]
//       [--lease-ttl-ms=10000] [--leases-per-worker=auto] [--channels=256]
//       [--tasks-per-audit=auto] [--max-attempts=100] [--retire-at=90]
//       [--max-cycles=1000000] [--max-submit-seconds=900] [--dir=DIR] [--keep-dir=0]
//       [--bin-dir=DIR] [--rate=0] [--active-tasks=0]
//
// Starts a real scorer and coordinator (EmbeddedCluster, mutual TLS, no real
// workers), submits membership audits (models_per_task 1: one task per
// reference model) until --stored-tasks tasks are stored, then runs fake
// workers on gRPC's callback API (a few client threads for any number of
// workers). Each fake worker registers once, then repeats a cycle:
//
//   Lease (long-poll, --wait-ms) -> Heartbeat -> release (Fail, kind INTERRUPTED)
//
// A release puts the task back in the queue without counting an attempt. (A
// real Complete needs the scorer to hold every observation of the task, which
// fake workers do not produce.) The coordinator counts a task's releases and,
// past 100, charges each one as an attempt, and a released task is the next
// one leased; so that releases spread over many tasks, each worker keeps up to
// --leases-per-worker leases and a cycle releases the oldest one it holds
// (auto: together about 90% of the tasks in running audits, at most 1000; none kept longer
// than a third of the lease TTL, so held leases never expire). With 1 lease
// per worker the cycle releases the lease it has just taken. As a last guard
// the bench cancels ("retires") an audit once one of its tasks reaches
// --retire-at releases, and reports any audit that failed; --max-attempts
// (default 100, the validator's maximum) is a second margin.
//
// --rate=R offers R cycles/s in all during the load phase instead of as many
// as the workers can: each worker starts a cycle every workers/R seconds on a
// fixed schedule (release the lease it held since its last cycle, Lease,
// Heartbeat), and a cycle is timed from when it was due, so a coordinator
// that falls behind shows it in the latencies (no coordinated omission). With back-to-back cycles
// (the default) a cycle's mean latency is workers / (cycles/s) by Little's law whatever the server:
// --rate is how latency at a given throughput is measured.
//
// --active-tasks=N makes the stored tasks history: after submitting, the
// oldest audits are cancelled while at least N tasks stay in audits still
// running (a coordinator that keeps audits for months holds mostly finished
// ones).
//
// Two phases in the same process and cluster: --baseline-workers first (the
// baseline), then --workers. Prints, for each, cycles/s, p50/p99 of a whole
// cycle and of Lease alone, empty long-polls, errors by gRPC code, lease
// expiries seen (HeartbeatResponse.stop or FAILED_PRECONDITION), the
// coordinator's threads and RSS (/proc/PID/status, sampled every 250 ms), the
// CPU the coordinator and this client used, and the ratio of the two phases'
// cycles/s. --bin-dir runs another build's services (memaudit-coordinator,
// memaudit-scorer and a memaudit-worker, never started) under the same load.
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"
#include "bench/metrics_scrape.h"
#include "bench/proc_stats.h"
#include "cli/embedded_cluster.h"
#include "common/base/process.h"
#include "common/security/tls.h"
#include "memaudit/v1/audit.grpc.pb.h"
#include "memaudit/v1/worker.grpc.pb.h"

namespace {

using memaudit::bench::Flag;
using memaudit::bench::FlagInt;
using memaudit::bench::Seconds;
namespace v1 = memaudit::v1;

// ---------------------------------------------------------------------------
// Process figures from /proc.

using memaudit::bench::Percentile;
using memaudit::bench::ProcCpuSeconds;
using memaudit::bench::ProcStatus;
using memaudit::bench::ReadProcStatus;
using memaudit::bench::RemovedDir;
using memaudit::bench::Reproduce;
using memaudit::bench::ScrapeMetrics;
using memaudit::bench::ScratchDir;
using memaudit::bench::SelfCpuSeconds;

// ---------------------------------------------------------------------------
// The audits under load.

v1::AuditSpec LoadSpec(uint32_t models, uint64_t seed, uint32_t max_attempts) {
  // tests/integration/tiny_specs.h's TinyMembershipSpec, with its own seed
  // per audit (no two audits share a model's content key).
  v1::AuditSpec spec;
  spec.set_name(absl::StrCat("coordinator-load-", seed));
  spec.set_seed(seed);
  spec.mutable_resources()->set_max_attempts(max_attempts);
  spec.mutable_resources()->set_models_per_task(1);
  v1::MembershipAudit* m = spec.mutable_membership();
  m->mutable_dataset()->set_pool_size(200);
  m->mutable_model()->add_hidden(32);
  m->mutable_training()->set_learning_rate(0.1);
  m->mutable_training()->set_momentum(0.9);
  m->mutable_training()->set_epochs(3);
  m->mutable_training()->set_batch_size(16);
  m->set_reference_models(models);
  return spec;
}

// What the bench knows of the releases it made, and the audits it retired.
class ReleaseTracker {
 public:
  ReleaseTracker(uint32_t retire_at, v1::AuditService::Stub* audits)
      : retire_at_(retire_at), audits_(audits), thread_([this] { CancelLoop(); }) {}
  ~ReleaseTracker() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  void Released(const std::string& task_id, const std::string& audit_id) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint32_t n = ++releases_[task_id];
    max_releases_ = std::max(max_releases_, n);
    if (retire_at_ > 0 && n >= retire_at_ && retired_.insert(audit_id).second) {
      to_cancel_.push(audit_id);
      cv_.notify_all();
    }
  }
  bool Retired(const std::string& audit_id) {
    std::lock_guard<std::mutex> lock(mu_);
    return retired_.count(audit_id) > 0;
  }
  uint32_t max_releases() {
    std::lock_guard<std::mutex> lock(mu_);
    return max_releases_;
  }
  size_t retired() {
    std::lock_guard<std::mutex> lock(mu_);
    return retired_.size();
  }
  size_t cancel_errors() {
    std::lock_guard<std::mutex> lock(mu_);
    return cancel_errors_;
  }

 private:
  void CancelLoop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return done_ || !to_cancel_.empty(); });
      if (to_cancel_.empty()) return;
      const std::string id = to_cancel_.front();
      to_cancel_.pop();
      lock.unlock();
      v1::CancelRequest req;
      req.set_audit_id(id);
      v1::Audit resp;
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      const grpc::Status s = audits_->Cancel(&ctx, req, &resp);
      lock.lock();
      if (!s.ok()) {
        ++cancel_errors_;
        std::fprintf(stderr, "cancel %s: %s\n", id.c_str(), s.error_message().c_str());
      }
    }
  }

  const uint32_t retire_at_;
  v1::AuditService::Stub* audits_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::unordered_map<std::string, uint32_t> releases_;
  uint32_t max_releases_ = 0;
  std::set<std::string> retired_;
  std::queue<std::string> to_cancel_;
  size_t cancel_errors_ = 0;
  std::thread thread_;  // last: starts once the rest is built
};

// ---------------------------------------------------------------------------
// Fake workers.

class Phase;

// Calls back `fn` after `delay_s` (retries after an error).
class Delayer {
 public:
  Delayer() : thread_([this] { Loop(); }) {}
  ~Delayer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void After(double delay_s, std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push({Seconds() + delay_s, seq_++, std::move(fn)});
    cv_.notify_all();
  }

 private:
  struct Item {
    double due;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Item& o) const { return due != o.due ? due > o.due : seq > o.seq; }
  };
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!done_ || !queue_.empty()) {
      if (queue_.empty()) {
        cv_.wait(lock);
        continue;
      }
      const double wait = queue_.top().due - Seconds();
      if (wait > 0) {
        cv_.wait_for(lock, std::chrono::duration<double>(wait));
        continue;
      }
      std::function<void()> fn = queue_.top().fn;
      queue_.pop();
      lock.unlock();
      fn();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  uint64_t seq_ = 0;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> queue_;
  std::thread thread_;
};

struct Options {
  uint32_t wait_ms = 2000;
  uint64_t max_cycles = 1000000;
  // Leases each worker keeps at most, and how long it keeps one.
  size_t leases_per_worker = 1;
  double max_hold_s = 3;
  // Seconds between the starts of a worker's cycles; 0 = back to back.
  double cycle_interval_s = 0;
};

// One phase: W workers for a fixed window.
class Phase {
 public:
  Phase(const Options& options, ReleaseTracker* tracker, Delayer* delayer)
      : options_(options), tracker_(tracker), delayer_(delayer) {}

  const Options& options() const { return options_; }
  ReleaseTracker* tracker() { return tracker_; }
  Delayer* delayer() { return delayer_; }

  // The measured window; cycles ending inside it count.
  void SetWindow(double start, double end) {
    window_start_ = start;
    window_end_ = end;
  }
  bool InWindow(double t) const { return t >= window_start_.load() && t < window_end_.load(); }
  bool stopping() const { return stopping_.load(std::memory_order_relaxed); }
  void Stop() { stopping_ = true; }

  void CycleDone() {
    if (cycles_.fetch_add(1, std::memory_order_relaxed) + 1 == options_.max_cycles) {
      stopped_at_ = Seconds();
      window_end_ = stopped_at_.load();  // later cycles do not count
      Stop();
    }
  }
  // When --max-cycles ended the phase; 0 if it did not.
  double stopped_at() const { return stopped_at_.load(); }
  uint64_t cycles() const { return cycles_.load(); }

  void Error(const char* rpc, const grpc::Status& s) {
    std::lock_guard<std::mutex> lock(mu_);
    ++errors_[absl::StrCat(rpc, " ", CodeName(s.error_code()))];
    if (first_errors_.size() < 5) {
      first_errors_.push_back(absl::StrCat(rpc, ": ", s.error_message().substr(0, 200)));
    }
  }
  std::map<std::string, uint64_t> errors() {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }
  std::vector<std::string> first_errors() {
    std::lock_guard<std::mutex> lock(mu_);
    return first_errors_;
  }

  void WorkerStarted() {
    std::lock_guard<std::mutex> lock(mu_);
    ++active_;
  }
  void WorkerEnded() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--active_ == 0) cv_.notify_all();
  }
  void WaitForWorkers() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return active_ == 0; });
  }

  std::atomic<uint64_t> empty_polls{0};
  std::atomic<uint64_t> expiries{0};
  std::atomic<uint64_t> retired_stops{0};

  static std::string CodeName(grpc::StatusCode code) {
    // gRPC and absl number their codes alike.
    return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  }

 private:
  const Options options_;
  ReleaseTracker* tracker_;
  Delayer* delayer_;
  std::atomic<double> window_start_{0};
  std::atomic<double> window_end_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<double> stopped_at_{0};
  std::atomic<uint64_t> cycles_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  size_t active_ = 0;
  std::map<std::string, uint64_t> errors_;
  std::vector<std::string> first_errors_;
};

// A worker as a chain of callbacks: one RPC in flight at a time, so its
// fields need no lock. It keeps up to `leases_per_worker` leases: each cycle
// takes a new lease, heartbeats it, then releases the oldest one it holds
// once it holds that many or the oldest is older than `max_hold_s`.
class FakeWorker {
 public:
  FakeWorker(Phase* phase, v1::WorkerService::Stub* stub) : phase_(phase), stub_(stub) {
    caps_.set_threads(1);
    caps_.set_hostname("coordinator-load");
  }

  // Register, then `done(ok)`.
  void Register(std::function<void(bool)> done) {
    ctx_ = std::make_unique<grpc::ClientContext>();
    ctx_->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    register_req_.Clear();
    *register_req_.mutable_capabilities() = caps_;
    stub_->async()->Register(ctx_.get(), &register_req_, &register_resp_,
                             [this, done](grpc::Status s) {
                               if (!s.ok()) phase_->Error("Register", s);
                               worker_id_ = register_resp_.worker_id();
                               done(s.ok());
                             });
  }
  bool registered() const { return !worker_id_.empty(); }

  // `offset_s`: when, within the cycle interval, this worker's cycles are
  // due (--rate).
  void Start(double offset_s) {
    phase_->WorkerStarted();
    next_due_ = Seconds() + offset_s;
    NextLease();
  }

  std::vector<double> cycle_ms;
  std::vector<double> lease_ms;

 private:
  struct Held {
    std::string lease_id;
    std::string task_id;
    std::string audit_id;
    double leased_at = 0;
  };

  void NextLease() {
    if (phase_->stopping()) {
      Drain();
      return;
    }
    lease_start_ = Seconds();
    if (!paced()) {
      SendLease(lease_start_);
      return;
    }
    // The next cycle is due at its slot, and is timed from it even when it
    // starts late.
    const double due = next_due_;
    next_due_ += phase_->options().cycle_interval_s;
    if (due > lease_start_) {
      phase_->delayer()->After(due - lease_start_, [this, due] { StartPacedCycle(due); });
    } else {
      StartPacedCycle(due);
    }
  }

  bool paced() const { return phase_->options().cycle_interval_s > 0; }

  // A paced cycle: release the lease held since the last cycle (a worker
  // holds one between cycles, as a training worker would), Lease, Heartbeat.
  void StartPacedCycle(double due) {
    lease_start_ = due;
    if (phase_->stopping()) {
      Drain();
    } else if (held_.empty()) {
      SendLease(due);
    } else {
      ReleaseOldest(/*counted=*/false);  // OnFail goes on with SendLease
    }
  }

  void SendLease(double timed_from) {
    lease_start_ = timed_from;
    ctx_ = std::make_unique<grpc::ClientContext>();
    ctx_->set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(phase_->options().wait_ms + 10000));
    lease_req_.Clear();
    lease_req_.set_worker_id(worker_id_);
    lease_req_.set_wait_ms(phase_->options().wait_ms);
    *lease_req_.mutable_capabilities() = caps_;
    *lease_req_.mutable_free() = caps_;
    lease_resp_.Clear();
    stub_->async()->Lease(ctx_.get(), &lease_req_, &lease_resp_,
                          [this](grpc::Status s) { OnLease(s); });
  }

  void RetryLater() {
    phase_->delayer()->After(0.1, [this] { NextLease(); });
  }

  void OnLease(const grpc::Status& s) {
    const double now = Seconds();
    if (!s.ok()) {
      phase_->Error("Lease", s);
      RetryLater();
      return;
    }
    if (!lease_resp_.has_task()) {
      phase_->empty_polls.fetch_add(1, std::memory_order_relaxed);
      // Nothing new to hold: let go of a lease past its time.
      if (!held_.empty() && now - held_.front().leased_at > phase_->options().max_hold_s) {
        ReleaseOldest(/*counted=*/false);
      } else {
        NextLease();
      }
      return;
    }
    if (phase_->InWindow(now)) lease_ms.push_back((now - lease_start_) * 1e3);
    held_.push_back(Held{lease_resp_.lease_id(), lease_resp_.task().task_id(),
                         lease_resp_.task().audit_id(), now});
    ctx_ = std::make_unique<grpc::ClientContext>();
    ctx_->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    heartbeat_req_.Clear();
    heartbeat_req_.set_worker_id(worker_id_);
    heartbeat_req_.set_lease_id(lease_resp_.lease_id());
    heartbeat_req_.set_steps_done(1);
    heartbeat_resp_.Clear();
    stub_->async()->Heartbeat(ctx_.get(), &heartbeat_req_, &heartbeat_resp_,
                              [this](grpc::Status s) { OnHeartbeat(s); });
  }

  // A lease the coordinator no longer holds: the bench retired its audit, or
  // the lease expired.
  void LeaseGone(const Held& lease) {
    if (phase_->tracker()->Retired(lease.audit_id)) {
      phase_->retired_stops.fetch_add(1);
    } else {
      phase_->expiries.fetch_add(1);
    }
  }

  void OnHeartbeat(const grpc::Status& s) {
    const bool gone = s.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
                      (s.ok() && heartbeat_resp_.stop());
    if (!s.ok() && (!gone || !phase_->tracker()->Retired(held_.back().audit_id))) {
      phase_->Error("Heartbeat", s);
    }
    if (gone) {
      LeaseGone(held_.back());
      held_.pop_back();
    }
    if (paced()) {
      const double now = Seconds();
      if (s.ok() && phase_->InWindow(now)) {
        cycle_ms.push_back((now - lease_start_) * 1e3);
        phase_->CycleDone();
      }
      NextLease();
      return;
    }
    const size_t k = phase_->options().leases_per_worker;
    const bool due = !held_.empty() && (held_.size() >= k || Seconds() - held_.front().leased_at >
                                                                 phase_->options().max_hold_s);
    if (due) {
      ReleaseOldest(/*counted=*/!gone);
    } else {
      NextLease();
    }
  }

  // Fail(kind INTERRUPTED) of the oldest lease held; a cycle when `counted`.
  void ReleaseOldest(bool counted) {
    counted_ = counted;
    releasing_ = held_.front();
    held_.pop_front();
    ctx_ = std::make_unique<grpc::ClientContext>();
    ctx_->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    fail_req_.Clear();
    fail_req_.set_worker_id(worker_id_);
    fail_req_.set_lease_id(releasing_.lease_id);
    fail_req_.set_kind(v1::INTERRUPTED);
    fail_req_.set_retryable(true);
    fail_req_.set_error("coordinator_load: released");
    stub_->async()->Fail(ctx_.get(), &fail_req_, &fail_resp_,
                         [this](grpc::Status s) { OnFail(s); });
  }

  void OnFail(const grpc::Status& s) {
    const double now = Seconds();
    if (s.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
      if (!phase_->tracker()->Retired(releasing_.audit_id)) phase_->Error("Fail", s);
      LeaseGone(releasing_);
    } else if (!s.ok()) {
      phase_->Error("Fail", s);
    } else {
      phase_->tracker()->Released(releasing_.task_id, releasing_.audit_id);
      if (counted_ && !draining_ && phase_->InWindow(now)) {
        cycle_ms.push_back((now - lease_start_) * 1e3);
        phase_->CycleDone();
      }
    }
    if (draining_) {
      Drain();
    } else if (!s.ok() && s.error_code() != grpc::StatusCode::FAILED_PRECONDITION) {
      RetryLater();
    } else if (paced()) {
      SendLease(lease_start_);  // the rest of the paced cycle
    } else {
      NextLease();
    }
  }

  // At the end of the phase: gives back every lease held, then ends.
  void Drain() {
    draining_ = true;
    if (held_.empty()) {
      phase_->WorkerEnded();
      return;
    }
    ReleaseOldest(/*counted=*/false);
  }

  Phase* phase_;
  v1::WorkerService::Stub* stub_;
  v1::WorkerCapabilities caps_;
  std::string worker_id_;
  std::deque<Held> held_;
  Held releasing_;
  bool counted_ = false;
  bool draining_ = false;
  double lease_start_ = 0;
  double next_due_ = 0;  // when the next cycle is due (--rate)
  std::unique_ptr<grpc::ClientContext> ctx_;
  v1::RegisterRequest register_req_;
  v1::RegisterResponse register_resp_;
  v1::LeaseRequest lease_req_;
  v1::LeaseResponse lease_resp_;
  v1::HeartbeatRequest heartbeat_req_;
  v1::HeartbeatResponse heartbeat_resp_;
  v1::FailRequest fail_req_;
  v1::FailResponse fail_resp_;
};

struct PhaseResult {
  std::string name;
  uint32_t workers = 0;
  size_t leases_per_worker = 1;
  double seconds = 0;
  uint64_t cycles = 0;
  double cycles_per_s = 0;
  double cycle_p50 = 0, cycle_p99 = 0, lease_p50 = 0, lease_p99 = 0;
  uint64_t empty_polls = 0, expiries = 0, retired_stops = 0;
  std::map<std::string, uint64_t> errors;
  long threads_min = 0, threads_median = 0, threads_max = 0;
  long rss_max_kb = 0;
  double coordinator_cores = 0, client_cores = 0;
  double register_s = 0;
  // The coordinator's group commit over the window (its /metrics).
  double store_writes = 0, store_decisions = 0, store_write_s = 0;
};

// Runs `workers` fake workers for `seconds` (after a 1 s warm-up).
PhaseResult RunPhase(const std::string& name, uint32_t workers, double seconds,
                     const Options& options, ReleaseTracker* tracker, Delayer* delayer,
                     const std::vector<std::unique_ptr<v1::WorkerService::Stub>>& stubs,
                     pid_t coordinator_pid, int coordinator_metrics_port) {
  PhaseResult r;
  r.name = name;
  r.workers = workers;
  r.leases_per_worker = options.leases_per_worker;
  Phase phase(options, tracker, delayer);
  std::vector<std::unique_ptr<FakeWorker>> fleet;
  for (uint32_t i = 0; i < workers; ++i) {
    fleet.push_back(std::make_unique<FakeWorker>(&phase, stubs[i % stubs.size()].get()));
  }

  // Register, at most 32 in flight.
  const double register_start = Seconds();
  {
    std::mutex mu;
    std::condition_variable cv;
    size_t next = 0, finished = 0, failed = 0;
    std::function<void()> launch_one;
    std::function<void(bool)> on_done = [&](bool ok) {
      std::lock_guard<std::mutex> lock(mu);
      ++finished;
      if (!ok) ++failed;
      cv.notify_all();
    };
    std::unique_lock<std::mutex> lock(mu);
    while (finished < workers) {
      while (next < workers && next - finished < 32) {
        FakeWorker* w = fleet[next++].get();
        lock.unlock();
        w->Register(on_done);
        lock.lock();
      }
      cv.wait(lock,
              [&] { return finished == workers || (next < workers && next - finished < 32); });
    }
    if (failed > 0) std::printf("  %zu of %u registrations failed\n", failed, workers);
  }
  r.register_s = Seconds() - register_start;

  // Sample the coordinator's threads and RSS every 250 ms.
  std::atomic<bool> sampling{true};
  std::vector<ProcStatus> samples;
  std::mutex samples_mu;
  std::atomic<bool> in_window{false};
  std::thread sampler([&] {
    while (sampling) {
      const ProcStatus s = ReadProcStatus(coordinator_pid);
      if (in_window) {
        std::lock_guard<std::mutex> lock(samples_mu);
        samples.push_back(s);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  });

  // Long enough for every worker to fill up to its leases (each lease is let
  // go after max_hold_s at the latest).
  const double warmup = options.leases_per_worker > 1 ? 1.0 + options.max_hold_s : 1.0;
  const double start = Seconds();
  phase.SetWindow(start + warmup, start + warmup + seconds);
  for (size_t i = 0; i < fleet.size(); ++i) {
    if (fleet[i]->registered()) {
      fleet[i]->Start(options.cycle_interval_s * static_cast<double>(i) / fleet.size());
    }
  }
  // Wait for the window, printing progress every 5 s.
  std::this_thread::sleep_until(std::chrono::steady_clock::now() +
                                std::chrono::duration<double>(start + warmup - Seconds()));
  in_window = true;
  const double cpu0_coord = ProcCpuSeconds(coordinator_pid);
  const double cpu0_self = SelfCpuSeconds();
  const std::map<std::string, double> metrics0 = ScrapeMetrics(coordinator_metrics_port);
  const double t0 = Seconds();
  double t1 = t0;
  while (true) {
    const double now = Seconds();
    if (now >= start + warmup + seconds || phase.stopping()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(
        std::min<long>(5000, static_cast<long>((start + warmup + seconds - now) * 1000) + 1)));
    const double after = Seconds();
    if (after < start + warmup + seconds && !phase.stopping()) {
      std::printf("  %s: %.0f s, %lu cycles\n", name.c_str(), after - t0,
                  static_cast<unsigned long>(phase.cycles()));
      std::fflush(stdout);
    }
  }
  t1 = std::min(Seconds(), start + warmup + seconds);
  if (phase.stopped_at() > 0) t1 = std::min(t1, phase.stopped_at());
  const double cpu1_coord = ProcCpuSeconds(coordinator_pid);
  const double cpu1_self = SelfCpuSeconds();
  std::map<std::string, double> metrics1 = ScrapeMetrics(coordinator_metrics_port);
  auto grew = [&](const std::string& name) {
    auto before = metrics0.find(name);
    return metrics1[name] - (before == metrics0.end() ? 0.0 : before->second);
  };
  r.store_writes = grew("memaudit_coordinator_store_writes_total");
  r.store_decisions = grew("memaudit_coordinator_store_decisions_total");
  r.store_write_s = grew("memaudit_coordinator_store_write_seconds_sum");
  in_window = false;
  phase.SetWindow(start + warmup, t1);
  phase.Stop();
  phase.WaitForWorkers();
  sampling = false;
  sampler.join();

  r.seconds = t1 - t0;
  r.cycles = phase.cycles();
  r.cycles_per_s = r.seconds > 0 ? r.cycles / r.seconds : 0;
  std::vector<double> cycles, leases;
  for (auto& w : fleet) {
    cycles.insert(cycles.end(), w->cycle_ms.begin(), w->cycle_ms.end());
    leases.insert(leases.end(), w->lease_ms.begin(), w->lease_ms.end());
  }
  r.cycle_p50 = Percentile(cycles, 0.5);
  r.cycle_p99 = Percentile(cycles, 0.99);
  r.lease_p50 = Percentile(leases, 0.5);
  r.lease_p99 = Percentile(leases, 0.99);
  r.empty_polls = phase.empty_polls;
  r.expiries = phase.expiries;
  r.retired_stops = phase.retired_stops;
  r.errors = phase.errors();
  std::vector<double> threads;
  for (const ProcStatus& s : samples) {
    threads.push_back(static_cast<double>(s.threads));
    r.rss_max_kb = std::max(r.rss_max_kb, s.rss_kb);
  }
  if (!threads.empty()) {
    r.threads_min = static_cast<long>(*std::min_element(threads.begin(), threads.end()));
    r.threads_max = static_cast<long>(*std::max_element(threads.begin(), threads.end()));
    r.threads_median = static_cast<long>(Percentile(threads, 0.5));
  }
  r.coordinator_cores = r.seconds > 0 ? (cpu1_coord - cpu0_coord) / r.seconds : 0;
  r.client_cores = r.seconds > 0 ? (cpu1_self - cpu0_self) / r.seconds : 0;
  for (const std::string& e : phase.first_errors()) std::printf("  an error: %s\n", e.c_str());
  return r;
}

void PrintPhase(const PhaseResult& r) {
  std::printf(
      "%-8s workers %5u: %8.1f cycles/s (%lu cycles in %.1f s); cycle p50 %.2f ms p99 %.2f ms; "
      "Lease p50 %.2f ms p99 %.2f ms\n",
      r.name.c_str(), r.workers, r.cycles_per_s, static_cast<unsigned long>(r.cycles), r.seconds,
      r.cycle_p50, r.cycle_p99, r.lease_p50, r.lease_p99);
  std::printf(
      "         up to %zu leases per worker; empty long-polls %lu; lease expiries seen %lu; leases "
      "lost to retired audits %lu; registration of %u workers %.2f s\n",
      r.leases_per_worker, static_cast<unsigned long>(r.empty_polls),
      static_cast<unsigned long>(r.expiries), static_cast<unsigned long>(r.retired_stops),
      r.workers, r.register_s);
  std::string errors;
  uint64_t total = 0;
  for (const auto& [what, n] : r.errors) {
    absl::StrAppend(&errors, errors.empty() ? "" : ", ", what, " ", n);
    total += n;
  }
  std::printf("         errors %lu%s%s\n", static_cast<unsigned long>(total),
              errors.empty() ? "" : ": ", errors.c_str());
  std::printf(
      "         coordinator threads min/median/max %ld/%ld/%ld, RSS max %.1f MiB, CPU %.2f cores; "
      "load generator CPU %.2f cores\n",
      r.threads_min, r.threads_median, r.threads_max, r.rss_max_kb / 1024.0, r.coordinator_cores,
      r.client_cores);
  if (r.store_writes > 0) {
    std::printf(
        "         store: %.0f writes/s, %.1f decisions per write (group commit), %.2f ms per "
        "write, disk busy %.0f%% of the time\n",
        r.store_writes / r.seconds, r.store_decisions / r.store_writes,
        1000.0 * r.store_write_s / r.store_writes, 100.0 * r.store_write_s / r.seconds);
  }
}

uint32_t EvenClamp(uint64_t n) {
  uint64_t v = std::max<uint64_t>(4, std::min<uint64_t>(4096, n));
  return static_cast<uint32_t>(v + (v % 2));
}

}  // namespace

int main(int argc, char** argv) {
  // SIGINT and SIGTERM stop the services (below) rather than orphan them.
  memaudit::BlockShutdownSignals();
  const uint32_t workers = static_cast<uint32_t>(FlagInt(argc, argv, "workers", 100));
  const uint64_t stored_target = static_cast<uint64_t>(FlagInt(argc, argv, "stored-tasks", 1000));
  const double seconds = std::atof(Flag(argc, argv, "seconds", "10").c_str());
  const uint32_t baseline_workers =
      static_cast<uint32_t>(FlagInt(argc, argv, "baseline-workers", 10));
  const double baseline_seconds =
      std::atof(Flag(argc, argv, "baseline-seconds", Flag(argc, argv, "seconds", "10")).c_str());
  const int64_t lease_ttl_ms = FlagInt(argc, argv, "lease-ttl-ms", 10000);
  const uint32_t channels_flag = static_cast<uint32_t>(FlagInt(argc, argv, "channels", 256));
  const uint32_t max_attempts = static_cast<uint32_t>(FlagInt(argc, argv, "max-attempts", 100));
  const uint32_t retire_at = static_cast<uint32_t>(FlagInt(argc, argv, "retire-at", 90));
  const double max_submit_s = std::atof(Flag(argc, argv, "max-submit-seconds", "900").c_str());
  // Audits of ~1/16 of the stored tasks, 4 to 1024 (even): small enough that
  // retiring one leaves most tasks live, and that the scorer takes each within
  // the coordinator's 5 s deadline for OpenAudit (it commits a content key
  // per model: 4096 models can take longer on a loaded 2-core machine).
  const std::string per_audit_flag = Flag(argc, argv, "tasks-per-audit", "auto");
  const uint32_t per_audit = per_audit_flag == "auto"
                                 ? std::min<uint32_t>(1024, EvenClamp(stored_target / 16))
                                 : EvenClamp(std::strtoull(per_audit_flag.c_str(), nullptr, 10));
  Options options;
  options.wait_ms = static_cast<uint32_t>(FlagInt(argc, argv, "wait-ms", 2000));
  options.max_cycles = static_cast<uint64_t>(FlagInt(argc, argv, "max-cycles", 1000000));
  const double rate = static_cast<double>(FlagInt(argc, argv, "rate", 0));
  const uint64_t active_tasks = static_cast<uint64_t>(FlagInt(argc, argv, "active-tasks", 0));

  RemovedDir removed;
  const std::string dir = ScratchDir(argc, argv, "coordinator_load", &removed);
  if (dir.empty()) return 1;

  const std::string reproduce = Reproduce("build/bin/coordinator_load", argc, argv);
  std::printf(
      "coordinator load: %u workers (baseline %u) x %.0f s (baseline %.0f s), %lu stored tasks "
      "wanted, audits of %u tasks, Lease wait %u ms, lease TTL %ld ms, max_attempts %u, audits "
      "retired at %u releases of a task\n",
      workers, baseline_workers, seconds, baseline_seconds,
      static_cast<unsigned long>(stored_target), per_audit, options.wait_ms,
      static_cast<long>(lease_ttl_ms), max_attempts, retire_at);
  std::printf("a cycle is Lease (long-poll) -> Heartbeat -> release (Fail, kind INTERRUPTED)\n");
  std::printf("cluster directory: %s (%u cores online)\n", dir.c_str(),
              static_cast<unsigned>(sysconf(_SC_NPROCESSORS_ONLN)));

  memaudit::cli::ClusterOptions cluster_options;
  cluster_options.dir = dir;
  cluster_options.workers = 0;
  // Another build's memaudit-coordinator and memaudit-scorer (e.g. an older
  // commit's, to compare); it must hold a memaudit-worker too (never started).
  cluster_options.bin_dir = Flag(argc, argv, "bin-dir", "");
  std::printf("services: %s/memaudit-{coordinator,scorer}\n",
              cluster_options.bin_dir.empty() ? memaudit::ExecutableDir().c_str()
                                              : cluster_options.bin_dir.c_str());
  cluster_options.lease_ttl_ms = lease_ttl_ms;
  auto cluster = memaudit::cli::EmbeddedCluster::Start(cluster_options);
  if (!cluster.ok()) {
    std::fprintf(stderr, "cluster: %s\n", cluster.status().ToString().c_str());
    return 1;
  }
  std::thread([service = cluster->get(), dir_to_remove = removed.path] {
    const int signal = memaudit::WaitForShutdownSignal();
    std::fprintf(stderr, "signal %d: stopping the coordinator and the scorer\n", signal);
    service->Stop();
    std::error_code ec;
    if (!dir_to_remove.empty()) std::filesystem::remove_all(dir_to_remove, ec);
    std::_Exit(128 + signal);
  }).detach();
  const pid_t coordinator_pid = (*cluster)->coordinator()->pid();
  const int metrics_port = (*cluster)->coordinator_metrics_port();
  const std::string address = (*cluster)->coordinator_address();
  {
    const ProcStatus s = ReadProcStatus(coordinator_pid);
    std::printf("coordinator pid %d at %s: %ld threads, RSS %.1f MiB at start\n",
                static_cast<int>(coordinator_pid), address.c_str(), s.threads, s.rss_kb / 1024.0);
  }

  auto client_channel = memaudit::MakeChannel(address, (*cluster)->client_credentials());
  if (!client_channel.ok()) {
    std::fprintf(stderr, "channel: %s\n", client_channel.status().ToString().c_str());
    return 1;
  }
  auto audits = v1::AuditService::NewStub(*client_channel);

  // Submit until the target is stored.
  std::vector<std::string> audit_ids;
  std::vector<uint64_t> audit_tasks;  // by audit_ids' order
  uint64_t stored = 0;
  std::vector<double> submit_s;  // every Submit call, retries included
  int submit_retries = 0;
  const pid_t scorer_pid = (*cluster)->scorer()->pid();
  const double submit_cpu0_coordinator = ProcCpuSeconds(coordinator_pid);
  const double submit_cpu0_scorer = ProcCpuSeconds(scorer_pid);
  const double submit_start = Seconds();
  double last_progress = submit_start;
  while (stored < stored_target) {
    if (Seconds() - submit_start > max_submit_s) {
      std::printf("submission stopped after %.0f s (--max-submit-seconds)\n", max_submit_s);
      break;
    }
    const uint32_t models = EvenClamp(std::min<uint64_t>(per_audit, stored_target - stored));
    v1::SubmitRequest req;
    *req.mutable_spec() = LoadSpec(models, 1000 + audit_ids.size(), max_attempts);
    // The request id makes a retry answer the audit a lost reply created.
    req.set_request_id(absl::StrCat("coordinator-load-", audit_ids.size()));
    v1::SubmitResponse resp;
    grpc::Status s;
    for (int attempt = 1;; ++attempt) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(300));
      const double t = Seconds();
      s = audits->Submit(&ctx, req, &resp);
      submit_s.push_back(Seconds() - t);
      // UNAVAILABLE: the scorer did not take the audit within the
      // coordinator's deadline for OpenAudit ("retry later").
      if (s.ok() || s.error_code() != grpc::StatusCode::UNAVAILABLE || attempt == 5) break;
      ++submit_retries;
      std::printf("  Submit of audit %zu (%u tasks), attempt %d: %s (retrying)\n",
                  audit_ids.size() + 1, models, attempt, s.error_message().c_str());
      std::fflush(stdout);
    }
    if (!s.ok()) {
      std::fprintf(stderr, "Submit: %s: %s\n", Phase::CodeName(s.error_code()).c_str(),
                   s.error_message().c_str());
      return 1;
    }
    audit_ids.push_back(resp.audit_id());
    audit_tasks.push_back(resp.tasks());
    stored += resp.tasks();
    if (Seconds() - last_progress >= 5) {
      last_progress = Seconds();
      const ProcStatus p = ReadProcStatus(coordinator_pid);
      std::printf(
          "  submitted %zu audits, %lu tasks in %.0f s (last Submit %.3f s; coordinator RSS %.1f "
          "MiB)\n",
          audit_ids.size(), static_cast<unsigned long>(stored), last_progress - submit_start,
          submit_s.back(), p.rss_kb / 1024.0);
      std::fflush(stdout);
    }
  }
  const double submit_total = Seconds() - submit_start;
  {
    const ProcStatus p = ReadProcStatus(coordinator_pid);
    std::printf(
        "submit: %zu audits, %lu tasks stored in %.1f s (%.0f tasks/s); Submit latency first "
        "%.3f s, median %.3f s, last %.3f s; %d Submit(s) retried; CPU used meanwhile: "
        "coordinator %.1f s, scorer %.1f s; coordinator RSS %.1f MiB, %ld threads\n",
        audit_ids.size(), static_cast<unsigned long>(stored), submit_total,
        submit_total > 0 ? stored / submit_total : 0, submit_s.empty() ? 0 : submit_s.front(),
        memaudit::bench::Median(submit_s), submit_s.empty() ? 0 : submit_s.back(), submit_retries,
        ProcCpuSeconds(coordinator_pid) - submit_cpu0_coordinator,
        ProcCpuSeconds(scorer_pid) - submit_cpu0_scorer, p.rss_kb / 1024.0, p.threads);
  }

  // --active-tasks: history. The oldest audits are cancelled (finished)
  // while at least that many tasks stay in audits still running.
  uint64_t running = stored;  // tasks in audits still running
  if (active_tasks > 0) {
    size_t finished = 0;
    const double start = Seconds();
    for (size_t i = 0; i + 1 < audit_ids.size() && running - audit_tasks[i] >= active_tasks; ++i) {
      v1::CancelRequest req;
      req.set_audit_id(audit_ids[i]);
      v1::Audit cancelled;
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      if (grpc::Status s = audits->Cancel(&ctx, req, &cancelled); !s.ok()) {
        std::fprintf(stderr, "Cancel: %s\n", s.error_message().c_str());
        return 1;
      }
      running -= audit_tasks[i];
      ++finished;
    }
    const ProcStatus p = ReadProcStatus(coordinator_pid);
    std::printf(
        "history: %zu audits finished (cancelled) in %.1f s, %lu tasks in audits still running; "
        "coordinator RSS %.1f MiB\n",
        finished, Seconds() - start, static_cast<unsigned long>(running), p.rss_kb / 1024.0);
    audit_ids.erase(audit_ids.begin(), audit_ids.begin() + finished);
  }

  // One channel per worker up to --channels (its own connection and TLS
  // session), shared round-robin past that.
  const uint32_t channel_count =
      std::max<uint32_t>(1, std::min(channels_flag, std::max(workers, baseline_workers)));
  std::vector<std::unique_ptr<v1::WorkerService::Stub>> stubs;
  for (uint32_t i = 0; i < channel_count; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("memaudit.bench.channel", static_cast<int>(i));  // no shared subchannels
    auto channel = memaudit::MakeChannel(address, (*cluster)->worker_credentials(), args);
    if (!channel.ok()) {
      std::fprintf(stderr, "channel: %s\n", channel.status().ToString().c_str());
      return 1;
    }
    stubs.push_back(v1::WorkerService::NewStub(*channel));
  }
  std::printf("%u client channels (connections)\n", channel_count);

  // Each worker keeps several leases so that releases spread over many tasks
  // (a task's releases are capped): by default, together about 90% of the
  // tasks in running audits, at most 1000, and no lease longer than a third
  // of the TTL.
  const std::string leases_flag = Flag(argc, argv, "leases-per-worker", "auto");
  options.max_hold_s = lease_ttl_ms / 3000.0;
  auto PhaseOptions = [&](uint32_t phase_workers) {
    Options o = options;
    const double target = std::min<double>(1000, running * 0.9);
    o.leases_per_worker =
        leases_flag == "auto"
            ? static_cast<size_t>(std::clamp(std::round(target / phase_workers), 1.0, 100.0))
            : std::max<size_t>(1, std::strtoul(leases_flag.c_str(), nullptr, 10));
    return o;
  };
  ReleaseTracker tracker(retire_at, audits.get());
  Delayer delayer;
  std::vector<PhaseResult> results;
  if (baseline_workers > 0) {
    results.push_back(RunPhase("baseline", baseline_workers, baseline_seconds,
                               PhaseOptions(baseline_workers), &tracker, &delayer, stubs,
                               coordinator_pid, metrics_port));
    PrintPhase(results.back());
  }
  Options load_options = PhaseOptions(workers);
  if (rate > 0) {
    load_options.leases_per_worker = 1;
    load_options.cycle_interval_s = workers / rate;
    std::printf("load phase paced: %.0f cycles/s offered, a cycle due every %.3f s per worker\n",
                rate, load_options.cycle_interval_s);
  }
  results.push_back(RunPhase("load", workers, seconds, load_options, &tracker, &delayer, stubs,
                             coordinator_pid, metrics_port));
  PrintPhase(results.back());

  // What became of the audits.
  std::map<std::string, size_t> states;
  std::vector<std::string> failures;
  for (const std::string& id : audit_ids) {
    v1::GetRequest req;
    req.set_audit_id(id);
    v1::Audit audit;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    const grpc::Status s = audits->Get(&ctx, req, &audit);
    if (!s.ok()) {
      ++states["unreadable"];
      continue;
    }
    ++states[v1::AuditState_Name(audit.state())];
    if (audit.state() == v1::FAILED && failures.size() < 3) failures.push_back(audit.error());
  }
  std::string state_line;
  for (const auto& [state, n] : states) absl::StrAppend(&state_line, " ", state, " ", n);
  std::printf(
      "audits after the run:%s (CANCELLED = retired by the bench: %zu; cancel errors %zu); most "
      "releases of one task %u\n",
      state_line.c_str(), tracker.retired(), tracker.cancel_errors(), tracker.max_releases());
  for (const std::string& f : failures) std::printf("  FAILED: %s\n", f.c_str());

  if (results.size() == 2 && results[0].cycles_per_s > 0) {
    std::printf("ratio: cycles/s at %u workers / at %u workers (baseline): %.2fx\n", workers,
                baseline_workers, results[1].cycles_per_s / results[0].cycles_per_s);
  }
  std::printf("reproduce: %s\n", reproduce.c_str());
  std::fflush(stdout);

  stubs.clear();
  (*cluster)->Stop();
  return 0;
}
