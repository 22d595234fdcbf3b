#include "services/scorer/scorer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <iterator>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "common/base/sqlite.h"
#include "common/base/status_macros.h"
#include "common/base/version.h"
#include "common/messages/audit_kinds.h"
#include "common/security/identity.h"
#include "spec/gates.h"

namespace memaudit::scorer {
namespace {

// Observability (docs/observability.md): the time one audit's scoring takes.
void ObserveScoringSeconds(prometheus::Registry* metrics, const std::string& kind,
                           std::chrono::steady_clock::time_point started) {
  if (metrics == nullptr) return;
  static const prometheus::Histogram::BucketBoundaries buckets = {
      0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300};
  metrics::AddHistogram(*metrics, "memaudit_scorer_scoring_duration_seconds",
                        "Time to compute one audit's metrics once its inputs were complete.")
      .Add({{"kind", kind}}, buckets)
      .Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

prometheus::Counter& UnscorableCounter(prometheus::Registry& metrics) {
  return metrics::AddCounter(metrics, "memaudit_scorer_audits_unscorable_total",
                             "Audits marked failed because their stored values cannot be scored.")
      .Add({});
}

// The store's own failures (busy, damaged, its disk full): not the values'
// fault.
bool IsStoreError(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDataLoss || sql::IsDiskFull(status);
}

// An unscorable audit's reason, as stored and reported.
constexpr size_t kMaxErrorBytes = 2000;

}  // namespace

absl::StatusOr<std::unique_ptr<Scorer>> Scorer::Create(ScorerStore* store,
                                                       prometheus::Registry* metrics,
                                                       ScorerOptions options) {
  std::unique_ptr<Scorer> scorer(new Scorer(store, metrics, std::move(options)));
  if (metrics != nullptr) UnscorableCounter(*metrics);  // at 0 from the start
  auto audits = store->ListAudits();
  if (!audits.ok()) return audits.status();
  for (const std::string& id : *audits) {
    // Values that cannot be scored mark their audit failed inside
    // ScoreIfComplete; anything else wrong with one audit (a stored spec or
    // results the store cannot read) leaves that audit alone and the scorer
    // starts all the same.
    if (absl::Status s = scorer->ScoreIfComplete(id); !s.ok()) {
      spdlog::error("audit {}: not scored at start: {}", id, s.ToString());
    }
    auto results = store->GetResults(id);
    if (!results.ok()) {
      spdlog::error("audit {}: stored results not republished: {}", id,
                    results.status().ToString());
      continue;
    }
    if (results->has_value()) scorer->Publish(**results);
  }
  return scorer;
}

namespace {
// Ids are the coordinator's ("a-" and 32 hex digits); this bounds anyone else's.
constexpr size_t kMaxAuditIdBytes = 128;
}  // namespace

absl::Status Scorer::OpenAudit(const std::string& audit_id, const v1::AuditSpec& spec,
                               const std::string& team) {
  if (audit_id.empty()) return absl::InvalidArgumentError("audit_id: required");
  if (!team.empty() && !IsValidName(team)) {
    return absl::InvalidArgumentError("team: 1 to 64 of letters, digits, '.', '_', '-'");
  }
  if (audit_id.size() > kMaxAuditIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("audit_id: at most ", kMaxAuditIdBytes, " bytes (got ", audit_id.size(), ")"));
  }
  if (spec.kind_case() == v1::AuditSpec::KIND_NOT_SET) {
    return absl::UnimplementedError("the scorer scores audits of a kind; spec names none");
  }
  return store_->OpenAudit(audit_id, spec, team);
}

absl::StatusOr<const KindHandler*> Scorer::HandlerOf(const std::string& audit_id,
                                                     v1::AuditSpec* spec) {
  auto stored = store_->GetAudit(audit_id);
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) return absl::NotFoundError(absl::StrCat("unknown audit ", audit_id));
  *spec = **std::move(stored);
  const KindHandler* kind = HandlerFor(spec->kind_case());
  if (kind == nullptr) {
    return absl::UnimplementedError(absl::StrCat("audit ", audit_id, " names no kind"));
  }
  return kind;
}

