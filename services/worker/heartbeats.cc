#include "services/worker/heartbeats.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace memaudit::worker {

Heartbeats::Heartbeats(absl::Duration interval, Send send)
    : interval_(interval), send_(std::move(send)), thread_([this] { Loop(); }) {}

Heartbeats::~Heartbeats() {
  {
    absl::MutexLock lock(&mu_);
    done_ = true;
    wake_.Signal();
  }
  thread_.join();
}

Heartbeats::Lease::Lease(Heartbeats* beats, std::string worker_id, std::string lease_id,
                         const std::atomic<uint64_t>* steps, StopOrder* stop)
    : beats_(beats), id_([&] {
        absl::MutexLock lock(&beats->mu_);
        const uint64_t id = beats->next_id_++;
        beats->held_[id] = Held{std::move(worker_id), std::move(lease_id), steps, stop};
        return id;
      }()) {}

Heartbeats::Lease::~Lease() {
  absl::MutexLock lock(&beats_->mu_);
  beats_->held_.erase(id_);
}

uint64_t Heartbeats::calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

void Heartbeats::Loop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      const absl::Time next = absl::Now() + interval_;
      bool timed_out = false;
      while (!done_ && !timed_out) timed_out = wake_.WaitWithDeadline(&mu_, next);
      if (done_) return;
    }
    // Nothing may leave a thread's function: an exception (bad_alloc) costs
    // one round.
    try {
      Beat();
    } catch (const std::exception& e) {
      spdlog::warn("heartbeat: {}", e.what());
    } catch (...) {
      spdlog::warn("heartbeat: an exception of unknown type");
    }
  }
}

void Heartbeats::Beat() {
  // What each lease reports, read under mu_: a task that ends meanwhile
  // takes its lease (and its counters) away under mu_ too.
  struct Report {
    uint64_t id;
    std::string worker_id;
    std::string lease_id;
    uint64_t steps;
  };
  std::vector<Report> leases;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, held] : held_) {
      leases.push_back(Report{id, held.worker_id, held.lease_id, held.steps->load()});
    }
  }
  // Tells lease `id` to stop, if it is still held.
  auto stop = [this](uint64_t id, const std::string& reason) {
    absl::MutexLock lock(&mu_);
    auto it = held_.find(id);
    if (it == held_.end()) return;
    StopOrder* order = it->second.stop;
    absl::MutexLock order_lock(&order->mu);
    order->reason = reason;
    order->given = true;
  };
  size_t next = 0;
  while (next < leases.size()) {
    v1::HeartbeatRequest req;
    req.set_worker_id(leases[next].worker_id);
    req.set_lease_id(leases[next].lease_id);
    req.set_steps_done(leases[next].steps);
    for (size_t i = next + 1; i < leases.size(); ++i) {
      v1::LeaseBeat* beat = req.add_more();
      beat->set_lease_id(leases[i].lease_id);
      beat->set_steps_done(leases[i].steps);
    }
    v1::HeartbeatResponse resp;
    const grpc::Status status = send_(req, &resp);
    {
      absl::MutexLock lock(&mu_);
      ++calls_;
    }
    // Unanswered (the coordinator out of reach): the leases stand until it
    // is reached again or they expire; the next round tries again.
    if (!status.ok()) return;
    if (resp.stop()) stop(leases[next].id, resp.reason());
    const size_t answered = std::min<size_t>(resp.more_size(), req.more_size());
    for (size_t i = 0; i < answered; ++i) {
      if (resp.more(i).stop()) stop(leases[next + 1 + i].id, resp.more(i).reason());
    }
    next += 1 + answered;
  }
}

}  // namespace memaudit::worker
