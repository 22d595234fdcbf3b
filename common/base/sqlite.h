// A thin RAII wrapper over SQLite, shared by the coordinator and scorer stores.
// Databases open in WAL mode with synchronous=FULL: a row is on disk before
// the RPC that wrote it is acknowledged. Opening a file checks it first
// (Database::Open): a damaged database is refused rather than served.
#ifndef MEMAUDIT_COMMON_BASE_SQLITE_H_
#define MEMAUDIT_COMMON_BASE_SQLITE_H_

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace memaudit::sql {

// A full disk (SQLITE_FULL) is RESOURCE_EXHAUSTED with this phrase opening
// its message (callers may prefix their own context). Messages survive gRPC
// (status_grpc.h), so either side of a call can tell a full disk, worth
// retrying once space is freed, from other RESOURCE_EXHAUSTED (a quota, a
// message over gRPC's size limit).
inline constexpr char kDiskFull[] = "disk full";
bool IsDiskFull(const absl::Status& status);

class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  ~Statement();

  // Parameters are 1-based, as in SQLite.
  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, double value);
  Statement& Bind(int index, absl::string_view text);
  Statement& BindBlob(int index, absl::string_view bytes);

  // Advances; true when a row is available, false when done.
  absl::StatusOr<bool> Step();
  // Runs a statement that returns no rows.
  absl::Status Run();
  void Reset();

  int64_t Int(int column) const;
  double Double(int column) const;
  std::string Text(int column) const;
  std::string Blob(int column) const;
  bool IsNull(int column) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

struct OpenOptions {
  // An existing file of 0 bytes is refused unless this is set: a truncated
  // database looks the same as one never written, and serving it would start
  // empty without a word. The services set it from their --init flag.
  bool init_empty_file = false;
};

class Database {
 public:
  // Opens a database file, or ":memory:". A file that does not exist is
  // created. An existing file must pass PRAGMA quick_check, else DATA_LOSS
  // naming the file, the first problems found and the remedy; an existing
  // 0-byte file is FAILED_PRECONDITION unless `options.init_empty_file`.
  static absl::StatusOr<std::unique_ptr<Database>> Open(const std::string& path,
                                                        OpenOptions options = {});
  ~Database();

  absl::Status Exec(absl::string_view sql);
  absl::StatusOr<Statement> Prepare(absl::string_view sql);
  int64_t Changes() const;
  int64_t LastInsertRowId() const;

 private:
  explicit Database(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

// Runs BEGIN IMMEDIATE ... COMMIT; rolls back unless Commit() succeeded.
class Transaction {
 public:
  explicit Transaction(Database* db);
  ~Transaction();
  absl::Status status() const { return begin_; }
  absl::Status Commit();

 private:
  Database* db_;
  absl::Status begin_;
  bool done_ = false;
};

// Brings `db` (at PRAGMA user_version v: the first v of `migrations`
// applied; a new file is at 0) up to all of them, each in a transaction of
// its own with its version. A database of a higher version, written by a
// newer `writer` ("coordinator"), is FAILED_PRECONDITION naming `path`: this
// one would not know its columns.
absl::Status Migrate(Database* db, const std::string& path,
                     absl::Span<const char* const> migrations, absl::string_view writer);

}  // namespace memaudit::sql

#endif  // MEMAUDIT_COMMON_BASE_SQLITE_H_