absl::StatusOr<std::vector<v1::ReusedRun>> Scorer::ReuseStoredRuns(const std::string& audit_id) {
  v1::AuditSpec spec;
  auto kind = HandlerOf(audit_id, &spec);
  if (!kind.ok()) return kind.status();
  auto reused = (*kind)->ReuseStoredRuns(*store_, audit_id, spec, options_.cross_team_reuse);
  if (!reused.ok() || reused->empty()) return reused;
  if (metrics_ != nullptr) {
    metrics::AddCounter(*metrics_, "memaudit_scorer_reused_models_total",
                        "Models whose stored observations a new audit reused instead of training.")
        .Add({})
        .Increment(static_cast<double>(reused->size()));
  }
  if (absl::Status s = ScoreIfComplete(audit_id); !s.ok()) return s;
  return reused;
}

absl::StatusOr<const KindHandler*> Scorer::HandlerOfObservation(const v1::Observation& o,
                                                                v1::AuditSpec* spec) {
  auto kind = HandlerOf(o.audit_id(), spec);
  if (kind.status().code() == absl::StatusCode::kNotFound) {
    return absl::NotFoundError(
        absl::StrCat("observation.audit_id: unknown audit \"", o.audit_id(), "\""));
  }
  return kind;
}

absl::StatusOr<bool> Scorer::Ingest(const v1::Observation& o, const ObservationWriter& writer) {
  v1::AuditSpec spec;
  auto kind = HandlerOfObservation(o, &spec);
  if (!kind.ok()) return kind.status();
  if (absl::Status s = (*kind)->ValidateObservation(spec, o); !s.ok()) return s;
  auto stored = store_->PutObservation(o, writer);
  if (!stored.ok()) return stored.status();
  if (metrics_ != nullptr) {
    metrics::AddCounter(*metrics_, "memaudit_scorer_observations_total",
                        "Observations received, by outcome.")
        .Add({{"outcome", *stored ? "stored" : "duplicate"}})
        .Increment();
  }
  return *stored;
}

absl::StatusOr<TaskRef> Scorer::TaskOf(const v1::Observation& o) {
  v1::AuditSpec spec;
  auto kind = HandlerOfObservation(o, &spec);
  if (!kind.ok()) return kind.status();
  return (*kind)->TaskOf(spec, o);
}

absl::StatusOr<TaskCheck> Scorer::CheckTask(const std::string& audit_id, const TaskRef& task,
                                            uint32_t lease) {
  v1::AuditSpec spec;
  MEMAUDIT_ASSIGN_OR_RETURN(const KindHandler* kind, HandlerOf(audit_id, &spec));
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<ObservationKey> expected,
                            kind->TaskObservations(*store_, audit_id, spec, task));
  TaskCheck check;
  MEMAUDIT_ASSIGN_OR_RETURN(check.missing, store_->MissingObservations(audit_id, expected, lease));
  if (lease > 0 && check.missing.empty()) {
    // Sealed, the task's observations count: they may complete the audit
    // (scored now, so that an unscorable one fails with this Complete) and
    // be reused once it is scored.
    MEMAUDIT_RETURN_IF_ERROR(store_->SealLease(audit_id, task.ToString(), lease));
    MEMAUDIT_RETURN_IF_ERROR(ScoreIfComplete(audit_id, kCheckTaskScoringWait));
  }
  MEMAUDIT_ASSIGN_OR_RETURN(AuditInfo info, store_->GetAuditInfo(audit_id));
  check.audit_error = std::move(info.error);
  return check;
}

absl::StatusOr<int64_t> Scorer::EndLease(const std::string& audit_id, const TaskRef& task,
                                         uint32_t lease) {
  v1::AuditSpec spec;
  MEMAUDIT_RETURN_IF_ERROR(HandlerOf(audit_id, &spec).status());
  return store_->EndLease(audit_id, task.ToString(), lease);
}

absl::StatusOr<int64_t> Scorer::RevokeWorker(const std::string& worker) {
  const std::string writer = Identity{Role::kWorker, worker}.ToString();
  MEMAUDIT_ASSIGN_OR_RETURN(const int64_t runs, store_->RevokeWriter(writer));
  spdlog::warn("{} revoked: its observations are refused and its {} run(s) no longer reused",
               writer, runs);
  return runs;
}

absl::StatusOr<bool> Scorer::DropAudit(const std::string& audit_id, bool keep) {
  return store_->DropAudit(audit_id, keep);
}

bool Scorer::Streams(const std::string& audit_id) {
  v1::AuditSpec spec;
  auto kind = HandlerOf(audit_id, &spec);
  return kind.ok() && (*kind)->Streams();
}

