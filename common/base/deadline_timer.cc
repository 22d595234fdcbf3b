#include "common/base/deadline_timer.h"

#include <vector>

namespace memaudit {

DeadlineTimer::DeadlineTimer() : thread_([this] { Run(); }) {}

DeadlineTimer::~DeadlineTimer() { Stop(); }

void DeadlineTimer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    wake_.Signal();
  }
  thread_.join();
}

DeadlineTimer::Id DeadlineTimer::At(absl::Time when, Callback fn) {
  absl::MutexLock lock(&mu_);
  const Id id = next_id_++;
  const bool earliest = due_.empty() || when < due_.begin()->first.first;
  due_.emplace(std::make_pair(when, id), std::move(fn));
  when_.emplace(id, when);
  if (earliest) wake_.Signal();  // the thread sleeps until a later deadline
  return id;
}

bool DeadlineTimer::Cancel(Id id) {
  absl::MutexLock lock(&mu_);
  auto it = when_.find(id);
  if (it == when_.end()) return false;
  due_.erase({it->second, id});
  when_.erase(it);
  return true;
}

size_t DeadlineTimer::pending() const {
  absl::MutexLock lock(&mu_);
  return due_.size();
}

void DeadlineTimer::Run() {
  std::vector<Callback> ready;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      // Sleeps until the earliest deadline; At signals an earlier one, Stop
      // the end.
      while (!stopping_) {
        const absl::Time next = due_.empty() ? absl::InfiniteFuture() : due_.begin()->first.first;
        if (next <= absl::Now()) break;
        wake_.WaitWithDeadline(&mu_, next);
      }
      const absl::Time now = absl::Now();
      while (!due_.empty() && due_.begin()->first.first <= now) {
        auto node = due_.extract(due_.begin());
        when_.erase(node.key().second);
        ready.push_back(std::move(node.mapped()));
      }
      if (ready.empty() && stopping_) return;
    }
    for (Callback& fn : ready) std::move(fn)();
    ready.clear();
  }
}

}  // namespace memaudit
