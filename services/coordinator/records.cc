#include "services/coordinator/records.h"

namespace memaudit::coordinator {

const char* TaskStateName(TaskState state) {
  switch (state) {
    case TaskState::kQueued:
      return "queued";
    case TaskState::kLeased:
      return "running";
    case TaskState::kSucceeded:
      return "succeeded";
    case TaskState::kFailed:
      return "failed";
    case TaskState::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

uint32_t LeaseNumber(const TaskRecord& task) {
  return task.attempts + task.releases + task.expiries;
}

bool IsTerminal(v1::AuditState state) {
  return state == v1::SUCCEEDED || state == v1::FAILED || state == v1::CANCELLED;
}

}  // namespace memaudit::coordinator
