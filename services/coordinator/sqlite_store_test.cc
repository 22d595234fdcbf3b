#include "services/coordinator/sqlite_store.h"

#include <unistd.h>

#include <fstream>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/test_specs.h"

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
  a.spec = spec::SmallMembershipSpec();
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
    EventRecord e{0, "a-1", 9, v1::SUBMITTED, "", "2 tasks"};
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
    m.events.push_back({0, "a-1", 10, v1::TASK_LEASED, leased.task_id, "attempt 2"});
    MEMAUDIT_ASSERT_OK((*store)->Commit(m));
  }
  auto store = SqliteStore::Open(path);
  MEMAUDIT_ASSERT_OK(store);
  auto audits = (*store)->LoadAudits();
  MEMAUDIT_ASSERT_OK(audits);
  ASSERT_EQ(audits->size(), 1u);
  EXPECT_EQ((*audits)[0].state, v1::RUNNING);
  EXPECT_EQ((*audits)[0].spec.SerializeAsString(), spec::SmallMembershipSpec().SerializeAsString());
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
  EXPECT_EQ((*events)[1].type, v1::TASK_LEASED);
  auto later = (*store)->EventsAfter("a-1", (*events)[0].sequence, 10);
  EXPECT_EQ(later->size(), 1u);
  unlink(path.c_str());
}

TEST(SqliteStoreTest, RoundTripsReleases) {
  auto store = SqliteStore::Open(":memory:");
  MEMAUDIT_ASSERT_OK(store);
  TaskRecord t = SomeTask(0);
  t.releases = 7;
  t.attempts = 1;
  MEMAUDIT_ASSERT_OK((*store)->CreateAudit(SomeAudit(), {t}, {}));
  auto tasks = (*store)->LoadTasks();
  MEMAUDIT_ASSERT_OK(tasks);
  ASSERT_EQ(tasks->size(), 1u);
  EXPECT_EQ((*tasks)[0].releases, 7u);
  Mutation m;
  t.releases = 8;
  m.tasks.push_back(t);
  MEMAUDIT_ASSERT_OK((*store)->Commit(m));
  EXPECT_EQ((*store)->LoadTasks()->at(0).releases, 8u);
}

int64_t UserVersion(const std::string& path) {
  auto db = sql::Database::Open(path);
  if (!db.ok()) return -1;
  auto stmt = (*db)->Prepare("PRAGMA user_version");
  if (!stmt.ok() || !stmt->Step().value_or(false)) return -1;
  return stmt->Int(0);
}

