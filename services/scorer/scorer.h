// The scorer's logic, independent of gRPC: accepts audit plans and
// observations, computes each audit's metrics the moment its inputs are
// complete, and publishes them as gauges.
#ifndef MEMAUDIT_SERVICES_SCORER_SCORER_H_
#define MEMAUDIT_SERVICES_SCORER_SCORER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/change_notifier.h"
#include "common/base/deadline_timer.h"
#include "common/metrics/metrics.h"
#include "memaudit/v1/results.pb.h"
#include "memaudit/v1/scorer.pb.h"
#include "services/scorer/kind_handler.h"
#include "services/scorer/scorer_store.h"

namespace memaudit::scorer {

struct ScorerOptions {
  // Content-keyed reuse may copy another team's runs (--cross-team-reuse);
  // by default only the same team's.
  bool cross_team_reuse = false;
  // Tests: called with an audit's scoring turn taken, just before its kind
  // scores it (a test holds one audit's scoring there).
  std::function<void(const std::string& audit_id)> before_scoring;
};

// What CheckTask finds.
struct TaskCheck {
  // The task's observations not stored.
  std::vector<ObservationKey> missing;
  // Why the audit cannot be scored; empty while it can.
  std::string audit_error;
};

class Scorer {
 public:
  // Republishes stored results and scores any audit whose inputs completed
  // before a crash. An audit whose stored values cannot be scored is marked
  // failed (AuditResults.error) and the others are scored: only a store that
  // cannot list its audits fails. `metrics` may be null.
  static absl::StatusOr<std::unique_ptr<Scorer>> Create(ScorerStore* store,
                                                        prometheus::Registry* metrics,
                                                        ScorerOptions options = {});

  // `team` submitted the audit: reuse stays within it (ScorerOptions).
  absl::Status OpenAudit(const std::string& audit_id, const v1::AuditSpec& spec,
                         const std::string& team = "");
  // Membership audits: records each run's content key and copies the
  // observations of every run an earlier audit already trained (one written
  // under capabilities, of the same team unless cross_team_reuse, not
  // failed); returns those runs (the coordinator does not schedule them) and
  // scores the audit if nothing else is missing. Other kinds: nothing to reuse.
  absl::StatusOr<std::vector<v1::ReusedRun>> ReuseStoredRuns(const std::string& audit_id);
  // True when stored now, false for a duplicate. INVALID_ARGUMENT names the
  // bad field; NOT_FOUND for an audit never opened; PERMISSION_DENIED when
  // `writer`'s lease was superseded or ended or the writer was revoked
  // (ScorerStore::PutObservation). The caller has checked the observation's
  // capability (TaskOf) and named its lease and caller in `writer`.
  absl::StatusOr<bool> Ingest(const v1::Observation& observation,
                              const ObservationWriter& writer = {});
  // The task that sends `observation`, whose capability it must carry.
  // NOT_FOUND for an audit never opened, INVALID_ARGUMENT when no task of the
  // audit sends such an observation.
  absl::StatusOr<TaskRef> TaskOf(const v1::Observation& observation);
  // Which observations of `task` are not stored, and whether the audit
  // failed scoring. NOT_FOUND for an audit never opened. With `lease` > 0
  // only that lease's observations count, and when none is missing the lease
  // is sealed and the audit scored if that completes it.
  absl::StatusOr<TaskCheck> CheckTask(const std::string& audit_id, const TaskRef& task,
                                      uint32_t lease = 0);
  // The task's lease ended without a Complete (ScorerStore::EndLease).
  absl::StatusOr<int64_t> EndLease(const std::string& audit_id, const TaskRef& task,
                                   uint32_t lease);
  // Stops trusting the worker identity `worker` (its name): its observations
  // are refused and its runs no longer reused. Returns the runs it wrote.
  absl::StatusOr<int64_t> RevokeWorker(const std::string& worker);
  // Forgets an audit a refused Submit opened, or keeps a cancelled one as
  // no source of reuse (ScorerStore::DropAudit).
  absl::StatusOr<bool> DropAudit(const std::string& audit_id, bool keep = false);
  // Whether observations of `audit_id` trigger scoring as they arrive
  // (KindHandler::Streams).
  bool Streams(const std::string& audit_id);
  // Scores `audit_id` if all its inputs are in and it is not scored yet. When
  // the stored values cannot be scored, marks the audit failed with the
  // reason and returns OK; errors are the store's (UNAVAILABLE, DATA_LOSS).
  // An audit is scored by one call at a time: another call's scoring is
  // waited for up to `wait`, then UNAVAILABLE ("ask again").
  absl::Status ScoreIfComplete(const std::string& audit_id,
                               absl::Duration wait = absl::InfiniteDuration());
  // How long CheckTask waits for another call's scoring of its audit (the
  // coordinator's Complete waits 5 s, and the worker asks again): a long
  // final scoring holds the thread that scores, not one more per retry.
  static constexpr absl::Duration kCheckTaskScoringWait = absl::Seconds(3);
  // The stored results, or the placeholder before scoring; `error` set for an
  // audit that cannot be scored.
  absl::StatusOr<v1::AuditResults> GetResults(const std::string& audit_id);
  // The per-example arrays of a complete audit (KindHandler::Export).
  // NOT_FOUND for an audit never opened, FAILED_PRECONDITION while it is not
  // scored (or cannot be), RESOURCE_EXHAUSTED while kMaxConcurrentExports
  // others run: an export reads every stored observation and recomputes.
  absl::StatusOr<std::vector<v1::ExportArray>> Export(const std::string& audit_id);
  static constexpr int kMaxConcurrentExports = 2;

