#include "services/scorer/scorer_store.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

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
};

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

absl::StatusOr<bool> ScorerStore::PutObservation(const v1::Observation& o) {
  absl::MutexLock lock(&mu_);
  auto insert = db_->Prepare("INSERT OR IGNORE INTO observations VALUES (?, ?, ?, ?, ?)");
  if (!insert.ok()) return insert.status();
  insert->Bind(1, o.audit_id()).Bind(2, int64_t{o.run()}).Bind(3, o.point()).Bind(4, o.signal());
  insert->BindBlob(5, PackDoubles(o.values()));
  if (absl::Status s = insert->Run(); !s.ok()) return s;
  return db_->Changes() > 0;
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
  // The oldest run with this key whose every required signal is stored, of
  // an audit whose runs may be reused by `for_audit_id`.
  std::string in_list;
  for (size_t i = 0; i < signals.size(); ++i) absl::StrAppend(&in_list, i ? ", ?" : "?");
  auto select = db_->Prepare(absl::StrCat(
      "SELECT k.audit_id, k.run FROM model_keys k JOIN audits a ON a.audit_id = k.audit_id "
      "WHERE k.key = ? AND k.audit_id <> ? AND a.reusable = 1 AND a.error = '' AND (? OR "
      "a.team = (SELECT team FROM audits WHERE audit_id = ?)) AND "
      "(SELECT COUNT(*) FROM observations o WHERE o.audit_id = k.audit_id AND o.run = k.run "
      "AND o.point = ? AND o.signal IN (",
      in_list, ")) = ? ORDER BY k.rowid LIMIT 1"));
  if (!select.ok()) return select.status();
  select->Bind(1, key).Bind(2, for_audit_id).Bind(3, int64_t{cross_team ? 1 : 0});
  select->Bind(4, for_audit_id).Bind(5, point);
  for (size_t i = 0; i < signals.size(); ++i) select->Bind(static_cast<int>(6 + i), signals[i]);
  select->Bind(static_cast<int>(6 + signals.size()), static_cast<int64_t>(signals.size()));
  absl::StatusOr<bool> row = select->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::nullopt;
  return StoredRun{select->Text(0), static_cast<uint32_t>(select->Int(1))};
}

absl::Status ScorerStore::CopyRun(const StoredRun& from, const std::string& to_audit_id,
                                  uint32_t to_run) {
  absl::MutexLock lock(&mu_);
  auto copy = db_->Prepare(
      "INSERT OR IGNORE INTO observations SELECT ?, ?, point, signal, vals FROM observations "
      "WHERE audit_id = ? AND run = ?");
  if (!copy.ok()) return copy.status();
  copy->Bind(1, to_audit_id).Bind(2, int64_t{to_run}).Bind(3, from.audit_id);
  copy->Bind(4, int64_t{from.run});
  return copy->Run();
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
    const std::string& audit_id, const std::vector<ObservationKey>& keys) {
  absl::MutexLock lock(&mu_);
  // The primary key's index answers each lookup without reading the values.
  auto select = db_->Prepare(
      "SELECT 1 FROM observations WHERE audit_id = ? AND run = ? AND point = ? AND signal = ?");
  if (!select.ok()) return select.status();
  std::vector<ObservationKey> missing;
  for (const ObservationKey& k : keys) {
    select->Reset();
    select->Bind(1, audit_id).Bind(2, int64_t{k.run}).Bind(3, k.point).Bind(4, k.signal);
    absl::StatusOr<bool> row = select->Step();
    if (!row.ok()) return row.status();
    if (!*row) missing.push_back(k);
  }
  return missing;
}

absl::Status ScorerStore::PutResults(const v1::AuditResults& results) {
  absl::MutexLock lock(&mu_);
  auto insert = db_->Prepare("INSERT OR REPLACE INTO results VALUES (?, ?)");
  if (!insert.ok()) return insert.status();
  insert->Bind(1, results.audit_id()).BindBlob(2, results.SerializeAsString());
  return insert->Run();
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