std::shared_ptr<Scorer::ScoringTurn> Scorer::ScoringTurnOf(const std::string& audit_id) {
  absl::MutexLock lock(&scoring_turns_mu_);
  std::weak_ptr<ScoringTurn>& slot = scoring_turns_[audit_id];
  std::shared_ptr<ScoringTurn> turn = slot.lock();
  if (turn == nullptr) {
    turn = std::make_shared<ScoringTurn>();
    slot = turn;
  }
  // Turns nobody holds go: the map is as large as the scorings under way.
  for (auto it = scoring_turns_.begin(); it != scoring_turns_.end();) {
    it = it->second.expired() ? scoring_turns_.erase(it) : std::next(it);
  }
  return turn;
}

absl::Status Scorer::ScoreIfComplete(const std::string& audit_id, absl::Duration wait) {
  const std::shared_ptr<ScoringTurn> turn = ScoringTurnOf(audit_id);
  {
    absl::MutexLock lock(&turn->mu);
    const bool free =
        turn->mu.AwaitWithTimeout(absl::Condition(
                                      +[](bool* taken) { return !*taken; }, &turn->taken),
                                  wait);
    if (!free) {
      return absl::UnavailableError(
          absl::StrCat("audit ", audit_id, " is being scored by another call; ask again"));
    }
    turn->taken = true;
  }
  const absl::Cleanup give_back = [&turn] {
    absl::MutexLock lock(&turn->mu);
    turn->taken = false;
  };
  auto existing = store_->GetResults(audit_id);
  if (!existing.ok()) return existing.status();
  // Complete results are final; partial ones (a forgetting curve filling in)
  // are recomputed as more points arrive.
  if (existing->has_value() && (*existing)->complete()) return absl::OkStatus();
  MEMAUDIT_ASSIGN_OR_RETURN(AuditInfo info, store_->GetAuditInfo(audit_id));
  if (!info.error.empty()) return absl::OkStatus();  // failed for good
  v1::AuditSpec spec;
  auto kind = HandlerOf(audit_id, &spec);
  if (!kind.ok()) return kind.status();
  // Observations under a lease not yet sealed may still be superseded (a
  // lease that lapses): results are final only once every lease is sealed
  // or ended. Until then only a streaming kind publishes, partially.
  MEMAUDIT_ASSIGN_OR_RETURN(const bool unsealed, store_->HasOpenLeases(audit_id));
  if (unsealed && !(*kind)->Streams()) return absl::OkStatus();
  if (options_.before_scoring) options_.before_scoring(audit_id);
  const auto scoring_started = std::chrono::steady_clock::now();
  absl::StatusOr<std::optional<v1::AuditResults>> results = std::nullopt;
  try {
    results = (*kind)->Score(*store_, audit_id, spec);
  } catch (const std::exception& e) {
    results = absl::InternalError(absl::StrCat("scoring threw: ", e.what()));
  }
  if (!results.ok()) {
    // The store's trouble (busy, damaged) is worth a retry; anything else
    // means these values cannot be scored, now or ever: this audit fails, and
    // the caller (an Ingest of other audits, the scorer's start) goes on.
    if (IsStoreError(results.status())) return results.status();
    return MarkUnscorable(audit_id, results.status());
  }
  if (!results->has_value()) return absl::OkStatus();
  if (unsealed && (*results)->complete()) return absl::OkStatus();
  for (v1::ResultWarning& w : (*kind)->Warnings(spec)) *(*results)->add_warnings() = std::move(w);
  if ((*results)->complete()) {
    for (v1::GateVerdict& v : spec::JudgeGates(spec, **results)) {
      *(*results)->add_gates() = std::move(v);
    }
  }
  (*results)->set_version(CodeVersion());
  ObserveScoringSeconds(metrics_, AuditKindName(spec.kind_case()), scoring_started);
  return Finish(audit_id, **std::move(results));
}

absl::Status Scorer::MarkUnscorable(const std::string& audit_id, const absl::Status& reason) {
  std::string error(reason.message().substr(0, kMaxErrorBytes));
  spdlog::error("audit {}: cannot be scored: {}", audit_id, error);
  MEMAUDIT_RETURN_IF_ERROR(store_->SetAuditError(audit_id, error));
  if (metrics_ != nullptr) UnscorableCounter(*metrics_).Increment();
  ResultsChanged();
  return absl::OkStatus();
}

absl::Status Scorer::Finish(const std::string& audit_id, v1::AuditResults results) {
  results.set_audit_id(audit_id);
  if (absl::Status s = store_->PutResults(results); !s.ok()) return s;
  Publish(results);
  ResultsChanged();
  return absl::OkStatus();
}

void Scorer::ResultsChanged() { results_changes_.Bump(); }

