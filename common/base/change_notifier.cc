#include "common/base/change_notifier.h"

#include <vector>

namespace memaudit {

uint64_t ChangeNotifier::version() const {
  absl::MutexLock lock(&state_->mu);
  return state_->version;
}

void ChangeNotifier::ReleaseAll() {
  const uint64_t version = state_->version;
  for (auto& [id, waiting] : state_->waiting) {
    timer_->Cancel(waiting.second);
    timer_->Post([fn = std::move(waiting.first), version]() mutable { std::move(fn)(version); });
  }
  state_->waiting.clear();
  state_->changed.SignalAll();
}

void ChangeNotifier::Bump() {
  absl::MutexLock lock(&state_->mu);
  ++state_->version;
  ReleaseAll();
}

void ChangeNotifier::Subscribe(uint64_t seen, absl::Duration timeout, Callback fn) {
  absl::MutexLock lock(&state_->mu);
  if (state_->version != seen || state_->stopped) {
    timer_->Post([fn = std::move(fn), v = state_->version]() mutable { std::move(fn)(v); });
    return;
  }
  const uint64_t id = state_->next_id++;
  auto [it, inserted] = state_->waiting.emplace(id, std::make_pair(std::move(fn), 0));
  it->second.second = timer_->At(absl::Now() + timeout, [state = state_, id] {
    Callback fn;
    uint64_t version;
    {
      absl::MutexLock lock(&state->mu);
      auto found = state->waiting.find(id);
      if (found == state->waiting.end()) return;  // called back by a change meanwhile
      fn = std::move(found->second.first);
      state->waiting.erase(found);
      version = state->version;
    }
    std::move(fn)(version);
  });
}

uint64_t ChangeNotifier::Wait(uint64_t seen, absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  absl::MutexLock lock(&state_->mu);
  while (state_->version == seen && !state_->stopped) {
    if (state_->changed.WaitWithDeadline(&state_->mu, deadline)) break;  // timed out
  }
  return state_->version;
}

void ChangeNotifier::Stop() {
  absl::MutexLock lock(&state_->mu);
  state_->stopped = true;
  ReleaseAll();
}

size_t ChangeNotifier::subscribers() const {
  absl::MutexLock lock(&state_->mu);
  return state_->waiting.size();
}

}  // namespace memaudit
