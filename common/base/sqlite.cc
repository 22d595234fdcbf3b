#include "common/base/sqlite.h"

#include <sys/stat.h>

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/base/status_macros.h"

namespace memaudit::sql {
namespace {

absl::Status Error(sqlite3* db, absl::string_view what) {
  // The primary code: extended codes (off by default) refine it in the high bits.
  const int code = sqlite3_errcode(db) & 0xff;
  std::string message = absl::StrCat("sqlite ", what, ": ", sqlite3_errmsg(db));
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED) return absl::UnavailableError(message);
  // Only SQLITE_FULL: the unix VFS answers it for ENOSPC (and a short write),
  // and for max_page_count. SQLITE_IOERR_WRITE is every other failed write
  // (EIO, EDQUOT, ...), which freeing space need not cure.
  if (code == SQLITE_FULL) {
    return absl::ResourceExhaustedError(absl::StrCat(
        kDiskFull, " (", message,
        "): the disk holding the database or SQLite's temporary files has no room left; the "
        "write can be retried once space is freed"));
  }
  if (code == SQLITE_CONSTRAINT) return absl::AlreadyExistsError(message);
  if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) return absl::DataLossError(message);
  return absl::InternalError(message);
}

// At most this many of quick_check's problems are quoted in the refusal.
constexpr int kProblemsQuoted = 3;
constexpr size_t kProblemTextLimit = 400;

absl::Status Damaged(const std::string& path, absl::string_view problems) {
  return absl::DataLossError(absl::StrCat(
      "database ", path, " is damaged (PRAGMA quick_check: ", problems,
      "); refusing to start on it. Restore it from a backup, or move it aside to start with a "
      "new, empty database (the state it held is lost)."));
}

absl::Status EmptyFile(const std::string& path) {
  return absl::FailedPreconditionError(absl::StrCat(
      "database ", path,
      " is an empty file (0 bytes); refusing to start on it, since a database that lost its "
      "contents looks the same. If it is meant to be a new database, start again with --init "
      "(or delete the file); otherwise restore it from a backup."));
}

// "ok", or quick_check's first problems on one line. A database too damaged
// for quick_check to read at all answers DATA_LOSS itself.
absl::StatusOr<std::string> QuickCheck(Database* db) {
  MEMAUDIT_ASSIGN_OR_RETURN(Statement check,
                            db->Prepare(absl::StrCat("PRAGMA quick_check(", kProblemsQuoted, ")")));
  std::vector<std::string> rows;
  while (true) {
    MEMAUDIT_ASSIGN_OR_RETURN(bool row, check.Step());
    if (!row) break;
    rows.push_back(absl::StrReplaceAll(check.Text(0), {{"\n", "; "}}));
  }
  std::string report = absl::StrJoin(rows, "; ");
  if (report.size() > kProblemTextLimit) report = report.substr(0, kProblemTextLimit) + "...";
  return report;
}

}  // namespace

bool IsDiskFull(const absl::Status& status) {
  return absl::IsResourceExhausted(status) && absl::StrContains(status.message(), kDiskFull);
}

Statement::Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) {
  other.stmt_ = nullptr;
}

Statement::~Statement() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

Statement& Statement::Bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Statement& Statement::Bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}

Statement& Statement::Bind(int index, absl::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::BindBlob(int index, absl::string_view bytes) {
  sqlite3_bind_blob(stmt_, index, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  return *this;
}

absl::StatusOr<bool> Statement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return Error(db_, "step");
}

absl::Status Statement::Run() {
  MEMAUDIT_RETURN_IF_ERROR(Step().status());
  return absl::OkStatus();
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int64_t Statement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::Double(int column) const { return sqlite3_column_double(stmt_, column); }
bool Statement::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

std::string Statement::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(stmt_, column));
}

std::string Statement::Blob(int column) const {
  const void* data = sqlite3_column_blob(stmt_, column);
  if (data == nullptr) return "";
  return std::string(static_cast<const char*>(data), sqlite3_column_bytes(stmt_, column));
}

