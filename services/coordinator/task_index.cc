#include "services/coordinator/task_index.h"

#include <algorithm>
#include <cassert>
#include <iterator>

namespace memaudit::coordinator {
namespace {

void Adjust(uint64_t* value, int sign, uint64_t amount = 1) {
  *value = sign > 0 ? *value + amount : *value - amount;
}

bool IsUnfinished(TaskState s) { return s == TaskState::kQueued || s == TaskState::kLeased; }

// What a task adds to its audit's steps_done.
uint64_t Progress(const TaskRecord& t) {
  switch (t.state) {
    case TaskState::kLeased:
      return std::min(t.steps_done, t.steps_total);
    case TaskState::kSucceeded:
      return t.steps_total;
    default:
      return 0;
  }
}

size_t StateIndex(v1::AuditState state) {
  const auto i = static_cast<size_t>(state);
  return i < kAuditStates ? i : 0;
}

}  // namespace

size_t TaskIndex::AddAudit(const std::string& owner, v1::AuditState state) {
  AuditTasks a;
  a.owner = owner;
  a.state = state;
  audits_.push_back(std::move(a));
  OwnerUsage* usage = &owners_[owner];
  usage_of_.push_back(usage);
  Adjust(&usage->audits[StateIndex(state)], +1);
  Adjust(&totals_.audits[StateIndex(state)], +1);
  return audits_.size() - 1;
}

size_t TaskIndex::AddTask(size_t audit, TaskRecord task) {
  const size_t pos = audit_of_.size();
  AuditTasks& a = audits_[audit];
  if (a.records.empty()) a.first = pos;
  // An audit's tasks are added together, so its positions are contiguous.
  assert(pos == a.first + a.records.size() && !a.retired);
  by_id_[task.task_id] = pos;
  a.total += 1;
  a.steps_total += task.steps_total;
  a.records.push_back(std::move(task));
  audit_of_.push_back(audit);
  Count(pos, +1);
  return pos;
}

bool TaskIndex::Retire(size_t audit) {
  AuditTasks& a = audits_[audit];
  if (a.retired) return true;
  if (!IsTerminal(a.state) || !a.queued.empty() || !a.leased.empty()) return false;
  for (const TaskRecord& t : a.records) by_id_.erase(t.task_id);
  a.records.clear();
  a.records.shrink_to_fit();
  a.retired = true;
  return true;
}

std::optional<size_t> TaskIndex::FindTask(const std::string& task_id) const {
  auto it = by_id_.find(task_id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

std::optional<size_t> TaskIndex::FindLease(const std::string& lease_id) const {
  auto it = by_lease_.find(lease_id);
  if (it == by_lease_.end()) return std::nullopt;
  return it->second;
}

void TaskIndex::Count(size_t pos, int sign) {
  const TaskRecord& t = task(pos);
  AuditTasks& a = audits_[audit_of_[pos]];
  OwnerUsage& usage = *usage_of_[audit_of_[pos]];
  const bool live = !IsTerminal(a.state);
  const auto state = static_cast<size_t>(t.state);
  Adjust(&a.by_state[state], sign);
  Adjust(&totals_.tasks[state], sign);
  Adjust(&a.steps_done, sign, Progress(t));
  if (live && IsUnfinished(t.state)) Adjust(&usage.unfinished_tasks, sign);
  if (t.state == TaskState::kQueued) {
    if (sign > 0) {
      a.queued.insert(pos);
    } else {
      a.queued.erase(pos);
    }
    if (live) Adjust(&totals_.queue_depth, sign);
  } else if (t.state == TaskState::kLeased) {
    if (sign > 0) {
      a.leased.insert(pos);
      by_deadline_.emplace(t.lease_deadline_ms, pos);
      by_lease_[t.lease_id] = pos;
    } else {
      a.leased.erase(pos);
      by_deadline_.erase({t.lease_deadline_ms, pos});
      by_lease_.erase(t.lease_id);
    }
    totals_.leases = by_lease_.size();
  }
}

void TaskIndex::SetTask(size_t pos, TaskRecord task) {
  Count(pos, -1);
  mutable_task(pos) = std::move(task);
  Count(pos, +1);
}

void TaskIndex::SetAuditState(size_t audit, v1::AuditState state) {
  AuditTasks& a = audits_[audit];
  if (a.state == state) return;
  OwnerUsage& usage = *usage_of_[audit];
  Adjust(&usage.audits[StateIndex(a.state)], -1);
  Adjust(&totals_.audits[StateIndex(a.state)], -1);
  if (IsTerminal(a.state) != IsTerminal(state)) {
    // Queued tasks of a terminal audit are never leased: not queue depth,
    // and not what its owner holds.
    const int sign = IsTerminal(state) ? -1 : +1;
    Adjust(&totals_.queue_depth, sign, a.queued.size());
    Adjust(&usage.unfinished_tasks, sign, a.queued.size() + a.leased.size());
  }
  a.state = state;
  Adjust(&usage.audits[StateIndex(state)], +1);
  Adjust(&totals_.audits[StateIndex(state)], +1);
}

void TaskIndex::Renew(size_t pos, uint64_t steps_done, int64_t lease_deadline_ms) {
  TaskRecord& t = mutable_task(pos);
  AuditTasks& a = audits_[audit_of_[pos]];
  a.steps_done -= Progress(t);
  t.steps_done = steps_done;
  a.steps_done += Progress(t);
  if (t.state == TaskState::kLeased && t.lease_deadline_ms != lease_deadline_ms) {
    by_deadline_.erase({t.lease_deadline_ms, pos});
    by_deadline_.emplace(lease_deadline_ms, pos);
  }
  t.lease_deadline_ms = lease_deadline_ms;
}

std::vector<size_t> TaskIndex::LeasedBy(const std::string& worker_id) const {
  std::vector<size_t> out;
  for (const auto& [deadline, pos] : by_deadline_) {
    if (task(pos).worker_id == worker_id) out.push_back(pos);
  }
  return out;
}

std::vector<size_t> TaskIndex::ExpiredLeases(int64_t now_ms) const {
  std::vector<size_t> out;
  for (auto it = by_deadline_.begin(); it != by_deadline_.end() && it->first <= now_ms; ++it) {
    out.push_back(it->second);
  }
  return out;
}

std::vector<size_t> TaskIndex::Unfinished(size_t audit) const {
  const AuditTasks& a = audits_[audit];
  std::vector<size_t> out;
  out.reserve(a.queued.size() + a.leased.size());
  std::merge(a.queued.begin(), a.queued.end(), a.leased.begin(), a.leased.end(),
             std::back_inserter(out));
  return out;
}

const OwnerUsage* TaskIndex::usage(const std::string& owner) const {
  auto it = owners_.find(owner);
  return it == owners_.end() ? nullptr : &it->second;
}

}  // namespace memaudit::coordinator
