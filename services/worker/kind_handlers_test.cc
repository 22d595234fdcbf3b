#include "gtest/gtest.h"
#include "services/worker/kind_handler.h"

namespace memaudit::worker {
namespace {

// Walks spec.proto's `oneof kind`: a kind added there without a worker
// handler fails here.
TEST(WorkerKindHandlersTest, EveryKindOfTheOneofHasAHandler) {
  ASSERT_FALSE(AllAuditKinds().empty());
  for (AuditKind kind : AllAuditKinds()) {
    EXPECT_NE(HandlerFor(kind), nullptr) << AuditKindName(kind);
  }
  EXPECT_EQ(HandlerFor(v1::AuditSpec::KIND_NOT_SET), nullptr);
}

TEST(WorkerKindHandlersTest, ARoleTheKindDoesNotHaveIsUnimplemented) {
  v1::Task task;
  task.set_role("no_such_role");
  task.mutable_spec()->mutable_membership();
  EXPECT_EQ(RunTask(task, [](const TrainingProgress&) { return true; }).status().code(),
            absl::StatusCode::kUnimplemented);
  task.mutable_spec()->mutable_forgetting();
  EXPECT_EQ(RunTask(task, [](const TrainingProgress&) { return true; }).status().code(),
            absl::StatusCode::kUnimplemented);
  task.mutable_spec()->clear_kind();
  EXPECT_EQ(RunTask(task, [](const TrainingProgress&) { return true; }).status().code(),
            absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace memaudit::worker
