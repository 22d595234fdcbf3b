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
  {
    absl::MutexLock lock(&mu_);
    last_seen_ms_[worker_id] = clock_->NowMs();
  }
  Refresh();
}

size_t WorkerPresence::Refresh() {
  absl::MutexLock lock(&mu_);
  const int64_t oldest = clock_->NowMs() - window_ms_;
  for (auto it = last_seen_ms_.begin(); it != last_seen_ms_.end();) {
    it = it->second < oldest ? last_seen_ms_.erase(it) : std::next(it);
  }
  if (gauge_ != nullptr) gauge_->Set(static_cast<double>(last_seen_ms_.size()));
  return last_seen_ms_.size();
}

}  // namespace memaudit::coordinator
