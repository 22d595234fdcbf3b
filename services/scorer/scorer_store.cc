#include "services/scorer/scorer_store.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/security/capability.h"

namespace memaudit::scorer {
namespace {

constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS audits (
  audit_id TEXT PRIMARY KEY,
  spec BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS observations (
  audit_id TEXT NOT NULL REFERENCES audits(audit_id),
  run INTEGER NOT NULL,
  point TEXT NOT NULL,
  signal TEXT NOT NULL,
  vals BLOB NOT NULL,
  PRIMARY KEY (audit_id, run, point, signal));
CREATE TABLE IF NOT EXISTS results (
  audit_id TEXT PRIMARY KEY REFERENCES audits(audit_id),
  results BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS model_keys (
  audit_id TEXT NOT NULL REFERENCES audits(audit_id),
  run INTEGER NOT NULL,
  key TEXT NOT NULL,
  PRIMARY KEY (audit_id, run));
CREATE INDEX IF NOT EXISTS model_keys_by_key ON model_keys(key);
)sql";

// The changes made to kSchema since the first release, in order: a database
// at PRAGMA user_version v has had the first v applied (a new file starts at
// 0, like one written before user_version was kept). kSchema itself never
// changes; the reads and writes below name their columns.
constexpr const char* kMigrations[] = {
    // 1: the submitting team; whether the audit's runs may be reused (those
    // opened before observations needed capabilities may not: reusable 0);
    // why it cannot be scored.
    "ALTER TABLE audits ADD COLUMN team TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE audits ADD COLUMN reusable INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE audits ADD COLUMN error TEXT NOT NULL DEFAULT '';",
    // 2: who wrote each observation (its task, the lease its capability
    // named, the writer's identity; rows from before and copies: lease 0);
    // each task's current lease and whether it is open (0), sealed by its
    // Complete (1) or ended without one (2); revoked writers; where reused
    // runs came from; whether the audit was scored complete.
    "ALTER TABLE observations ADD COLUMN task TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE observations ADD COLUMN lease INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE observations ADD COLUMN writer TEXT NOT NULL DEFAULT '';"
    "CREATE INDEX observations_by_task ON observations(audit_id, task, lease);"
    "CREATE INDEX observations_by_writer ON observations(writer);"
    "CREATE TABLE task_leases (audit_id TEXT NOT NULL, task TEXT NOT NULL,"
    " lease INTEGER NOT NULL, writer TEXT NOT NULL, state INTEGER NOT NULL,"
    " PRIMARY KEY (audit_id, task));"
    "CREATE TABLE revoked_writers (writer TEXT PRIMARY KEY);"
    "CREATE TABLE reused_runs (audit_id TEXT NOT NULL, run INTEGER NOT NULL,"
    " from_audit_id TEXT NOT NULL, from_run INTEGER NOT NULL, from_task TEXT NOT NULL,"
    " from_lease INTEGER NOT NULL, from_writer TEXT NOT NULL, PRIMARY KEY (audit_id, run));"
    "ALTER TABLE audits ADD COLUMN scored INTEGER NOT NULL DEFAULT 0;",
};

// task_leases.state
constexpr int64_t kLeaseOpen = 0;
constexpr int64_t kLeaseSealed = 1;
constexpr int64_t kLeaseEnded = 2;

// Drops what the task's leases before `lease` stored (copies, lease 0,
// stay); returns how many observations went.
absl::StatusOr<int64_t> DropLeasesBefore(sql::Database* db, const std::string& audit_id,
                                         const std::string& task, int64_t lease) {
  auto drop = db->Prepare(
      "DELETE FROM observations WHERE audit_id = ? AND task = ? AND lease > 0 AND lease < ?");
  if (!drop.ok()) return drop.status();
  drop->Bind(1, audit_id).Bind(2, task).Bind(3, lease);
  MEMAUDIT_RETURN_IF_ERROR(drop->Run());
  return db->Changes();
}

// Makes `holder`'s lease the task's current one, in `state`.
absl::Status SetTaskLease(sql::Database* db, const std::string& audit_id, const std::string& task,
                          const LeaseHolder& holder, int64_t state) {
  auto set = db->Prepare("INSERT OR REPLACE INTO task_leases VALUES (?, ?, ?, ?, ?)");
  if (!set.ok()) return set.status();
  set->Bind(1, audit_id).Bind(2, task).Bind(3, int64_t{holder.lease}).Bind(4, holder.identity);
  set->Bind(5, state);
  return set->Run();
}

// Doubles are stored as their raw little-endian bytes: exact, and compact.
std::string PackDoubles(const google::protobuf::RepeatedField<double>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double));
}

std::vector<double> UnpackDoubles(const std::string& bytes) {
  std::vector<double> out(bytes.size() / sizeof(double));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(double));
  return out;
}

}  // namespace