  // A counter bumped whenever any audit's results change; WaitForResults
  // blocks until it passes `seen` or `timeout_ms` elapses, and returns it.
  // Streams subscribe to results_changes() instead, holding no thread while
  // they wait.
  uint64_t results_version() const { return results_changes_.version(); }
  uint64_t WaitForResults(uint64_t seen, int timeout_ms) const {
    return results_changes_.Wait(seen, absl::Milliseconds(timeout_ms));
  }
  ChangeNotifier& results_changes() { return results_changes_; }

 private:
  Scorer(ScorerStore* store, prometheus::Registry* metrics, ScorerOptions options)
      : store_(store), metrics_(metrics), options_(std::move(options)) {}
  void Publish(const v1::AuditResults& results);
  // Records that `audit_id` cannot be scored, for `reason`; with the audit's
  // scoring turn taken.
  absl::Status MarkUnscorable(const std::string& audit_id, const absl::Status& reason);
  void ResultsChanged();
  // The stored spec of `audit_id` and its kind's handler; NOT_FOUND for an
  // audit never opened.
  absl::StatusOr<const KindHandler*> HandlerOf(const std::string& audit_id, v1::AuditSpec* spec);
  // HandlerOf the observation's audit; NOT_FOUND names observation.audit_id.
  absl::StatusOr<const KindHandler*> HandlerOfObservation(const v1::Observation& o,
                                                          v1::AuditSpec* spec);
  // Stores and publishes `results`; with the audit's scoring turn taken.
  absl::Status Finish(const std::string& audit_id, v1::AuditResults results);
  // An audit's turn to be scored: one per audit, so an audit is never
  // scored twice at once and a long scoring (an unlearning audit's shadow
  // refits) holds no other audit's, whose CheckTask answers meanwhile. The
  // scoring runs with the turn taken, not with `mu` held, so that a caller
  // can wait for it with a time limit.
  struct ScoringTurn {
    absl::Mutex mu;
    bool taken ABSL_GUARDED_BY(mu) = false;
  };
  std::shared_ptr<ScoringTurn> ScoringTurnOf(const std::string& audit_id);

  ScorerStore* store_;
  prometheus::Registry* metrics_;
  const ScorerOptions options_;
  absl::Mutex scoring_turns_mu_;
  // The turns of the audits being scored (or waited for) now.
  std::map<std::string, std::weak_ptr<ScoringTurn>> scoring_turns_
      ABSL_GUARDED_BY(scoring_turns_mu_);
  absl::Mutex exports_mu_;
  int exports_running_ ABSL_GUARDED_BY(exports_mu_) = 0;
  // Runs the callbacks of results_changes_'s subscribers. Last, with it: the
  // subscribers still waiting are called back (results_changes_ stops)
  // before anything else here goes.
  DeadlineTimer results_timer_;
  // Bumped whenever any audit's results change.
  ChangeNotifier results_changes_{&results_timer_};
};

}  // namespace memaudit::scorer

#endif  // MEMAUDIT_SERVICES_SCORER_SCORER_H_
