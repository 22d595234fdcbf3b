#include "services/coordinator/worker_presence.h"

namespace memaudit::coordinator {

WorkerPresence::WorkerPresence(const Clock* clock, int64_t window_ms,
                               prometheus::Registry* registry)
    : clock_(clock),
      window_ms_(window_ms),
      gauge_(registry == nullptr
                 ? nullptr
                 : &metrics::AddGauge(*registry, "memaudit_coordinator_workers_connected",
                                      "Workers that called the coordinator within the last lease "
                                      "TTL (registered, leasing or heartbeating).")
                        .Add({})) {}

void WorkerPresence::Seen(const std::string& worker_id) {
  if (worker_id.empty()) return;
  absl::MutexLock lock(&mu_);
  const int64_t now = clock_->NowMs();
  auto [it, fresh] = last_seen_ms_.try_emplace(worker_id, now);
  if (!fresh) {
    by_time_.erase({it->second, worker_id});
    it->second = now;
  }
  by_time_.emplace(now, worker_id);
  ForgetSilent();
}

size_t WorkerPresence::Refresh() {
  absl::MutexLock lock(&mu_);
  return ForgetSilent();
}

size_t WorkerPresence::ForgetSilent() {
  const int64_t oldest = clock_->NowMs() - window_ms_;
  while (!by_time_.empty() && by_time_.begin()->first < oldest) {
    last_seen_ms_.erase(by_time_.begin()->second);
    by_time_.erase(by_time_.begin());
  }
  if (gauge_ != nullptr) gauge_->Set(static_cast<double>(last_seen_ms_.size()));
  return last_seen_ms_.size();
}

}  // namespace memaudit::coordinator