std::string ObservationKey::ToString() const {
  return absl::StrCat("run ", run, " point ", point, " signal ", signal);
}

absl::StatusOr<std::unique_ptr<ScorerStore>> ScorerStore::Open(const std::string& path,
                                                               sql::OpenOptions options) {
  MEMAUDIT_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> db, sql::Database::Open(path, options));
  MEMAUDIT_RETURN_IF_ERROR(db->Exec(kSchema));
  MEMAUDIT_RETURN_IF_ERROR(sql::Migrate(db.get(), path, kMigrations, "scorer"));
  return std::unique_ptr<ScorerStore>(new ScorerStore(std::move(db)));
}

absl::Status ScorerStore::OpenAudit(const std::string& audit_id, const v1::AuditSpec& spec,
                                    const std::string& team) {
  absl::MutexLock lock(&mu_);
  const std::string bytes = spec.SerializeAsString();
  auto select = db_->Prepare("SELECT spec, team FROM audits WHERE audit_id = ?");
  if (!select.ok()) return select.status();
  select->Bind(1, audit_id);
  absl::StatusOr<bool> row = select->Step();
  if (!row.ok()) return row.status();
  if (*row) {
    if (select->Blob(0) == bytes && select->Text(1) == team) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("audit ", audit_id, " is already open with a different spec or team"));
  }
  auto insert =
      db_->Prepare("INSERT INTO audits (audit_id, spec, team, reusable) VALUES (?, ?, ?, 1)");
  if (!insert.ok()) return insert.status();
  insert->Bind(1, audit_id).BindBlob(2, bytes).Bind(3, team);
  return insert->Run();
}

absl::StatusOr<AuditInfo> ScorerStore::GetAuditInfo(const std::string& audit_id) {
  absl::MutexLock lock(&mu_);
  auto select = db_->Prepare("SELECT team, reusable, error FROM audits WHERE audit_id = ?");
  if (!select.ok()) return select.status();
  select->Bind(1, audit_id);
  absl::StatusOr<bool> row = select->Step();
  if (!row.ok()) return row.status();
  if (!*row) return absl::NotFoundError(absl::StrCat("unknown audit ", audit_id));
  return AuditInfo{select->Text(0), select->Int(1) != 0, select->Text(2)};
}

absl::Status ScorerStore::SetAuditError(const std::string& audit_id, const std::string& error) {
  absl::MutexLock lock(&mu_);
  auto update = db_->Prepare("UPDATE audits SET error = ? WHERE audit_id = ?");
  if (!update.ok()) return update.status();
  update->Bind(1, error).Bind(2, audit_id);
  return update->Run();
}

absl::StatusOr<std::optional<v1::AuditSpec>> ScorerStore::GetAudit(const std::string& audit_id) {
  absl::MutexLock lock(&mu_);
  auto select = db_->Prepare("SELECT spec FROM audits WHERE audit_id = ?");
  if (!select.ok()) return select.status();
  select->Bind(1, audit_id);
  absl::StatusOr<bool> row = select->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<v1::AuditSpec>();
  v1::AuditSpec spec;
  if (!spec.ParseFromString(select->Blob(0))) {
    return absl::DataLossError(absl::StrCat("audit ", audit_id, ": stored spec is corrupt"));
  }
  return std::optional<v1::AuditSpec>(std::move(spec));
}

absl::StatusOr<std::vector<std::string>> ScorerStore::ListAudits() {
  absl::MutexLock lock(&mu_);
  auto select = db_->Prepare("SELECT audit_id FROM audits ORDER BY audit_id");
  if (!select.ok()) return select.status();
  std::vector<std::string> out;
  while (true) {
    absl::StatusOr<bool> row = select->Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    out.push_back(select->Text(0));
  }
}

