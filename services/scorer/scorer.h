// The scorer's logic, independent of gRPC: accepts audit plans and
// observations, computes each audit's metrics the moment its inputs are
// complete, and publishes them as gauges.
#ifndef MEMAUDIT_SERVICES_SCORER_SCORER_H_
#define MEMAUDIT_SERVICES_SCORER_SCORER_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics.h"
#include "memaudit/v1/results.pb.h"
#include "memaudit/v1/scorer.pb.h"
#include "services/scorer/kind_handler.h"
#include "services/scorer/scorer_store.h"

namespace memaudit::scorer {

class Scorer {
 public:
  // Republishes stored results and scores any audit whose inputs completed
  // before a crash. `metrics` may be null.
  static absl::StatusOr<std::unique_ptr<Scorer>> Create(ScorerStore* store,
                                                        prometheus::Registry* metrics);

  absl::Status OpenAudit(const std::string& audit_id, const v1::AuditSpec& spec);
  // Membership audits: records each run's content key and copies the
  // observations of every run an earlier audit already trained; returns
  // those runs (the coordinator does not schedule them) and scores the audit
  // if nothing else is missing. Other kinds: nothing to reuse.
  absl::StatusOr<std::vector<v1::ReusedRun>> ReuseStoredRuns(const std::string& audit_id);
  // True when stored now, false for a duplicate. INVALID_ARGUMENT names the
  // bad field; NOT_FOUND for an audit never opened.
  absl::StatusOr<bool> Ingest(const v1::Observation& observation);
  // Scores `audit_id` if all its inputs are in and it is not scored yet.
  absl::Status ScoreIfComplete(const std::string& audit_id);
  absl::StatusOr<v1::AuditResults> GetResults(const std::string& audit_id);
  // A counter bumped whenever any audit's results change; WaitForResults
  // blocks until it passes `seen` or `timeout_ms` elapses, and returns it.
  uint64_t results_version() const;
  uint64_t WaitForResults(uint64_t seen, int timeout_ms) const;

 private:
  Scorer(ScorerStore* store, prometheus::Registry* metrics) : store_(store), metrics_(metrics) {}
  void Publish(const v1::AuditResults& results);
  // The stored spec of `audit_id` and its kind's handler; NOT_FOUND for an
  // audit never opened.
  absl::StatusOr<const KindHandler*> HandlerOf(const std::string& audit_id, v1::AuditSpec* spec);
  absl::Status Finish(const std::string& audit_id, v1::AuditResults results)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(scoring_mu_);

  ScorerStore* store_;
  prometheus::Registry* metrics_;
  absl::Mutex scoring_mu_;  // one audit scored at a time, never twice
  mutable absl::Mutex version_mu_;
  mutable absl::CondVar version_cv_;  // signalled when results_version_ grows
  uint64_t results_version_ ABSL_GUARDED_BY(version_mu_) = 0;
};

}  // namespace memaudit::scorer

#endif  // MEMAUDIT_SERVICES_SCORER_SCORER_H_
