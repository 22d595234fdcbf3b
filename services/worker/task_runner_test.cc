// The task boundary: what a kind handler's engine throws becomes a status,
// and ClassifyFailure splits statuses into transient and deterministic.
#include "services/worker/task_runner.h"

#include <c10/util/Exception.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "data/labeled_examples.h"
#include "engine/text_corpus.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/worker/failure_kind.h"
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
  return RunTask([&](AuditKind) { return &handler; }, DataRoots(), task,
                 [](const TrainingProgress&) { return true; }, nullptr);
}

TEST(TaskBoundaryTest, AnEngineExceptionIsADeterministicInternalError) {
  const auto result = RunWith([]() -> absl::Status { throw std::runtime_error("injected fault"); });
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kInternal, AllOf(HasSubstr("membership task t-7"),
                                                                  HasSubstr("injected fault"))));
  EXPECT_EQ(ClassifyFailure(result.status(), false).kind, v1::TASK_FINAL);
}

TEST(TaskBoundaryTest, BadAllocIsTransient) {
  const auto result = RunWith([]() -> absl::Status { throw std::bad_alloc(); });
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kResourceExhausted,
                               HasSubstr("membership task t-7 ran out of memory")));
  EXPECT_EQ(ClassifyFailure(result.status(), false).kind, v1::TASK_RETRYABLE);
}

TEST(TaskBoundaryTest, LibTorchOutOfMemoryIsTransient) {
  // What CUDA's caching allocator throws, found by its type.
  auto cuda = RunWith([]() -> absl::Status {
    throw c10::OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB", "");
  });
  EXPECT_THAT(cuda, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("2.00 GiB")));
  EXPECT_EQ(ClassifyFailure(cuda.status(), false).kind, v1::TASK_RETRYABLE);
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
  EXPECT_EQ(ClassifyFailure(result.status(), false).kind, v1::TASK_FINAL);
}

TEST(TaskBoundaryTest, ANonStandardExceptionIsDeterministic) {
  const auto result = RunWith([]() -> absl::Status { throw 42; });
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kInternal, HasSubstr("unknown type")));
  EXPECT_EQ(ClassifyFailure(result.status(), false).kind, v1::TASK_FINAL);
}

TEST(TaskBoundaryTest, AReturnedStatusPassesUnchanged) {
  EXPECT_THAT(RunWith([] { return absl::InvalidArgumentError("membership.model.hidden: empty"); }),
              StatusIs(absl::StatusCode::kInvalidArgument, "membership.model.hidden: empty"));
  EXPECT_THAT(RunWith([] { return absl::OkStatus(); }), memaudit::testing::IsOk());
}

// The worker reads the files a spec names, so it checks them itself, on its
// own host, before the handler runs: a path outside its data roots fails the
// task for good (INVALID_ARGUMENT) without the handler (the engine) running.
TEST(TaskDataRootsTest, APathOutsideTheRootsFailsTheTaskForGoodWithoutReadingIt) {
  namespace fs = std::filesystem;
  const fs::path base = fs::path(::testing::TempDir()) / absl::StrCat("wr-", getpid());
  fs::remove_all(base);
  fs::create_directories(base / "data" / "images");
  fs::create_directories(base / "outside");
  fs::create_directory_symlink(base / "outside", base / "data" / "escape");
  auto roots = DataRoots::Create({(base / "data").string()});
  MEMAUDIT_ASSERT_OK(roots);

  bool ran = false;
  const FailingHandler handler([&] {
    ran = true;
    return absl::OkStatus();
  });
  auto run = [&](const std::string& path) {
    ran = false;
    v1::Task task;
    task.set_task_id("t-1");
    task.set_role("reference_model");
    task.mutable_spec()->mutable_membership()->mutable_dataset()->set_path(path);
    return RunTask([&](AuditKind) { return &handler; }, *roots, task,
                   [](const TrainingProgress&) { return true; }, nullptr);
  };

  for (const std::string& outside :
       {std::string("/etc/shadow"), (base / "outside").string(),
        (base / "data" / ".." / "outside").string(), (base / "data" / "escape").string(),
        std::string("relative/images")}) {
    const auto result = run(outside);
    EXPECT_THAT(result, StatusIs(absl::StatusCode::kInvalidArgument,
                                 HasSubstr("membership.dataset.path: must")))
        << outside;
    EXPECT_FALSE(ran) << outside;
    EXPECT_EQ(ClassifyFailure(result.status(), false).kind, v1::TASK_FINAL);
  }
  // Inside, or empty (the built-in dataset): the handler runs.
  MEMAUDIT_EXPECT_OK(run((base / "data" / "images").string()));
  EXPECT_TRUE(ran);
  MEMAUDIT_EXPECT_OK(run(""));
  EXPECT_TRUE(ran);
  // Without roots, any file is refused.
  ran = false;
  v1::Task task;
  task.mutable_spec()->mutable_exposure()->mutable_corpus()->set_path(
      (base / "data" / "c.txt").string());
  EXPECT_THAT(RunTask([&](AuditKind) { return &handler; }, DataRoots(), task,
                      [](const TrainingProgress&) { return true; }, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("exposure.corpus.path: must lie under a data root")));
  EXPECT_FALSE(ran);
  fs::remove_all(base);
}

// common/ cannot include engine/: the default roots are the directories the
// engine reads when a spec leaves a path empty.
TEST(TaskDataRootsTest, TheDefaultRootsAreTheEnginesDefaultDirectories) {
  EXPECT_STREQ(kDefaultDataRoots[0], data::kFashionMnistDir);
  EXPECT_STREQ(kDefaultDataRoots[1], engine::kFortunesDir);
  EXPECT_EQ(std::size(kDefaultDataRoots), 2u);
}

}  // namespace
}  // namespace memaudit::worker
