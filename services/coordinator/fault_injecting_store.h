// A Store that fails on demand, for tests of what the scheduler does when a
// write does not reach disk (in the manner of LevelDB's fault-injection
// tests). It forwards to a real store; an injected failure returns
// UNAVAILABLE before the real store is touched, so nothing of that call is
// written. Reads are never failed: they show what was acknowledged.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_FAULT_INJECTING_STORE_H_
#define MEMAUDIT_SERVICES_COORDINATOR_FAULT_INJECTING_STORE_H_

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "services/coordinator/store.h"

namespace memaudit::coordinator {

class FaultInjectingStore : public Store {
 public:
  // `base` must outlive this store.
  explicit FaultInjectingStore(Store* base) : base_(base) {}

  // The next `count` Commits fail, once `pass` more have gone through.
  void FailCommits(int count, int pass = 0) {
    absl::MutexLock lock(&mu_);
    faults_[kCommit].fail = count;
    faults_[kCommit].pass = pass;
  }
  // The next `count` CreateAudits fail.
  void FailCreateAudits(int count) {
    absl::MutexLock lock(&mu_);
    faults_[kCreateAudit].fail = count;
    faults_[kCreateAudit].pass = 0;
  }

  // Failures injected so far; a test checks them to know its fault was hit.
  int commits_failed() const {
    absl::MutexLock lock(&mu_);
    return faults_[kCommit].injected;
  }
  int create_audits_failed() const {
    absl::MutexLock lock(&mu_);
    return faults_[kCreateAudit].injected;
  }

  absl::Status CreateAudit(const AuditRecord& audit, const std::vector<TaskRecord>& tasks,
                           const std::vector<EventRecord>& events) override {
    if (Take(kCreateAudit))
      return absl::UnavailableError("injected fault: CreateAudit not written");
    return base_->CreateAudit(audit, tasks, events);
  }
  // A batch fails whole when any of its mutations is one to fail (each
  // mutation counts as one Commit).
  absl::Status CommitAll(absl::Span<const Mutation> mutations) override {
    bool fail = false;
    for (size_t i = 0; i < mutations.size(); ++i) fail = Take(kCommit) || fail;
    if (fail) return absl::UnavailableError("injected fault: Commit not written");
    return base_->CommitAll(mutations);
  }
  absl::StatusOr<std::vector<AuditRecord>> LoadAudits() override { return base_->LoadAudits(); }
  absl::StatusOr<std::vector<TaskRecord>> LoadTasks() override { return base_->LoadTasks(); }
  absl::StatusOr<std::vector<EventRecord>> EventsAfter(const std::string& audit_id,
                                                       uint64_t after_sequence,
                                                       int limit) override {
    return base_->EventsAfter(audit_id, after_sequence, limit);
  }

 private:
  enum Op { kCommit = 0, kCreateAudit = 1 };
  struct Faults {
    int pass = 0;      // calls still to let through before failing
    int fail = 0;      // calls still to fail
    int injected = 0;  // calls failed so far
  };

  // Whether this call is one to fail.
  bool Take(Op op) {
    absl::MutexLock lock(&mu_);
    Faults& f = faults_[op];
    if (f.fail <= 0) return false;
    if (f.pass > 0) {
      --f.pass;
      return false;
    }
    --f.fail;
    ++f.injected;
    return true;
  }

  Store* const base_;
  mutable absl::Mutex mu_;
  Faults faults_[2] ABSL_GUARDED_BY(mu_);
};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_FAULT_INJECTING_STORE_H_
