// The worker's one classifier: how a task's failure is reported (release,
// retry, or fail the audit) and when the worker must stop leasing.
#include "services/worker/failure_kind.h"

#include <c10/util/Exception.h>

#include <functional>
#include <new>
#include <stdexcept>
#include <vector>

#include "gtest/gtest.h"
#include "services/worker/task_runner.h"

namespace memaudit::worker {
namespace {

struct Case {
  absl::Status status;
  bool shutting_down;
  v1::FailureKind kind;
  bool device_unusable;
};

TEST(ClassifyFailureTest, MapsEveryStatusToItsVerdict) {
  using absl::StatusCode;
  const std::vector<Case> cases = {
      // Not the task's fault: the attempt is given back.
      {absl::CancelledError("worker w-1 shutting down"), true, v1::INTERRUPTED, false},
      {absl::UnavailableError("scorer: connection refused"), false, v1::INTERRUPTED, false},
      {absl::UnavailableError("scorer: connection refused"), true, v1::INTERRUPTED, false},
      {absl::DeadlineExceededError("ingest: deadline"), false, v1::INTERRUPTED, false},
      // Transient failures of the task: an attempt is spent.
      {absl::ResourceExhaustedError("ran out of memory"), false, v1::TASK_RETRYABLE, false},
      {absl::ResourceExhaustedError("CUDA error: out of memory"), false, v1::TASK_RETRYABLE, false},
      {absl::AbortedError("conflict"), false, v1::TASK_RETRYABLE, false},
      {absl::CancelledError("call cancelled"), false, v1::TASK_RETRYABLE, false},
      // A CUDA error: spent, and the worker stops leasing.
      {absl::InternalError("membership task t threw: CUDA error: an illegal memory access was "
                           "encountered"),
       false, v1::TASK_RETRYABLE, true},
      {absl::InternalError("threw: CUDA error: device-side assert triggered"), true,
       v1::TASK_RETRYABLE, true},
      {absl::InternalError("threw: CUDA driver error: unspecified launch failure"), false,
       v1::TASK_RETRYABLE, true},
      {absl::InternalError("threw: c10::AcceleratorError: misaligned address"), false,
       v1::TASK_RETRYABLE, true},
      // Deterministic: the audit fails at once.
      {absl::InternalError("threw: mat1 and mat2 shapes cannot be multiplied"), false,
       v1::TASK_FINAL, false},
      {absl::InternalError("threw: mat1 and mat2 shapes cannot be multiplied"), true,
       v1::TASK_FINAL, false},
      {absl::InvalidArgumentError("spec.model"), false, v1::TASK_FINAL, false},
      {absl::FailedPreconditionError("model diverged"), false, v1::TASK_FINAL, false},
      {absl::UnimplementedError("cannot run role"), false, v1::TASK_FINAL, false},
      {absl::NotFoundError("dataset file"), false, v1::TASK_FINAL, false},
      {absl::OutOfRangeError("index"), false, v1::TASK_FINAL, false},
      {absl::UnknownError("?"), false, v1::TASK_FINAL, false},
      {absl::DataLossError("truncated"), false, v1::TASK_FINAL, false},
      {absl::PermissionDeniedError("data root"), false, v1::TASK_FINAL, false},
  };
  for (const Case& c : cases) {
    const FailureVerdict v = ClassifyFailure(c.status, c.shutting_down);
    EXPECT_EQ(v.kind, c.kind) << c.status << " shutting_down=" << c.shutting_down << ": "
                              << v1::FailureKind_Name(v.kind);
    EXPECT_EQ(v.device_unusable, c.device_unusable) << c.status;
    EXPECT_EQ(IsStickyDeviceError(c.status), c.device_unusable) << c.status;
  }
}

// What the worker reports for a task whose engine throws: the status the
// task boundary (RunTask) makes of the exception, then the classifier.
FailureVerdict VerdictOnThrow(const std::function<void()>& thrown) {
  absl::Status status;
  try {
    thrown();
  } catch (...) {
    status = StatusOfCurrentException("membership task t-7");
  }
  EXPECT_FALSE(status.ok());
  return ClassifyFailure(status, /*shutting_down=*/false);
}

TEST(ClassifyFailureTest, EngineExceptionsAsTheWorkerSeesThem) {
  FailureVerdict v = VerdictOnThrow([] {
    throw c10::Error(
        "CUDA error: an illegal memory access was encountered\nCUDA kernel errors "
        "might be asynchronously reported",
        "");
  });
  EXPECT_EQ(v.kind, v1::TASK_RETRYABLE);
  EXPECT_TRUE(v.device_unusable);

  v = VerdictOnThrow(
      [] { throw std::runtime_error("CUDA error: an illegal memory access was encountered"); });
  EXPECT_EQ(v.kind, v1::TASK_RETRYABLE);
  EXPECT_TRUE(v.device_unusable);

  // Out of memory is the task's size against the machine, not a broken context.
  v = VerdictOnThrow([] { throw c10::Error("CUDA error: out of memory", ""); });
  EXPECT_EQ(v.kind, v1::TASK_RETRYABLE);
  EXPECT_FALSE(v.device_unusable);
  v = VerdictOnThrow(
      [] { throw c10::OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB", ""); });
  EXPECT_EQ(v.kind, v1::TASK_RETRYABLE);
  EXPECT_FALSE(v.device_unusable);
  v = VerdictOnThrow([] { throw std::bad_alloc(); });
  EXPECT_EQ(v.kind, v1::TASK_RETRYABLE);
  EXPECT_FALSE(v.device_unusable);

  // Any other exception is deterministic.
  v = VerdictOnThrow([] { throw c10::Error("mat1 and mat2 shapes cannot be multiplied", ""); });
  EXPECT_EQ(v.kind, v1::TASK_FINAL);
  EXPECT_FALSE(v.device_unusable);
  v = VerdictOnThrow([] { throw 42; });
  EXPECT_EQ(v.kind, v1::TASK_FINAL);
}

}  // namespace
}  // namespace memaudit::worker
