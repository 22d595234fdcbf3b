// What the worker tells the coordinator about a task it could not finish:
// the one place that maps a task's failure to the coordinator's verdict
// (v1::FailureKind in worker.proto) and decides whether the worker itself
// may go on.
#ifndef MEMAUDIT_SERVICES_WORKER_FAILURE_KIND_H_
#define MEMAUDIT_SERVICES_WORKER_FAILURE_KIND_H_

#include "absl/status/status.h"
#include "memaudit/v1/worker.pb.h"

namespace memaudit::worker {

struct FailureVerdict {
  v1::FailureKind kind = v1::TASK_FINAL;
  // The error may have left this process's CUDA context unusable: the
  // worker reports the task, then stops leasing and exits non-zero so that
  // its supervisor starts a fresh process.
  bool device_unusable = false;
};

// The verdict on a task that ended with `status` (not OK).
// `shutting_down`: the worker was told to stop (Stop(), SIGTERM) while the
// task ran, which is how its CANCELLED came about.
//
//   status                                 kind            why
//   CANCELLED while shutting down          INTERRUPTED     preemption, a restart
//   UNAVAILABLE, DEADLINE_EXCEEDED         INTERRUPTED     the scorer or coordinator
//                                                          unreachable after the
//                                                          RPC's own retries
//   a CUDA error other than out of memory  TASK_RETRYABLE  maybe the task's, maybe
//   (IsStickyDeviceError)                  + device_unusable  the device's
//   RESOURCE_EXHAUSTED                     TASK_RETRYABLE  host or GPU memory: it
//                                                          depends on what else
//                                                          the machine runs
//   ABORTED; CANCELLED otherwise           TASK_RETRYABLE  a call abandoned midway
//   anything else                          TASK_FINAL      the same spec, seeds and
//                                                          code fail the same way
//                                                          every time
//
// "Anything else" is INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION (a
// diverged model), UNIMPLEMENTED, OUT_OF_RANGE, INTERNAL (an engine
// exception), UNKNOWN, DATA_LOSS, ... INTERRUPTED gives the attempt back
// (the coordinator re-queues the task without counting it); TASK_RETRYABLE
// spends it; TASK_FINAL fails the audit.
FailureVerdict ClassifyFailure(const absl::Status& status, bool shutting_down);

// Whether `status` reports a CUDA error other than running out of memory: an
// illegal memory access, a device-side assert, a launch failure. CUDA errors
// are sticky: the process's context stays broken, and every later task on it
// fails too. RunTask turns the exception (c10::Error, or c10::AcceleratorError
// in newer LibTorch) into INTERNAL with its message, which starts "CUDA
// error:" (or "CUDA driver error:"); out of memory is RESOURCE_EXHAUSTED.
bool IsStickyDeviceError(const absl::Status& status);

}  // namespace memaudit::worker

#endif  // MEMAUDIT_SERVICES_WORKER_FAILURE_KIND_H_