absl::StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path,
                                                         OpenOptions options) {
  struct stat file;
  if (path != ":memory:" && stat(path.c_str(), &file) == 0 && S_ISREG(file.st_mode) &&
      file.st_size == 0 && !options.init_empty_file) {
    return EmptyFile(path);
  }
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    if (db) sqlite3_close(db);
    if (rc == SQLITE_CANTOPEN) {
      message += " (does its directory exist, and may this user write it?)";
    }
    return absl::UnavailableError(absl::StrCat("cannot open database ", path, ": ", message));
  }
  std::unique_ptr<Database> database(new Database(db));
  sqlite3_busy_timeout(db, 5000);
  // Checked before anything writes to it; a new file passes trivially.
  absl::StatusOr<std::string> report = QuickCheck(database.get());
  // Too damaged for quick_check to read: SQLite's own words name the problem.
  if (absl::IsDataLoss(report.status())) return Damaged(path, sqlite3_errmsg(db));
  if (!report.ok()) {
    return absl::Status(report.status().code(),
                        absl::StrCat("checking database ", path, ": ", report.status().message()));
  }
  if (*report != "ok") return Damaged(path, *report);
  absl::Status pragmas =
      database->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;");
  if (absl::IsDataLoss(pragmas)) return Damaged(path, sqlite3_errmsg(db));
  MEMAUDIT_RETURN_IF_ERROR(pragmas);
  return database;
}

Database::~Database() { sqlite3_close(db_); }

absl::Status Database::Exec(absl::string_view sql) {
  std::string owned(sql);
  char* error = nullptr;
  if (sqlite3_exec(db_, owned.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    absl::Status status = Error(db_, error ? error : "exec");
    sqlite3_free(error);
    return status;
  }
  return absl::OkStatus();
}

absl::StatusOr<Statement> Database::Prepare(absl::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) !=
      SQLITE_OK) {
    return Error(db_, absl::StrCat("prepare '", sql, "'"));
  }
  return Statement(db_, stmt);
}

int64_t Database::Changes() const { return sqlite3_changes(db_); }
int64_t Database::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }

Transaction::Transaction(Database* db) : db_(db), begin_(db->Exec("BEGIN IMMEDIATE")) {}

Transaction::~Transaction() {
  if (begin_.ok() && !done_) db_->Exec("ROLLBACK").IgnoreError();
}

absl::Status Transaction::Commit() {
  if (!begin_.ok()) return begin_;
  absl::Status status = db_->Exec("COMMIT");
  done_ = status.ok();
  return status;
}

absl::Status Migrate(Database* db, const std::string& path,
                     absl::Span<const char* const> migrations, absl::string_view writer) {
  int64_t version = 0;
  {
    // Finalized before any migration writes.
    MEMAUDIT_ASSIGN_OR_RETURN(Statement read, db->Prepare("PRAGMA user_version"));
    MEMAUDIT_ASSIGN_OR_RETURN(const bool has_row, read.Step());
    if (has_row) version = read.Int(0);
  }
  const auto known = static_cast<int64_t>(migrations.size());
  if (version > known) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": schema version ", version, " was written by a newer ", writer,
                     " (this one ", "knows up to ", known, "); run that version or a newer one"));
  }
  for (int64_t v = version; v < known; ++v) {
    Transaction tx(db);
    MEMAUDIT_RETURN_IF_ERROR(tx.status());
    MEMAUDIT_RETURN_IF_ERROR(db->Exec(migrations[static_cast<size_t>(v)]));
    MEMAUDIT_RETURN_IF_ERROR(db->Exec(absl::StrCat("PRAGMA user_version = ", v + 1)));
    MEMAUDIT_RETURN_IF_ERROR(tx.Commit());
  }
  return absl::OkStatus();
}

}  // namespace memaudit::sql