absl::Status ScorerStore::AdmitLeasedWrite(const std::string& audit_id,
                                           const ObservationWriter& w) {
  auto revoked = db_->Prepare("SELECT 1 FROM revoked_writers WHERE writer = ?");
  if (!revoked.ok()) return revoked.status();
  revoked->Bind(1, w.writer);
  MEMAUDIT_ASSIGN_OR_RETURN(const bool is_revoked, revoked->Step());
  if (is_revoked) {
    return absl::PermissionDeniedError(
        absl::StrCat(w.writer, " was revoked: its observations are refused"));
  }
  auto current =
      db_->Prepare("SELECT lease, state FROM task_leases WHERE audit_id = ? AND task = ?");
  if (!current.ok()) return current.status();
  current->Bind(1, audit_id).Bind(2, w.task);
  MEMAUDIT_ASSIGN_OR_RETURN(const bool known, current->Step());
  if (known) {
    const int64_t lease = current->Int(0);
    if (lease > w.lease) {
      return absl::PermissionDeniedError(
          absl::StrCat("lease ", w.lease, " of task ", w.task, " was superseded by lease ", lease));
    }
    if (lease == w.lease && current->Int(1) != kLeaseOpen) {
      return absl::PermissionDeniedError(
          absl::StrCat("lease ", w.lease, " of task ", w.task, " has ended (",
                       current->Int(1) == kLeaseSealed ? "completed" : "given back", ")"));
    }
    if (lease == w.lease) return absl::OkStatus();
  }
  // The task's first write under a new lease: what earlier leases stored is
  // dropped (copies, lease 0, stay), and this lease is the task's now.
  MEMAUDIT_RETURN_IF_ERROR(DropLeasesBefore(db_.get(), audit_id, w.task, w.lease).status());
  return SetTaskLease(db_.get(), audit_id, w.task, {w.lease, w.writer}, kLeaseOpen);
}