absl::StatusOr<v1::AuditResults> Scorer::GetResults(const std::string& audit_id) {
  v1::AuditSpec spec;
  auto kind = HandlerOf(audit_id, &spec);
  if (!kind.ok()) return kind.status();
  MEMAUDIT_ASSIGN_OR_RETURN(AuditInfo info, store_->GetAuditInfo(audit_id));
  auto stored = store_->GetResults(audit_id);
  if (!stored.ok()) return stored.status();
  v1::AuditResults results;
  if (stored->has_value()) {
    results = **std::move(stored);
  } else {
    results = (*kind)->Placeholder(spec);
    results.set_audit_id(audit_id);
  }
  if (!info.error.empty()) results.set_error(info.error);
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<v1::ReusedRun> reused, store_->ReusedRuns(audit_id));
  for (v1::ReusedRun& r : reused) *results.add_reused() = std::move(r);
  // Stored once with the audit, not in every stored version of its results.
  *results.mutable_spec() = std::move(spec);
  return results;
}

absl::StatusOr<std::vector<v1::ExportArray>> Scorer::Export(const std::string& audit_id) {
  MEMAUDIT_ASSIGN_OR_RETURN(v1::AuditResults results, GetResults(audit_id));
  if (!results.error().empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("audit ", audit_id, " cannot be scored: ", results.error()));
  }
  if (!results.complete()) {
    return absl::FailedPreconditionError(
        absl::StrCat("audit ", audit_id,
                     " is not scored yet: its per-example data follows its "
                     "complete results"));
  }
  {
    absl::MutexLock lock(&exports_mu_);
    if (exports_running_ >= kMaxConcurrentExports) {
      return absl::ResourceExhaustedError(
          absl::StrCat(kMaxConcurrentExports, " exports are running; retry when one has finished"));
    }
    ++exports_running_;
  }
  absl::StatusOr<std::vector<v1::ExportArray>> arrays;
  try {
    arrays = HandlerFor(results.spec().kind_case())->Export(*store_, audit_id, results.spec());
  } catch (const std::exception& e) {
    arrays = absl::InternalError(absl::StrCat("export threw: ", e.what()));
  }
  if (arrays.ok()) {
    for (v1::ExportArray& a : *arrays) a.set_audit_id(audit_id);
  }
  absl::MutexLock lock(&exports_mu_);
  --exports_running_;
  return arrays;
}

void Scorer::Publish(const v1::AuditResults& results) {
  if (metrics_ == nullptr) return;
  const KindHandler* kind = HandlerFor(KindOfApi(results.kind()));
  if (kind == nullptr) return;
  auto info = store_->GetAuditInfo(results.audit_id());
  const std::string team = info.ok() ? info->team : "";
  kind->Publish(*metrics_, results, team);
  // Every kind: how many warnings its results carry (0 included, so a
  // dashboard tells "none" from "not scored yet").
  metrics::AddGauge(*metrics_, "memaudit_scorer_audit_warnings",
                    "Warnings in an audit's results: settings under which a number is undefined "
                    "or too noisy to trust.")
      .Add({{"audit", results.audit_id()}, {"team", team}})
      .Set(static_cast<double>(results.warnings_size()));
  // Each gate's verdict as a state set: 1 on the series of its outcome.
  if (results.gates_size() > 0) {
    auto& gates = metrics::AddGauge(
        *metrics_, "memaudit_gate_verdict",
        "A release gate's verdict (docs/gates.md): 1 on the series whose verdict label is the "
        "outcome (pass, fail, inconclusive), 0 on the others.");
    for (int i = 0; i < results.gates_size(); ++i) {
      const v1::GateVerdict& g = results.gates(i);
      for (const auto& [outcome, label] :
           {std::pair{v1::GATE_PASS, "pass"}, std::pair{v1::GATE_FAIL, "fail"},
            std::pair{v1::GATE_INCONCLUSIVE, "inconclusive"}}) {
        gates
            .Add({{"audit", results.audit_id()},
                  {"team", team},
                  {"gate", absl::StrCat(i)},
                  {"metric", g.metric()},
                  {"verdict", label}})
            .Set(g.outcome() == outcome ? 1 : 0);
      }
    }
  }
  // A forgetting curve is published point by point; count the audit once.
  if (results.complete()) {
    metrics::AddCounter(*metrics_, "memaudit_scorer_audits_scored_total",
                        "Audits whose metrics were computed.")
        .Add({})
        .Increment();
  }
}

}  // namespace memaudit::scorer
