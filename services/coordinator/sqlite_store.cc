#include "services/coordinator/sqlite_store.h"

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/messages/event_types.h"

namespace memaudit::coordinator {
namespace {

constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS audits (
  audit_id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  state INTEGER NOT NULL,
  spec BLOB NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  error TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (
  task_id TEXT PRIMARY KEY,
  audit_id TEXT NOT NULL REFERENCES audits(audit_id),
  role TEXT NOT NULL,
  idx INTEGER NOT NULL,
  state INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  steps_total INTEGER NOT NULL,
  steps_done INTEGER NOT NULL,
  lease_id TEXT NOT NULL,
  worker_id TEXT NOT NULL,
  lease_deadline_ms INTEGER NOT NULL,
  error TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS tasks_by_audit ON tasks(audit_id, idx);
CREATE TABLE IF NOT EXISTS events (
  sequence INTEGER PRIMARY KEY AUTOINCREMENT,
  audit_id TEXT NOT NULL,
  unix_ms INTEGER NOT NULL,
  type TEXT NOT NULL,
  task_id TEXT NOT NULL,
  message TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS events_by_audit ON events(audit_id, sequence);
)sql";

// The changes made to kSchema since the first release, in order: a database
// at PRAGMA user_version v has had the first v applied (a new file starts at
// 0, like one written before user_version was kept). kSchema itself never
// changes; a new column or table is a new entry here, and the reads and
// writes below name their columns.
constexpr const char* kMigrations[] = {
    // 1: releases, the leases given back without the task failing.
    "ALTER TABLE tasks ADD COLUMN releases INTEGER NOT NULL DEFAULT 0;",
    // 2: the owner and the submitter's idempotency key; audits from before
    // have owner "" (administrators only) and no key.
    "ALTER TABLE audits ADD COLUMN team TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE audits ADD COLUMN request_id TEXT NOT NULL DEFAULT '';"
    "CREATE UNIQUE INDEX audits_by_request ON audits(team, request_id) WHERE request_id != '';",
    // 3: expiries, the leases lost to a silent worker.
    "ALTER TABLE tasks ADD COLUMN expiries INTEGER NOT NULL DEFAULT 0;",
    // 4: worker identities an administrator revoked.
    "CREATE TABLE revoked_workers (name TEXT PRIMARY KEY);",
};

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path,
                                                               sql::OpenOptions options) {
  MEMAUDIT_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> db, sql::Database::Open(path, options));
  MEMAUDIT_RETURN_IF_ERROR(db->Exec(kSchema));
  MEMAUDIT_RETURN_IF_ERROR(sql::Migrate(db.get(), path, kMigrations, "coordinator"));
  return std::unique_ptr<SqliteStore>(new SqliteStore(std::move(db)));
}

absl::StatusOr<sql::Statement*> SqliteStore::Cached(std::optional<sql::Statement>* slot,
                                                    const char* sql) {
  if (!slot->has_value()) {
    MEMAUDIT_ASSIGN_OR_RETURN(sql::Statement stmt, db_->Prepare(sql));
    slot->emplace(std::move(stmt));
  }
  (*slot)->Reset();
  return &**slot;
}

absl::Status SqliteStore::UpsertAudit(const AuditRecord& a, bool insert_only) {
  constexpr char kColumns[] =
      " INTO audits (audit_id, name, kind, state, spec, created_ms, updated_ms, error, team, "
      "request_id) VALUES (?,?,?,?,?,?,?,?,?,?)";
  static const std::string kInsert = absl::StrCat("INSERT", kColumns);
  static const std::string kReplace = absl::StrCat("INSERT OR REPLACE", kColumns);
  MEMAUDIT_ASSIGN_OR_RETURN(sql::Statement * stmt, insert_only
                                                       ? Cached(&insert_audit_, kInsert.c_str())
                                                       : Cached(&replace_audit_, kReplace.c_str()));
  stmt->Bind(1, a.audit_id).Bind(2, a.name).Bind(3, a.kind).Bind(4, int64_t{a.state});
  stmt->BindBlob(5, a.spec.SerializeAsString()).Bind(6, a.created_ms).Bind(7, a.updated_ms);
  stmt->Bind(8, a.error).Bind(9, a.team).Bind(10, a.request_id);
  return stmt->Run();
}

absl::Status SqliteStore::UpsertTask(const TaskRecord& t, bool fresh) {
  if (!fresh) {
    // A change of state rewrites the row in place: INSERT OR REPLACE would
    // delete it and insert it anew, rewriting every index of the table.
    MEMAUDIT_ASSIGN_OR_RETURN(
        sql::Statement * update,
        Cached(&update_task_,
               "UPDATE tasks SET state = ?, attempts = ?, steps_done = ?, lease_id = ?, "
               "worker_id = ?, lease_deadline_ms = ?, error = ?, releases = ?, expiries = ? "
               "WHERE task_id = ?"));
    update->Bind(1, static_cast<int64_t>(t.state)).Bind(2, int64_t{t.attempts});
    update->Bind(3, static_cast<int64_t>(t.steps_done)).Bind(4, t.lease_id).Bind(5, t.worker_id);
    update->Bind(6, t.lease_deadline_ms).Bind(7, t.error).Bind(8, int64_t{t.releases});
    update->Bind(9, int64_t{t.expiries}).Bind(10, t.task_id);
    MEMAUDIT_RETURN_IF_ERROR(update->Run());
    if (db_->Changes() > 0) return absl::OkStatus();
  }
  MEMAUDIT_ASSIGN_OR_RETURN(
      sql::Statement * stmt,
      Cached(&upsert_task_,
             "INSERT OR REPLACE INTO tasks (task_id, audit_id, role, idx, state, attempts, "
             "steps_total, steps_done, lease_id, worker_id, lease_deadline_ms, error, releases, "
             "expiries) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
  stmt->Bind(1, t.task_id).Bind(2, t.audit_id).Bind(3, t.role).Bind(4, int64_t{t.index});
  stmt->Bind(5, static_cast<int64_t>(t.state)).Bind(6, int64_t{t.attempts});
  stmt->Bind(7, static_cast<int64_t>(t.steps_total)).Bind(8, static_cast<int64_t>(t.steps_done));
  stmt->Bind(9, t.lease_id).Bind(10, t.worker_id).Bind(11, t.lease_deadline_ms).Bind(12, t.error);
  stmt->Bind(13, int64_t{t.releases}).Bind(14, int64_t{t.expiries});
  return stmt->Run();
}

absl::Status SqliteStore::AppendEvent(const EventRecord& e) {
  MEMAUDIT_ASSIGN_OR_RETURN(
      sql::Statement * stmt,
      Cached(&append_event_,
             "INSERT INTO events (audit_id, unix_ms, type, task_id, message) VALUES (?,?,?,?,?)"));
  stmt->Bind(1, e.audit_id).Bind(2, e.unix_ms).Bind(3, EventTypeName(e.type)).Bind(4, e.task_id);
  stmt->Bind(5, e.message);
  return stmt->Run();
}

absl::Status SqliteStore::CreateAudit(const AuditRecord& audit,
                                      const std::vector<TaskRecord>& tasks,
                                      const std::vector<EventRecord>& events) {
  absl::MutexLock lock(&mu_);
  sql::Transaction tx(db_.get());
  if (!tx.status().ok()) return tx.status();
  if (absl::Status s = UpsertAudit(audit, /*insert_only=*/true); !s.ok()) return s;
  for (const TaskRecord& t : tasks) {
    if (absl::Status s = UpsertTask(t, /*fresh=*/true); !s.ok()) return s;
  }
  for (const EventRecord& e : events) {
    if (absl::Status s = AppendEvent(e); !s.ok()) return s;
  }
  return tx.Commit();
}

absl::Status SqliteStore::CommitAll(absl::Span<const Mutation> mutations) {
  absl::MutexLock lock(&mu_);
  sql::Transaction tx(db_.get());
  if (!tx.status().ok()) return tx.status();
  for (const Mutation& m : mutations) {
    if (m.audit.has_value()) {
      if (absl::Status s = UpsertAudit(*m.audit, /*insert_only=*/false); !s.ok()) return s;
    }
    for (const TaskRecord& t : m.tasks) {
      if (absl::Status s = UpsertTask(t, /*fresh=*/false); !s.ok()) return s;
    }
    for (const EventRecord& e : m.events) {
      if (absl::Status s = AppendEvent(e); !s.ok()) return s;
    }
  }
  return tx.Commit();
}

absl::StatusOr<std::vector<AuditRecord>> SqliteStore::LoadAudits() {
  absl::MutexLock lock(&mu_);
  auto stmt = db_->Prepare(
      "SELECT audit_id, name, kind, state, spec, created_ms, updated_ms, error, team, request_id "
      "FROM audits ORDER BY created_ms, audit_id");
  if (!stmt.ok()) return stmt.status();
  std::vector<AuditRecord> out;
  while (true) {
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    AuditRecord a;
    a.audit_id = stmt->Text(0);
    a.name = stmt->Text(1);
    a.kind = stmt->Text(2);
    a.state = static_cast<v1::AuditState>(stmt->Int(3));
    if (!a.spec.ParseFromString(stmt->Blob(4))) {
      return absl::DataLossError(absl::StrCat("audit ", a.audit_id, ": stored spec is corrupt"));
    }
    a.created_ms = stmt->Int(5);
    a.updated_ms = stmt->Int(6);
    a.error = stmt->Text(7);
    a.team = stmt->Text(8);
    a.request_id = stmt->Text(9);
    out.push_back(std::move(a));
  }
  return out;
}

absl::StatusOr<std::vector<TaskRecord>> SqliteStore::LoadTasks() {
  absl::MutexLock lock(&mu_);
  auto stmt = db_->Prepare(
      "SELECT t.task_id, t.audit_id, t.role, t.idx, t.state, t.attempts, t.steps_total, "
      "t.steps_done, t.lease_id, t.worker_id, t.lease_deadline_ms, t.error, t.releases, "
      "t.expiries "
      "FROM tasks t "
      "JOIN audits a ON a.audit_id = t.audit_id ORDER BY a.created_ms, a.audit_id, t.idx");
  if (!stmt.ok()) return stmt.status();
  std::vector<TaskRecord> out;
  while (true) {
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    TaskRecord t;
    t.task_id = stmt->Text(0);
    t.audit_id = stmt->Text(1);
    t.role = stmt->Text(2);
    t.index = static_cast<uint32_t>(stmt->Int(3));
    t.state = static_cast<TaskState>(stmt->Int(4));
    t.attempts = static_cast<uint32_t>(stmt->Int(5));
    t.steps_total = static_cast<uint64_t>(stmt->Int(6));
    t.steps_done = static_cast<uint64_t>(stmt->Int(7));
    t.lease_id = stmt->Text(8);
    t.worker_id = stmt->Text(9);
    t.lease_deadline_ms = stmt->Int(10);
    t.error = stmt->Text(11);
    t.releases = static_cast<uint32_t>(stmt->Int(12));
    t.expiries = static_cast<uint32_t>(stmt->Int(13));
    out.push_back(std::move(t));
  }
  return out;
}

absl::Status SqliteStore::AddRevokedWorker(const std::string& name) {
  absl::MutexLock lock(&mu_);
  auto stmt = db_->Prepare("INSERT OR IGNORE INTO revoked_workers VALUES (?)");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, name);
  return stmt->Run();
}

absl::StatusOr<std::vector<std::string>> SqliteStore::LoadRevokedWorkers() {
  absl::MutexLock lock(&mu_);
  auto stmt = db_->Prepare("SELECT name FROM revoked_workers ORDER BY name");
  if (!stmt.ok()) return stmt.status();
  std::vector<std::string> out;
  while (true) {
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    out.push_back(stmt->Text(0));
  }
}

absl::StatusOr<std::vector<EventRecord>> SqliteStore::EventsAfter(const std::string& audit_id,
                                                                  uint64_t after_sequence,
                                                                  int limit) {
  absl::MutexLock lock(&mu_);
  auto stmt = db_->Prepare(
      "SELECT sequence, audit_id, unix_ms, type, task_id, message FROM events "
      "WHERE audit_id = ? AND sequence > ? ORDER BY sequence LIMIT ?");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, audit_id).Bind(2, static_cast<int64_t>(after_sequence)).Bind(3, int64_t{limit});
  std::vector<EventRecord> out;
  while (true) {
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    EventRecord e;
    e.sequence = static_cast<uint64_t>(stmt->Int(0));
    e.audit_id = stmt->Text(1);
    e.unix_ms = stmt->Int(2);
    e.type = EventTypeByName(stmt->Text(3));
    e.task_id = stmt->Text(4);
    e.message = stmt->Text(5);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace memaudit::coordinator
