#include "common/testing/kind_handlers.h"

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "services/worker/kind_handler.h"

namespace memaudit::worker {
namespace {

using ::memaudit::testing::StatusIs;

TEST(WorkerKindHandlersTest, EveryKindOfTheOneofHasAHandler) {
  memaudit::testing::ExpectAHandlerForEveryKind(&HandlerFor);
}

TEST(WorkerKindHandlersTest, ARoleTheKindDoesNotHaveIsUnimplemented) {
  v1::Task task;
  task.set_role("no_such_role");
  task.mutable_spec()->mutable_membership();
  EXPECT_THAT(RunTask(task, [](const TrainingProgress&) { return true; }),
              StatusIs(absl::StatusCode::kUnimplemented));
  task.mutable_spec()->mutable_forgetting();
  EXPECT_THAT(RunTask(task, [](const TrainingProgress&) { return true; }),
              StatusIs(absl::StatusCode::kUnimplemented));
  task.mutable_spec()->clear_kind();
  EXPECT_THAT(RunTask(task, [](const TrainingProgress&) { return true; }),
              StatusIs(absl::StatusCode::kUnimplemented));
}

}  // namespace
}  // namespace memaudit::worker
