// Store on SQLite (WAL, synchronous=FULL).
#ifndef MEMAUDIT_SERVICES_COORDINATOR_SQLITE_STORE_H_
#define MEMAUDIT_SERVICES_COORDINATOR_SQLITE_STORE_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/base/sqlite.h"
#include "services/coordinator/store.h"

namespace memaudit::coordinator {

class SqliteStore : public Store {
 public:
  // Opens or creates the database and its tables; a damaged or empty file is
  // refused (sql::Database::Open).
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path,
                                                           sql::OpenOptions options = {});

  absl::Status CreateAudit(const AuditRecord& audit, const std::vector<TaskRecord>& tasks,
                           const std::vector<EventRecord>& events) override;
  absl::Status CommitAll(absl::Span<const Mutation> mutations) override;
  absl::StatusOr<std::vector<AuditRecord>> LoadAudits() override;
  absl::StatusOr<std::vector<TaskRecord>> LoadTasks() override;
  absl::StatusOr<std::vector<EventRecord>> EventsAfter(const std::string& audit_id,
                                                       uint64_t after_sequence, int limit) override;
  absl::Status AddRevokedWorker(const std::string& name) override;
  absl::StatusOr<std::vector<std::string>> LoadRevokedWorkers() override;

 private:
  explicit SqliteStore(std::unique_ptr<sql::Database> db) : db_(std::move(db)) {}
  absl::Status UpsertAudit(const AuditRecord& audit, bool insert_only)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `fresh`: the task is new (CreateAudit); else it is most likely stored
  // and is updated in place.
  absl::Status UpsertTask(const TaskRecord& task, bool fresh) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AppendEvent(const EventRecord& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The statement in `slot`, prepared on first use and reset for reuse:
  // parsing SQL costs more than running a one-row write.
  absl::StatusOr<sql::Statement*> Cached(std::optional<sql::Statement>* slot, const char* sql)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  const std::unique_ptr<sql::Database> db_ ABSL_PT_GUARDED_BY(mu_);
  std::optional<sql::Statement> insert_audit_ ABSL_GUARDED_BY(mu_);
  std::optional<sql::Statement> replace_audit_ ABSL_GUARDED_BY(mu_);
  std::optional<sql::Statement> upsert_task_ ABSL_GUARDED_BY(mu_);
  std::optional<sql::Statement> update_task_ ABSL_GUARDED_BY(mu_);
  std::optional<sql::Statement> append_event_ ABSL_GUARDED_BY(mu_);
};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_SQLITE_STORE_H_
