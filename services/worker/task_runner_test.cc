// The task boundary: what a kind handler's engine throws becomes a status,
// and Retryable splits statuses into transient and deterministic.
#include "services/worker/task_runner.h"

#include <c10/util/Exception.h>

#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/worker/kind_handler.h"

namespace memaudit::worker {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// A handler whose engine does `fail` (throws, or returns a status).
class FailingHandler : public KindHandler {
 public:
  explicit FailingHandler(std::function<absl::Status()> fail) : fail_(std::move(fail)) {}
  absl::StatusOr<std::vector<v1::Observation>> Run(const v1::Task&, const StepCallback&,
                                                   const ObservationSink&) const override {
    if (absl::Status s = fail_(); !s.ok()) return s;
    return std::vector<v1::Observation>{};
  }

 private:
  std::function<absl::Status()> fail_;
};

absl::StatusOr<std::vector<v1::Observation>> RunWith(std::function<absl::Status()> fail) {
  const FailingHandler handler(std::move(fail));
  v1::Task task;
  task.set_task_id("t-7");
  task.set_role("reference_model");
  task.mutable_spec()->mutable_membership();
  return RunTask([&](AuditKind) { return &handler; }, task,
                 [](const TrainingProgress&) { return true; }, nullptr);
}

TEST(TaskBoundaryTest, AnEngineExceptionIsADeterministicInternalError) {
  const auto result = RunWith([]() -> absl::Status { throw std::runtime_error("injected fault"); });
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kInternal, AllOf(HasSubstr("membership task t-7"),
                                                                  HasSubstr("injected fault"))));
  EXPECT_FALSE(Retryable(result.status()));
}

TEST(TaskBoundaryTest, BadAllocIsTransient) {
  const auto result = RunWith([]() -> absl::Status { throw std::bad_alloc(); });
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kResourceExhausted,
                               HasSubstr("membership task t-7 ran out of memory")));
  EXPECT_TRUE(Retryable(result.status()));
}

TEST(TaskBoundaryTest, LibTorchOutOfMemoryIsTransient) {
  // What CUDA's caching allocator throws, found by its type.
  auto cuda = RunWith([]() -> absl::Status {
    throw c10::OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB", "");
  });
  EXPECT_THAT(cuda, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("2.00 GiB")));
  EXPECT_TRUE(Retryable(cuda.status()));
  // LibTorch's CPU allocator throws a plain c10::Error, found by its message.
  auto cpu = RunWith([]() -> absl::Status {
    throw c10::Error("DefaultCPUAllocator: not enough memory: you tried to allocate 1 bytes.", "");
  });
  EXPECT_THAT(cpu, StatusIs(absl::StatusCode::kResourceExhausted));
  // A CUDA runtime error of the same cause.
  auto runtime =
      RunWith([]() -> absl::Status { throw c10::Error("CUDA error: out of memory", ""); });
  EXPECT_THAT(runtime, StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST(TaskBoundaryTest, ALibTorchErrorLosesItsBacktrace) {
  auto result = RunWith([]() -> absl::Status {
    throw c10::Error(c10::SourceLocation{"Forward", "engine/model.cc", 42},
                     "Expected all tensors to be on the same device");
  });
  EXPECT_THAT(result,
              StatusIs(absl::StatusCode::kInternal,
                       AllOf(HasSubstr("Expected all tensors to be on the same device"),
                             Not(HasSubstr("Exception raised from")), Not(HasSubstr("model.cc")))));
  EXPECT_FALSE(Retryable(result.status()));
}

TEST(TaskBoundaryTest, ANonStandardExceptionIsDeterministic) {
  const auto result = RunWith([]() -> absl::Status { throw 42; });
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kInternal, HasSubstr("unknown type")));
  EXPECT_FALSE(Retryable(result.status()));
}

TEST(TaskBoundaryTest, AReturnedStatusPassesUnchanged) {
  EXPECT_THAT(RunWith([] { return absl::InvalidArgumentError("membership.model.hidden: empty"); }),
              StatusIs(absl::StatusCode::kInvalidArgument, "membership.model.hidden: empty"));
  EXPECT_THAT(RunWith([] { return absl::OkStatus(); }), memaudit::testing::IsOk());
}

TEST(RetryableTest, OnlyTransientCodesAreRetried) {
  using Code = absl::StatusCode;
  for (Code code : {Code::kUnavailable, Code::kDeadlineExceeded, Code::kResourceExhausted,
                    Code::kAborted, Code::kCancelled}) {
    EXPECT_TRUE(Retryable(absl::Status(code, "x"))) << absl::StatusCodeToString(code);
  }
  for (Code code :
       {Code::kInvalidArgument, Code::kNotFound, Code::kAlreadyExists, Code::kPermissionDenied,
        Code::kFailedPrecondition, Code::kOutOfRange, Code::kUnimplemented, Code::kInternal,
        Code::kUnknown, Code::kDataLoss, Code::kUnauthenticated}) {
    EXPECT_FALSE(Retryable(absl::Status(code, "x"))) << absl::StatusCodeToString(code);
  }
}

}  // namespace
}  // namespace memaudit::worker
