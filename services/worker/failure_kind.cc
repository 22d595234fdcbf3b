#include "services/worker/failure_kind.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace memaudit::worker {

bool IsStickyDeviceError(const absl::Status& status) {
  if (status.ok() || status.code() == absl::StatusCode::kResourceExhausted) return false;
  const std::string message = absl::AsciiStrToLower(status.message());
  if (absl::StrContains(message, "out of memory")) return false;
  return absl::StrContains(message, "cuda error") ||
         absl::StrContains(message, "cuda driver error") ||
         absl::StrContains(message, "acceleratorerror");
}

FailureVerdict ClassifyFailure(const absl::Status& status, bool shutting_down) {
  if (IsStickyDeviceError(status)) return {v1::TASK_RETRYABLE, /*device_unusable=*/true};
  switch (status.code()) {
    case absl::StatusCode::kCancelled:
      return {shutting_down ? v1::INTERRUPTED : v1::TASK_RETRYABLE, false};
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return {v1::INTERRUPTED, false};
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kAborted:
      return {v1::TASK_RETRYABLE, false};
    default:
      return {v1::TASK_FINAL, false};
  }
}

}  // namespace memaudit::worker
