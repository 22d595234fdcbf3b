#include "services/coordinator/sqlite_store.h"

#include <unistd.h>

#include <fstream>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/coordinator/test_specs.h"

namespace memaudit::coordinator {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

AuditRecord SomeAudit() {
  AuditRecord a;
  a.audit_id = "a-1";
  a.name = "n";
  a.kind = "membership";
  a.state = v1::RUNNING;
  a.spec = SmallMembershipSpec();
  a.created_ms = 5;
  a.updated_ms = 6;
  return a;
}

TaskRecord SomeTask(uint32_t index) {
  TaskRecord t;
  t.task_id = "a-1/reference_model/" + std::to_string(index);
  t.audit_id = "a-1";
  t.role = "reference_model";
  t.index = index;
  t.steps_total = 40;
  return t;
}

TEST(SqliteStoreTest, RoundTripsAuditsTasksAndEventsAcrossReopen) {
  const std::string path = ::testing::TempDir() + "/store_" + std::to_string(getpid()) + ".db";
  {
    auto store = SqliteStore::Open(path);
    MEMAUDIT_ASSERT_OK(store);
    EventRecord e{0, "a-1", 9, "submitted", "", "2 tasks"};
    MEMAUDIT_ASSERT_OK((*store)->CreateAudit(SomeAudit(), {SomeTask(0), SomeTask(1)}, {e}));
    TaskRecord leased = SomeTask(1);
    leased.state = TaskState::kLeased;
    leased.attempts = 2;
    leased.lease_id = "l-x";
    leased.worker_id = "w-y";
    leased.lease_deadline_ms = 123456789012;
    leased.steps_done = 17;
    Mutation m;
    m.tasks.push_back(leased);
    m.events.push_back({0, "a-1", 10, "task_leased", leased.task_id, "attempt 2"});
    MEMAUDIT_ASSERT_OK((*store)->Commit(m));
  }
  auto store = SqliteStore::Open(path);
  MEMAUDIT_ASSERT_OK(store);
  auto audits = (*store)->LoadAudits();
  MEMAUDIT_ASSERT_OK(audits);
  ASSERT_EQ(audits->size(), 1u);
  EXPECT_EQ((*audits)[0].state, v1::RUNNING);
  EXPECT_EQ((*audits)[0].spec.SerializeAsString(), SmallMembershipSpec().SerializeAsString());
  auto tasks = (*store)->LoadTasks();
  MEMAUDIT_ASSERT_OK(tasks);
  ASSERT_EQ(tasks->size(), 2u);
  const TaskRecord& t = (*tasks)[1];
  EXPECT_EQ(t.state, TaskState::kLeased);
  EXPECT_EQ(t.attempts, 2u);
  EXPECT_EQ(t.lease_id, "l-x");
  EXPECT_EQ(t.lease_deadline_ms, 123456789012);
  EXPECT_EQ(t.steps_done, 17u);
  auto events = (*store)->EventsAfter("a-1", 0, 10);
  MEMAUDIT_ASSERT_OK(events);
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[1].type, "task_leased");
  auto later = (*store)->EventsAfter("a-1", (*events)[0].sequence, 10);
  EXPECT_EQ(later->size(), 1u);
  unlink(path.c_str());
}

TEST(SqliteStoreTest, DuplicateAuditIsRefusedAndWritesNothing) {
  auto store = SqliteStore::Open(":memory:");
  MEMAUDIT_ASSERT_OK(store);
  MEMAUDIT_ASSERT_OK((*store)->CreateAudit(SomeAudit(), {SomeTask(0)}, {}));
  EXPECT_FALSE((*store)->CreateAudit(SomeAudit(), {SomeTask(5)}, {}).ok());
  EXPECT_EQ((*store)->LoadTasks()->size(), 1u);
}

TEST(SqliteStoreTest, EmptyFileIsRefusedUnlessInitialising) {
  const std::string path =
      ::testing::TempDir() + "/store_empty_" + std::to_string(getpid()) + ".db";
  std::ofstream(path).close();
  EXPECT_THAT(SqliteStore::Open(path), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                AllOf(HasSubstr(path), HasSubstr("--init"))));
  sql::OpenOptions init;
  init.init_empty_file = true;
  {
    auto store = SqliteStore::Open(path, init);
    MEMAUDIT_ASSERT_OK(store);
    MEMAUDIT_ASSERT_OK((*store)->CreateAudit(SomeAudit(), {SomeTask(0)}, {}));
  }
  auto store = SqliteStore::Open(path);
  MEMAUDIT_ASSERT_OK(store);
  EXPECT_EQ((*store)->LoadAudits()->size(), 1u);
  unlink(path.c_str());
}

}  // namespace
}  // namespace memaudit::coordinator
