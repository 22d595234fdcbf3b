// The coordinator's persistent state: audits, their tasks, and an append-only
// event log that Watch replays.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_RECORDS_H_
#define MEMAUDIT_SERVICES_COORDINATOR_RECORDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memaudit/v1/audit.pb.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit::coordinator {

enum class TaskState { kQueued = 0, kLeased = 1, kSucceeded = 2, kFailed = 3, kCancelled = 4 };

struct TaskRecord {
  std::string task_id;
  std::string audit_id;
  std::string role;
  uint32_t index = 0;
  TaskState state = TaskState::kQueued;
  // Leases that ended in a failure of the task; a release or an expiry
  // within its cap does not count (its lease's increment is given back).
  uint32_t attempts = 0;
  // Leases the worker gave back without the task failing (FailureKind
  // INTERRUPTED: shutdown, the scorer or coordinator unreachable).
  uint32_t releases = 0;
  // Leases that expired (the worker went silent past the TTL).
  uint32_t expiries = 0;
  uint64_t steps_total = 0;
  uint64_t steps_done = 0;
  std::string lease_id;
  std::string worker_id;
  int64_t lease_deadline_ms = 0;
  std::string error;
};

struct AuditRecord {
  std::string audit_id;
  std::string name;
  std::string kind;
  v1::AuditState state = v1::QUEUED;
  v1::AuditSpec spec;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
  std::string error;
  // The owner: the name of the caller that submitted it (a team's, or an
  // administrator's). "" for audits stored before owners were kept: only
  // administrators see those.
  std::string team;
  // The submitter's idempotency key (SubmitRequest.request_id); "" = none.
  // Unique per owner.
  std::string request_id;
};

struct EventRecord {
  uint64_t sequence = 0;  // assigned by the store
  std::string audit_id;
  int64_t unix_ms = 0;
  v1::EventType type = v1::EVENT_TYPE_UNSPECIFIED;  // stored by name (event_types.h)
  std::string task_id;
  std::string message;
};

// Everything one scheduler decision changes, written in one transaction.
struct Mutation {
  std::vector<TaskRecord> tasks;
  std::optional<AuditRecord> audit;
  std::vector<EventRecord> events;
};

const char* TaskStateName(TaskState state);
// The number of the task's current (or last) lease: 1 for its first, one
// more for each lease after it. Each lease adds one to `attempts` when
// granted and ends by keeping it (complete, failure, a give-back past its
// cap) or trading it for one release or expiry, so this sum grows by exactly
// one per lease and needs no column of its own. Capabilities carry it, so
// the scorer can tell a stale lease's writes from the current one's.
uint32_t LeaseNumber(const TaskRecord& task);
bool IsTerminal(v1::AuditState state);

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_RECORDS_H_
