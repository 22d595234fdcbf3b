#include "services/worker/task_runner.h"

#include "absl/strings/str_cat.h"
#include "services/worker/kind_handler.h"

namespace memaudit::worker {

absl::Status UnknownRole(const v1::Task& task) {
  return absl::UnimplementedError(absl::StrCat("this worker cannot run role \"", task.role(),
                                               "\" of a ", AuditKindName(task.spec().kind_case()),
                                               " audit"));
}

absl::StatusOr<std::vector<v1::Observation>> RunTask(const v1::Task& task,
                                                     const ProgressCallback& on_progress,
                                                     const ObservationSink& send_early) {
  const KindHandler* kind = HandlerFor(task.spec().kind_case());
  if (kind == nullptr) return UnknownRole(task);
  return kind->Run(
      task,
      [&](uint64_t steps, uint64_t examples) {
        return on_progress({steps, examples});
      },
      send_early);
}

bool Retryable(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kFailedPrecondition:
      return false;
    default:
      return true;
  }
}

}  // namespace memaudit::worker
