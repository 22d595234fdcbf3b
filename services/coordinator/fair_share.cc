#include "services/coordinator/fair_share.h"

#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>

namespace memaudit::coordinator {

bool FairShare::AuditOrder::operator()(const Audit* a, const Audit* b) const {
  return std::make_tuple(-int64_t{a->priority}, a->virtual_time, a->number) <
         std::make_tuple(-int64_t{b->priority}, b->virtual_time, b->number);
}

bool FairShare::TeamOrder::operator()(const Team* a, const Team* b) const {
  return std::tie(a->virtual_time, a->since) < std::tie(b->virtual_time, b->since);
}

FairShare::FairShare(std::map<std::string, uint32_t> weights) : weights_(std::move(weights)) {}

FairShare::Team* FairShare::TeamNamed(const std::string& name) {
  std::unique_ptr<Team>& team = teams_[name];
  if (team == nullptr) {
    team = std::make_unique<Team>();
    auto it = weights_.find(name);
    const int64_t weight = it == weights_.end() ? 1 : std::clamp<int64_t>(it->second, 1, 1000);
    team->stride = kLeaseCost / weight;
  }
  return team.get();
}

void FairShare::AddAudit(size_t audit, const std::string& team, int32_t priority) {
  if (audits_.size() <= audit) audits_.resize(audit + 1);
  Audit& a = audits_[audit];
  a.number = audit;
  a.team = TeamNamed(team);
  a.priority = priority;
}

void FairShare::SetReady(size_t audit, bool ready) {
  Audit& a = audits_[audit];
  if (a.ready == ready) return;
  Team& team = *a.team;
  a.ready = ready;
  if (!ready) {
    team.ready.erase(&a);
    if (team.ready.empty()) busy_.erase(&team);
    return;
  }
  // Start level with the team's ready audits of the same priority (the
  // first of them in order has the smallest virtual time).
  Audit probe;
  probe.priority = a.priority;
  probe.virtual_time = std::numeric_limits<int64_t>::min();
  auto peer = team.ready.lower_bound(&probe);
  if (peer != team.ready.end() && (*peer)->priority == a.priority) {
    a.virtual_time = (*peer)->virtual_time;
  }
  if (!team.ready.empty()) {
    team.ready.insert(&a);
    return;
  }
  // The team starts to have queued work: level with the busy teams.
  if (!busy_.empty()) team.virtual_time = (*busy_.begin())->virtual_time;
  team.since = next_since_++;
  team.ready.insert(&a);
  busy_.insert(&team);
}

void FairShare::Charge(size_t audit) {
  Audit& a = audits_[audit];
  Team& team = *a.team;
  // Out of the ordered sets while their keys change.
  const bool busy = !team.ready.empty();
  if (busy) busy_.erase(&team);
  if (a.ready) team.ready.erase(&a);
  a.virtual_time += 1;
  team.virtual_time += team.stride;
  if (a.ready) team.ready.insert(&a);
  if (busy) busy_.insert(&team);
}

int64_t FairShare::team_virtual_time(const std::string& team) const {
  auto it = teams_.find(team);
  return it == teams_.end() ? 0 : it->second->virtual_time;
}

}  // namespace memaudit::coordinator