absl::StatusOr<bool> ScorerStore::PutObservation(const v1::Observation& o,
                                                 const ObservationWriter& w) {
  absl::MutexLock lock(&mu_);
  sql::Transaction tx(db_.get());
  MEMAUDIT_RETURN_IF_ERROR(tx.status());
  if (w.lease > 0) MEMAUDIT_RETURN_IF_ERROR(AdmitLeasedWrite(o.audit_id(), w));
  auto insert = db_->Prepare(
      "INSERT OR IGNORE INTO observations (audit_id, run, point, signal, vals, task, lease, "
      "writer) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  if (!insert.ok()) return insert.status();
  insert->Bind(1, o.audit_id()).Bind(2, int64_t{o.run()}).Bind(3, o.point()).Bind(4, o.signal());
  insert->BindBlob(5, PackDoubles(o.values()));
  insert->Bind(6, w.task).Bind(7, int64_t{w.lease}).Bind(8, w.writer);
  if (absl::Status s = insert->Run(); !s.ok()) return s;
  const bool stored = db_->Changes() > 0;
  MEMAUDIT_RETURN_IF_ERROR(tx.Commit());
  return stored;
}

absl::StatusOr<int64_t> ScorerStore::EndLease(const std::string& audit_id, const std::string& task,
                                              uint32_t lease) {
  absl::MutexLock lock(&mu_);
  sql::Transaction tx(db_.get());
  MEMAUDIT_RETURN_IF_ERROR(tx.status());
  auto current =
      db_->Prepare("SELECT lease, state, writer FROM task_leases WHERE audit_id = ? AND task = ?");
  if (!current.ok()) return current.status();
  current->Bind(1, audit_id).Bind(2, task);
  MEMAUDIT_ASSIGN_OR_RETURN(const bool known, current->Step());
  std::string writer;
  if (known) {
    // A later lease is the task's now; a sealed one stays sealed.
    if (current->Int(0) > lease) return 0;
    if (current->Int(0) == lease && current->Int(1) == kLeaseSealed) return 0;
    writer = current->Text(2);
  }
  MEMAUDIT_ASSIGN_OR_RETURN(const int64_t dropped,
                            DropLeasesBefore(db_.get(), audit_id, task, lease + 1));
  MEMAUDIT_RETURN_IF_ERROR(SetTaskLease(db_.get(), audit_id, task, {lease, writer}, kLeaseEnded));
  MEMAUDIT_RETURN_IF_ERROR(tx.Commit());
  return dropped;
}

absl::Status ScorerStore::SealLease(const std::string& audit_id, const std::string& task,
                                    uint32_t lease) {
  absl::MutexLock lock(&mu_);
  // A task whose every observation is a copy has no row yet: it gets one.
  auto seal = db_->Prepare(
      "INSERT INTO task_leases VALUES (?, ?, ?, '', 1) ON CONFLICT (audit_id, task) DO UPDATE "
      "SET state = 1 WHERE lease = excluded.lease AND state <> 2");
  if (!seal.ok()) return seal.status();
  seal->Bind(1, audit_id).Bind(2, task).Bind(3, int64_t{lease});
  return seal->Run();
}

absl::StatusOr<bool> ScorerStore::HasOpenLeases(const std::string& audit_id) {
  absl::MutexLock lock(&mu_);
  auto select = db_->Prepare("SELECT 1 FROM task_leases WHERE audit_id = ? AND state = 0 LIMIT 1");
  if (!select.ok()) return select.status();
  select->Bind(1, audit_id);
  return select->Step();
}

absl::StatusOr<int64_t> ScorerStore::RevokeWriter(const std::string& writer) {
  absl::MutexLock lock(&mu_);
  auto insert = db_->Prepare("INSERT OR IGNORE INTO revoked_writers VALUES (?)");
  if (!insert.ok()) return insert.status();
  insert->Bind(1, writer);
  MEMAUDIT_RETURN_IF_ERROR(insert->Run());
  auto count = db_->Prepare(
      "SELECT COUNT(*) FROM (SELECT DISTINCT audit_id, run FROM observations WHERE writer = ? "
      "AND lease > 0)");
  if (!count.ok()) return count.status();
  count->Bind(1, writer);
  MEMAUDIT_RETURN_IF_ERROR(count->Step().status());
  return count->Int(0);
}

absl::StatusOr<bool> ScorerStore::DropAudit(const std::string& audit_id, bool keep) {
  absl::MutexLock lock(&mu_);
  sql::Transaction tx(db_.get());
  MEMAUDIT_RETURN_IF_ERROR(tx.status());
  auto count = db_->Prepare("SELECT COUNT(*) FROM observations WHERE audit_id = ?");
  if (!count.ok()) return count.status();
  count->Bind(1, audit_id);
  MEMAUDIT_RETURN_IF_ERROR(count->Step().status());
  const bool empty = count->Int(0) == 0 && !keep;
  const char* const statements[] = {
      "DELETE FROM model_keys WHERE audit_id = ?", "DELETE FROM results WHERE audit_id = ?",
      "DELETE FROM reused_runs WHERE audit_id = ?", "DELETE FROM task_leases WHERE audit_id = ?",
      "DELETE FROM audits WHERE audit_id = ?"};
  if (empty) {
    for (const char* sql : statements) {
      auto drop = db_->Prepare(sql);
      if (!drop.ok()) return drop.status();
      drop->Bind(1, audit_id);
      MEMAUDIT_RETURN_IF_ERROR(drop->Run());
    }
  } else {
    auto keep = db_->Prepare("UPDATE audits SET reusable = 0 WHERE audit_id = ?");
    if (!keep.ok()) return keep.status();
    keep->Bind(1, audit_id);
    MEMAUDIT_RETURN_IF_ERROR(keep->Run());
  }
  MEMAUDIT_RETURN_IF_ERROR(tx.Commit());
  return empty;
}

absl::Status ScorerStore::PutModelKey(const std::string& audit_id, uint32_t run,
                                      const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto insert = db_->Prepare("INSERT OR REPLACE INTO model_keys VALUES (?, ?, ?)");
  if (!insert.ok()) return insert.status();
  insert->Bind(1, audit_id).Bind(2, int64_t{run}).Bind(3, key);
  return insert->Run();
}

absl::StatusOr<std::optional<StoredRun>> ScorerStore::FindStoredRun(
    const std::string& key, const std::string& for_audit_id, const std::string& point,
    const std::vector<std::string>& signals, bool cross_team) {
  absl::MutexLock lock(&mu_);
  // The oldest run with this key whose every required signal was written
  // under one sealed lease by a writer not revoked, of an audit scored
  // complete whose runs `for_audit_id` may reuse.
  std::string in_list;
  for (size_t i = 0; i < signals.size(); ++i) absl::StrAppend(&in_list, i ? ", ?" : "?");
  auto select = db_->Prepare(absl::StrCat(
      "SELECT k.audit_id, k.run, o.task, o.lease, o.writer FROM model_keys k "
      "JOIN audits a ON a.audit_id = k.audit_id "
      "JOIN observations o ON o.audit_id = k.audit_id AND o.run = k.run AND o.point = ? "
      "AND o.signal = ? "
      "JOIN task_leases t ON t.audit_id = o.audit_id AND t.task = o.task AND t.lease = o.lease "
      "AND t.state = 1 "
      "WHERE k.key = ? AND k.audit_id <> ? AND a.reusable = 1 AND a.error = '' AND a.scored = 1 "
      "AND (? OR a.team = (SELECT team FROM audits WHERE audit_id = ?)) AND o.lease > 0 "
      "AND o.writer NOT IN (SELECT writer FROM revoked_writers) AND "
      "(SELECT COUNT(*) FROM observations o2 WHERE o2.audit_id = k.audit_id AND o2.run = k.run "
      "AND o2.point = ? AND o2.lease = o.lease AND o2.signal IN (",
      in_list, ")) = ? ORDER BY k.rowid LIMIT 1"));
  if (!select.ok()) return select.status();
  if (signals.empty()) return std::nullopt;
  select->Bind(1, point).Bind(2, signals.front()).Bind(3, key).Bind(4, for_audit_id);
  select->Bind(5, int64_t{cross_team ? 1 : 0}).Bind(6, for_audit_id).Bind(7, point);
  int at = 8;
  for (const std::string& signal : signals) select->Bind(at++, signal);
  select->Bind(at, static_cast<int64_t>(signals.size()));
  absl::StatusOr<bool> row = select->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::nullopt;
  return StoredRun{select->Text(0), static_cast<uint32_t>(select->Int(1)), select->Text(2),
                   static_cast<uint32_t>(select->Int(3)), select->Text(4)};
}

absl::Status ScorerStore::CopyRun(const StoredRun& from, const std::string& to_audit_id,
                                  uint32_t to_run) {
  absl::MutexLock lock(&mu_);
  sql::Transaction tx(db_.get());
  MEMAUDIT_RETURN_IF_ERROR(tx.status());
  auto copy = db_->Prepare(
      "INSERT OR IGNORE INTO observations (audit_id, run, point, signal, vals, task, lease, "
      "writer) SELECT ?, ?, point, signal, vals, '', 0, writer FROM observations "
      "WHERE audit_id = ? AND run = ? AND lease = ?");
  if (!copy.ok()) return copy.status();
  copy->Bind(1, to_audit_id).Bind(2, int64_t{to_run}).Bind(3, from.audit_id);
  copy->Bind(4, int64_t{from.run}).Bind(5, int64_t{from.lease});
  MEMAUDIT_RETURN_IF_ERROR(copy->Run());
  auto record = db_->Prepare("INSERT OR REPLACE INTO reused_runs VALUES (?, ?, ?, ?, ?, ?, ?)");
  if (!record.ok()) return record.status();
  record->Bind(1, to_audit_id).Bind(2, int64_t{to_run}).Bind(3, from.audit_id);
  record->Bind(4, int64_t{from.run}).Bind(5, from.task).Bind(6, int64_t{from.lease});
  record->Bind(7, from.writer);
  MEMAUDIT_RETURN_IF_ERROR(record->Run());
  return tx.Commit();
}

absl::StatusOr<std::vector<v1::ReusedRun>> ScorerStore::ReusedRuns(const std::string& audit_id) {
  absl::MutexLock lock(&mu_);
  auto select = db_->Prepare(
      "SELECT run, from_audit_id, from_run, from_task, from_lease, from_writer FROM reused_runs "
      "WHERE audit_id = ? ORDER BY run");
  if (!select.ok()) return select.status();
  select->Bind(1, audit_id);
  std::vector<v1::ReusedRun> out;
  while (true) {
    absl::StatusOr<bool> row = select->Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    v1::ReusedRun& r = out.emplace_back();
    r.set_run(static_cast<uint32_t>(select->Int(0)));
    r.set_from_audit_id(select->Text(1));
    r.set_from_run(static_cast<uint32_t>(select->Int(2)));
    r.set_from_task(select->Text(3));
    r.set_from_lease(static_cast<uint32_t>(select->Int(4)));
    r.set_from_worker(select->Text(5));
  }
}

absl::StatusOr<std::map<uint32_t, std::vector<double>>> ScorerStore::LoadSignal(
    const std::string& audit_id, const std::string& point, const std::string& signal) {
  absl::MutexLock lock(&mu_);
  auto select = db_->Prepare(
      "SELECT run, vals FROM observations WHERE audit_id = ? AND point = ? AND signal = ?");
  if (!select.ok()) return select.status();
  select->Bind(1, audit_id).Bind(2, point).Bind(3, signal);
  std::map<uint32_t, std::vector<double>> out;
  while (true) {
    absl::StatusOr<bool> row = select->Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    out[static_cast<uint32_t>(select->Int(0))] = UnpackDoubles(select->Blob(1));
  }
}

absl::StatusOr<int64_t> ScorerStore::CountObservations(const std::string& audit_id) {
  absl::MutexLock lock(&mu_);
  auto select = db_->Prepare("SELECT COUNT(*) FROM observations WHERE audit_id = ?");
  if (!select.ok()) return select.status();
  select->Bind(1, audit_id);
  absl::StatusOr<bool> row = select->Step();
  if (!row.ok()) return row.status();
  return select->Int(0);
}

absl::StatusOr<std::vector<ObservationKey>> ScorerStore::MissingObservations(
    const std::string& audit_id, const std::vector<ObservationKey>& keys, uint32_t lease) {
  absl::MutexLock lock(&mu_);
  // The primary key's index answers each lookup without reading the values.
  auto select = db_->Prepare(
      "SELECT 1 FROM observations WHERE audit_id = ? AND run = ? AND point = ? AND signal = ? "
      "AND (?5 = 0 OR lease IN (0, ?5))");
  if (!select.ok()) return select.status();
  std::vector<ObservationKey> missing;
  for (const ObservationKey& k : keys) {
    select->Reset();
    select->Bind(1, audit_id).Bind(2, int64_t{k.run}).Bind(3, k.point).Bind(4, k.signal);
    select->Bind(5, int64_t{lease});
    absl::StatusOr<bool> row = select->Step();
    if (!row.ok()) return row.status();
    if (!*row) missing.push_back(k);
  }
  return missing;
}

absl::Status ScorerStore::PutResults(const v1::AuditResults& results) {
  absl::MutexLock lock(&mu_);
  sql::Transaction tx(db_.get());
  MEMAUDIT_RETURN_IF_ERROR(tx.status());
  auto insert = db_->Prepare("INSERT OR REPLACE INTO results VALUES (?, ?)");
  if (!insert.ok()) return insert.status();
  insert->Bind(1, results.audit_id()).BindBlob(2, results.SerializeAsString());
  MEMAUDIT_RETURN_IF_ERROR(insert->Run());
  if (results.complete()) {
    auto scored = db_->Prepare("UPDATE audits SET scored = 1 WHERE audit_id = ?");
    if (!scored.ok()) return scored.status();
    scored->Bind(1, results.audit_id());
    MEMAUDIT_RETURN_IF_ERROR(scored->Run());
  }
  return tx.Commit();
}

absl::StatusOr<std::optional<v1::AuditResults>> ScorerStore::GetResults(
    const std::string& audit_id) {
  absl::MutexLock lock(&mu_);
  auto select = db_->Prepare("SELECT results FROM results WHERE audit_id = ?");
  if (!select.ok()) return select.status();
  select->Bind(1, audit_id);
  absl::StatusOr<bool> row = select->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<v1::AuditResults>();
  v1::AuditResults results;
  if (!results.ParseFromString(select->Blob(0))) {
    return absl::DataLossError(absl::StrCat("audit ", audit_id, ": stored results are corrupt"));
  }
  return std::optional<v1::AuditResults>(std::move(results));
}

}  // namespace memaudit::scorer
