#include "services/worker/task_runner.h"

#include <exception>
#include <new>
#include <string>
#include <typeinfo>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/worker/engine_access.h"
#include "services/worker/kind_handler.h"

namespace memaudit::worker {
namespace {

// The longest exception message kept: it ends up in the audit's error.
constexpr size_t kMaxMessage = 2000;

// what() without what LibTorch appends to a c10::Error (the source location
// and a backtrace of dozens of frames), capped at kMaxMessage.
std::string Message(const char* what) {
  std::string message = what == nullptr ? "" : what;
  if (const size_t cut = message.find("Exception raised from "); cut != std::string::npos) {
    message.resize(cut);
  }
  if (message.size() > kMaxMessage) message.resize(kMaxMessage);
  return std::string(absl::StripAsciiWhitespace(message));
}

// Whether `e` is the engine running out of host or device memory. The worker
// does not include LibTorch's headers, so c10::OutOfMemoryError (what CUDA's
// caching allocator throws) is recognised by its type's name; other
// allocation failures by their message: LibTorch's CPU allocator ("not
// enough memory"), CUDA runtime errors ("CUDA error: out of memory").
bool IsOutOfMemory(const std::exception& e) {
  if (absl::string_view(typeid(e).name()) == "N3c1016OutOfMemoryErrorE") return true;
  const std::string what = absl::AsciiStrToLower(e.what());
  return absl::StrContains(what, "out of memory") || absl::StrContains(what, "not enough memory");
}

}  // namespace

absl::Status UnknownRole(const v1::Task& task) {
  return absl::UnimplementedError(absl::StrCat("this worker cannot run role \"", task.role(),
                                               "\" of a ", AuditKindName(task.spec().kind_case()),
                                               " audit"));
}

absl::StatusOr<std::vector<v1::Observation>> RunTask(const v1::Task& task,
                                                     const ProgressCallback& on_progress,
                                                     const ObservationSink& send_early) {
  static const DataRoots* const kDefaultRoots = new DataRoots(DataRoots::Defaults());
  return RunTask(HandlerFor, *kDefaultRoots, task, on_progress, send_early);
}

absl::StatusOr<std::vector<v1::Observation>> RunTask(const HandlerLookup& handlers,
                                                     const DataRoots& roots, const v1::Task& task,
                                                     const ProgressCallback& on_progress,
                                                     const ObservationSink& send_early) {
  const KindHandler* kind = handlers(task.spec().kind_case());
  if (kind == nullptr) return UnknownRole(task);
  // The task boundary, the one place the worker catches: the engine throws
  // (c10::Error from LibTorch, std::bad_alloc, CUDA out of memory) from any
  // kind's run, and nothing thrown may unwind into the worker's loop.
  try {
    // Resolved here and now: a symlink changed since Submit, or data laid
    // out differently on this host, is judged as the engine would read it.
    if (absl::Status s = roots.CheckSpec(task.spec()); !s.ok()) return s;
    // LibTorch loads while the task reads its data (engine_access.h).
    PrepareEngine();
    return kind->Run(
        task,
        [&](uint64_t steps, uint64_t examples) {
          return on_progress({steps, examples});
        },
        send_early);
  } catch (...) {
    return StatusOfCurrentException(
        absl::StrCat(AuditKindName(task.spec().kind_case()), " task ", task.task_id()));
  }
}

absl::Status StatusOfCurrentException(absl::string_view context) {
  try {
    throw;
  } catch (const std::bad_alloc& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat(context, " ran out of memory: ", Message(e.what())));
  } catch (const std::exception& e) {
    if (IsOutOfMemory(e)) {
      return absl::ResourceExhaustedError(
          absl::StrCat(context, " ran out of memory: ", Message(e.what())));
    }
    return absl::InternalError(absl::StrCat(context, " threw: ", Message(e.what())));
  } catch (...) {
    return absl::InternalError(absl::StrCat(context, " threw an exception of unknown type"));
  }
}

}  // namespace memaudit::worker