// A database written before `releases` existed (schema version 0, the
// tables as first released) is migrated in place and keeps its rows.
TEST(SqliteStoreTest, MigratesADatabaseOfTheFirstSchema) {
  const std::string path = ::testing::TempDir() + "/store_v0_" + std::to_string(getpid()) + ".db";
  unlink(path.c_str());
  {
    auto db = sql::Database::Open(path);
    MEMAUDIT_ASSERT_OK(db);
    MEMAUDIT_ASSERT_OK((*db)->Exec(R"sql(
CREATE TABLE audits (audit_id TEXT PRIMARY KEY, name TEXT NOT NULL, kind TEXT NOT NULL,
  state INTEGER NOT NULL, spec BLOB NOT NULL, created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL, error TEXT NOT NULL);
CREATE TABLE tasks (task_id TEXT PRIMARY KEY, audit_id TEXT NOT NULL REFERENCES audits(audit_id),
  role TEXT NOT NULL, idx INTEGER NOT NULL, state INTEGER NOT NULL, attempts INTEGER NOT NULL,
  steps_total INTEGER NOT NULL, steps_done INTEGER NOT NULL, lease_id TEXT NOT NULL,
  worker_id TEXT NOT NULL, lease_deadline_ms INTEGER NOT NULL, error TEXT NOT NULL);
CREATE TABLE events (sequence INTEGER PRIMARY KEY AUTOINCREMENT, audit_id TEXT NOT NULL,
  unix_ms INTEGER NOT NULL, type TEXT NOT NULL, task_id TEXT NOT NULL, message TEXT NOT NULL);
INSERT INTO audits VALUES ('a-1', 'n', 'membership', 2, x'', 5, 6, '');
INSERT INTO tasks VALUES ('a-1/reference_model/0', 'a-1', 'reference_model', 0, 1, 2, 40, 17,
  'l-x', 'w-y', 99, '');
)sql"));
  }
  EXPECT_EQ(UserVersion(path), 0);
  {
    auto store = SqliteStore::Open(path);
    MEMAUDIT_ASSERT_OK(store);
    auto tasks = (*store)->LoadTasks();
    MEMAUDIT_ASSERT_OK(tasks);
    ASSERT_EQ(tasks->size(), 1u);
    EXPECT_EQ((*tasks)[0].lease_id, "l-x");
    EXPECT_EQ((*tasks)[0].attempts, 2u);
    EXPECT_EQ((*tasks)[0].releases, 0u);
    EXPECT_EQ((*tasks)[0].expiries, 0u);
    TaskRecord t = (*tasks)[0];
    t.releases = 3;
    t.expiries = 2;
    Mutation m;
    m.tasks.push_back(t);
    MEMAUDIT_ASSERT_OK((*store)->Commit(m));
  }
  EXPECT_EQ(UserVersion(path), 4);
  // Opening again migrates nothing twice.
  auto store = SqliteStore::Open(path);
  MEMAUDIT_ASSERT_OK(store);
  EXPECT_EQ((*store)->LoadTasks()->at(0).releases, 3u);
  EXPECT_EQ((*store)->LoadTasks()->at(0).expiries, 2u);
  // An audit from before owners has none (administrators only) and no key.
  EXPECT_EQ((*store)->LoadAudits()->at(0).team, "");
  EXPECT_EQ((*store)->LoadAudits()->at(0).request_id, "");
  // Revoked worker identities (migration 4), kept once each.
  EXPECT_TRUE((*store)->LoadRevokedWorkers()->empty());
  MEMAUDIT_ASSERT_OK((*store)->AddRevokedWorker("w-1"));
  MEMAUDIT_ASSERT_OK((*store)->AddRevokedWorker("w-1"));
  EXPECT_THAT(*(*store)->LoadRevokedWorkers(), ::testing::ElementsAre("w-1"));
  EXPECT_EQ(UserVersion(path), 4);
  unlink(path.c_str());
}

TEST(SqliteStoreTest, RoundTripsTheOwnerAndRequestId) {
  auto store = SqliteStore::Open(":memory:");
  MEMAUDIT_ASSERT_OK(store);
  AuditRecord a = SomeAudit();
  a.team = "alpha";
  a.request_id = "req-1";
  MEMAUDIT_ASSERT_OK((*store)->CreateAudit(a, {}, {}));
  a.state = v1::CANCELLED;
  Mutation m;
  m.audit = a;
  MEMAUDIT_ASSERT_OK((*store)->Commit(m));
  auto audits = (*store)->LoadAudits();
  MEMAUDIT_ASSERT_OK(audits);
  ASSERT_EQ(audits->size(), 1u);
  EXPECT_EQ((*audits)[0].team, "alpha");
  EXPECT_EQ((*audits)[0].request_id, "req-1");
  EXPECT_EQ((*audits)[0].state, v1::CANCELLED);
  // One audit per (owner, request_id).
  AuditRecord twin = a;
  twin.audit_id = "a-2";
  EXPECT_FALSE((*store)->CreateAudit(twin, {}, {}).ok());
  twin.team = "beta";
  MEMAUDIT_EXPECT_OK((*store)->CreateAudit(twin, {}, {}));
}

TEST(SqliteStoreTest, ADatabaseOfANewerSchemaIsRefused) {
  const std::string path =
      ::testing::TempDir() + "/store_newer_" + std::to_string(getpid()) + ".db";
  unlink(path.c_str());
  MEMAUDIT_ASSERT_OK(SqliteStore::Open(path));
  {
    auto db = sql::Database::Open(path);
    MEMAUDIT_ASSERT_OK(db);
    MEMAUDIT_ASSERT_OK((*db)->Exec("PRAGMA user_version = 99"));
  }
  EXPECT_THAT(SqliteStore::Open(path),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(path), HasSubstr("schema version 99"))));
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
