// The scorer's SQLite state: audit plans, raw observations (one row per
// (audit, run, point, signal), so a re-sent observation is stored once) and
// computed results.
#ifndef MEMAUDIT_SERVICES_SCORER_SCORER_STORE_H_
#define MEMAUDIT_SERVICES_SCORER_SCORER_STORE_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/base/sqlite.h"
#include "memaudit/v1/results.pb.h"
#include "memaudit/v1/scorer.pb.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit::scorer {

// One model's observations inside an audit, and who trained them: the task
// and lease they were written under and the identity that wrote them.
struct StoredRun {
  std::string audit_id;
  uint32_t run = 0;
  std::string task;  // "reference_model 3"
  uint32_t lease = 0;
  std::string writer;  // "worker w-0"
};

// Who sends an observation: the task it belongs to, the lease its capability
// names and the caller's identity. Lease 0 = no lease: written by the scorer
// itself (a copy) or by a test.
struct ObservationWriter {
  std::string task;  // TaskRef::ToString
  uint32_t lease = 0;
  std::string writer;  // Identity::ToString
};

// Where one observation is stored within its audit.
struct ObservationKey {
  uint32_t run = 0;
  std::string point;
  std::string signal;
  // "run 3 point final signal phi"
  std::string ToString() const;
};

// What the scorer holds about an audit besides its spec.
struct AuditInfo {
  // The team that submitted it ("" for audits from before teams).
  std::string team;
  // Whether its runs may be reused: opened since observations need
  // capabilities (audits stored before are not, their writers unknown).
  bool reusable = false;
  // Why it cannot be scored; empty while it can.
  std::string error;
};

class ScorerStore {
 public:
  // Opens or creates the database and its tables, migrating an older one
  // (PRAGMA user_version); a damaged or empty file is refused
  // (sql::Database::Open), and so is one written by a newer scorer.
  static absl::StatusOr<std::unique_ptr<ScorerStore>> Open(const std::string& path,
                                                           sql::OpenOptions options = {});

  // OK when new or identical to the stored spec and team; FAILED_PRECONDITION
  // when the id is taken by a different spec or team. A new audit is
  // reusable (AuditInfo).
  absl::Status OpenAudit(const std::string& audit_id, const v1::AuditSpec& spec,
                         const std::string& team = "");
  absl::StatusOr<std::optional<v1::AuditSpec>> GetAudit(const std::string& audit_id);
  // NOT_FOUND for an audit never opened.
  absl::StatusOr<AuditInfo> GetAuditInfo(const std::string& audit_id);
  // Marks the audit as one that cannot be scored, for `error`.
  absl::Status SetAuditError(const std::string& audit_id, const std::string& error);
  absl::StatusOr<std::vector<std::string>> ListAudits();

  // True when stored now, false when it was already there. With a lease:
  // PERMISSION_DENIED when the writer was revoked, when a later lease of the
  // task exists, or when this lease ended (completed or given back); the
  // first write of a later lease drops what earlier leases of the task
  // stored, all in one transaction.
  absl::StatusOr<bool> PutObservation(const v1::Observation& observation,
                                      const ObservationWriter& writer = {});
  // The task's lease ended without a Complete: drops its observations and
  // refuses further writes under it (nothing when a later lease exists, or
  // it was sealed). Returns the observations dropped.
  absl::StatusOr<int64_t> EndLease(const std::string& audit_id, const std::string& task,
                                   uint32_t lease);
  // Seals `lease` of the task: it completed with every observation stored,
  // nothing more is written under it, and its runs may be reused.
  absl::Status SealLease(const std::string& audit_id, const std::string& task, uint32_t lease);
  // Whether a lease of the audit is open: its observations may still be
  // superseded, so the audit's results cannot be final yet.
  absl::StatusOr<bool> HasOpenLeases(const std::string& audit_id);
  // Refuses `writer`'s observations from now on; its runs are no longer
  // reused. Returns how many runs it wrote.
  absl::StatusOr<int64_t> RevokeWriter(const std::string& writer);
  // Forgets an audit with no observations (true) unless `keep`; one with
  // some, or kept, stays, no longer a source of reuse (false).
  absl::StatusOr<bool> DropAudit(const std::string& audit_id, bool keep = false);
  // run -> values for one (audit, point, signal).
  absl::StatusOr<std::map<uint32_t, std::vector<double>>> LoadSignal(const std::string& audit_id,
                                                                     const std::string& point,
                                                                     const std::string& signal);
  // Content keys (common/messages/content_key.h) of an audit's runs.
  absl::Status PutModelKey(const std::string& audit_id, uint32_t run, const std::string& key);
  // The oldest run with this key and all of `signals` stored at `point`, of
  // another audit than `for_audit_id` that is reusable, was scored complete
  // without error, and belongs to the same team as `for_audit_id` (any team
  // with `cross_team`), whose observations were written under a lease that
  // was sealed (its task completed) by a writer not revoked; never a copy.
  // nullopt when none.
  absl::StatusOr<std::optional<StoredRun>> FindStoredRun(const std::string& key,
                                                         const std::string& for_audit_id,
                                                         const std::string& point,
                                                         const std::vector<std::string>& signals,
                                                         bool cross_team = false);
  // Copies every observation of `from` into (to_audit_id, to_run), as a
  // copy (lease 0), and records where it came from (ReusedRuns).
  absl::Status CopyRun(const StoredRun& from, const std::string& to_audit_id, uint32_t to_run);
  // The runs of `audit_id` copied from earlier audits, with their provenance.
  absl::StatusOr<std::vector<v1::ReusedRun>> ReusedRuns(const std::string& audit_id);

  absl::StatusOr<int64_t> CountObservations(const std::string& audit_id);
  // Those of `keys` not stored for `audit_id`, in order; with `lease` > 0
  // only observations written under that lease (or copies) count.
  absl::StatusOr<std::vector<ObservationKey>> MissingObservations(
      const std::string& audit_id, const std::vector<ObservationKey>& keys, uint32_t lease = 0);

  // Complete results also mark the audit scored (a condition of reuse).
  absl::Status PutResults(const v1::AuditResults& results);
  absl::StatusOr<std::optional<v1::AuditResults>> GetResults(const std::string& audit_id);

 private:
  explicit ScorerStore(std::unique_ptr<sql::Database> db) : db_(std::move(db)) {}
  // The PERMISSION_DENIED PutObservation answers for a write under `w`, or
  // OK after making `w.lease` the task's current lease.
  absl::Status AdmitLeasedWrite(const std::string& audit_id, const ObservationWriter& w)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Mutex mu_;
  const std::unique_ptr<sql::Database> db_ ABSL_PT_GUARDED_BY(mu_);
};

}  // namespace memaudit::scorer

#endif  // MEMAUDIT_SERVICES_SCORER_SCORER_STORE_H_
