// The scheduler's tasks and what it asks of them, kept up to date change by
// change so that no call walks every task: per audit, its counts by state,
// its steps and its queued and leased tasks; every lease by id and by
// deadline; and the totals the gauges and quotas read (per owner and in all).
//
// A task is known by its position: the order it was added in, which is its
// audit's order (the order audits were submitted) and then its index within
// the audit. An audit is known by its number: the order it was added in.
//
// A finished audit is retired: its task records leave memory (they stay in
// the store, where reports and events read them) and only its counts stay,
// so audits kept for months cost their counts, not their tasks.
// Nothing here decides or stores anything; the Scheduler tells the index
// each change it decides.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_TASK_INDEX_H_
#define MEMAUDIT_SERVICES_COORDINATOR_TASK_INDEX_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "services/coordinator/records.h"

namespace memaudit::coordinator {

inline constexpr size_t kTaskStates = 5;   // TaskState's values
inline constexpr size_t kAuditStates = 6;  // v1::AuditState's values, UNSPECIFIED included

// What one owner (AuditRecord.team) holds: the max_concurrent_audits and
// max_queued_tasks quotas and the per-team gauges read it.
struct OwnerUsage {
  std::array<uint64_t, kAuditStates> audits{};  // by v1::AuditState
  // Unfinished (queued or leased) tasks of its audits that are not terminal.
  uint64_t unfinished_tasks = 0;

  uint64_t active_audits() const { return audits[v1::QUEUED] + audits[v1::RUNNING]; }
};

// Everything, for the state gauges.
struct StateTotals {
  std::array<uint64_t, kTaskStates> tasks{};    // by TaskState
  std::array<uint64_t, kAuditStates> audits{};  // by v1::AuditState
  uint64_t queue_depth = 0;                     // queued tasks of audits not terminal
  uint64_t leases = 0;                          // leases held
};

// One audit's tasks.
struct AuditTasks {
  std::string owner;
  v1::AuditState state = v1::QUEUED;
  std::array<uint64_t, kTaskStates> by_state{};  // by TaskState
  uint64_t total = 0;
  uint64_t steps_total = 0;
  // As Get reports it: every step of a succeeded task, the reported
  // progress (at most its total) of a leased one.
  uint64_t steps_done = 0;
  std::set<size_t> queued;  // positions, lowest (earliest index) first
  std::set<size_t> leased;  // positions
  // Its tasks, at positions first, first + 1, ...; empty once retired.
  size_t first = 0;
  std::vector<TaskRecord> records;
  bool retired = false;

  // Whether a lease may take one of its tasks now.
  bool leasable() const { return !IsTerminal(state) && !queued.empty(); }
};

class TaskIndex {
 public:
  // A new audit with no tasks yet; returns its number.
  size_t AddAudit(const std::string& owner, v1::AuditState state);
  // A task of audit `audit` (its id not seen before), at the next position;
  // returns the position. A leased task keeps its lease_deadline_ms.
  size_t AddTask(size_t audit, TaskRecord task);

  size_t size() const { return audit_of_.size(); }
  size_t audits() const { return audits_.size(); }
  // Not for a task of a retired audit.
  const TaskRecord& task(size_t pos) const {
    const AuditTasks& a = audits_[audit_of_[pos]];
    return a.records[pos - a.first];
  }
  size_t audit_of(size_t pos) const { return audit_of_[pos]; }
  const AuditTasks& audit(size_t audit) const { return audits_[audit]; }
  std::optional<size_t> FindTask(const std::string& task_id) const;
  // The task holding lease `lease_id`, if it still does.
  std::optional<size_t> FindLease(const std::string& lease_id) const;

  // Task `pos` is now `task` (same id and audit); every index follows.
  void SetTask(size_t pos, TaskRecord task);
  // Audit `audit` is now in `state`.
  void SetAuditState(size_t audit, v1::AuditState state);
  // Drops the task records of `audit` (terminal, with no unfinished task)
  // from memory; its counts stay. Returns false, retiring nothing, when it
  // is not terminal or still has unfinished tasks.
  bool Retire(size_t audit);
  // Task records held in memory (those of audits not retired).
  size_t records() const { return by_id_.size(); }
  // A leased task's heartbeat: its progress and lease deadline, in memory.
  void Renew(size_t pos, uint64_t steps_done, int64_t lease_deadline_ms);
  // The tasks `worker_id` holds a lease on (a scan of every lease: rare).
  std::vector<size_t> LeasedBy(const std::string& worker_id) const;
  // Leased tasks whose deadline is at or before `now_ms`, earliest first.
  std::vector<size_t> ExpiredLeases(int64_t now_ms) const;
  // The unfinished (queued or leased) tasks of `audit`, in position order.
  std::vector<size_t> Unfinished(size_t audit) const;

  const StateTotals& totals() const { return totals_; }
  // nullptr for an owner of no audit.
  const OwnerUsage* usage(const std::string& owner) const;
  const std::map<std::string, OwnerUsage>& owners() const { return owners_; }

 private:
  // What task `pos` adds to its audit's and the totals (`sign` +1), or
  // takes away (-1).
  void Count(size_t pos, int sign);

  TaskRecord& mutable_task(size_t pos) {
    AuditTasks& a = audits_[audit_of_[pos]];
    return a.records[pos - a.first];
  }

  std::vector<size_t> audit_of_;  // by position
  std::vector<AuditTasks> audits_;
  std::vector<OwnerUsage*> usage_of_;  // by audit number; nodes of owners_
  std::map<std::string, OwnerUsage> owners_;
  absl::flat_hash_map<std::string, size_t> by_id_;
  absl::flat_hash_map<std::string, size_t> by_lease_;
  std::set<std::pair<int64_t, size_t>> by_deadline_;  // (lease_deadline_ms, position)
  StateTotals totals_;
};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_TASK_INDEX_H_
