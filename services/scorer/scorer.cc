#include "services/scorer/scorer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/audit_kinds.h"

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

}  // namespace

absl::StatusOr<std::unique_ptr<Scorer>> Scorer::Create(ScorerStore* store,
                                                       prometheus::Registry* metrics) {
  std::unique_ptr<Scorer> scorer(new Scorer(store, metrics));
  auto audits = store->ListAudits();
  if (!audits.ok()) return audits.status();
  for (const std::string& id : *audits) {
    if (absl::Status s = scorer->ScoreIfComplete(id); !s.ok()) return s;
    auto results = store->GetResults(id);
    if (!results.ok()) return results.status();
    if (results->has_value()) scorer->Publish(**results);
  }
  return scorer;
}

namespace {
// Ids are the coordinator's ("a-" and 16 hex digits); this bounds anyone else's.
constexpr size_t kMaxAuditIdBytes = 128;
}  // namespace

absl::Status Scorer::OpenAudit(const std::string& audit_id, const v1::AuditSpec& spec) {
  if (audit_id.empty()) return absl::InvalidArgumentError("audit_id: required");
  if (audit_id.size() > kMaxAuditIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("audit_id: at most ", kMaxAuditIdBytes, " bytes (got ", audit_id.size(), ")"));
  }
  if (spec.kind_case() == v1::AuditSpec::KIND_NOT_SET) {
    return absl::UnimplementedError("the scorer scores audits of a kind; spec names none");
  }
  return store_->OpenAudit(audit_id, spec);
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
  auto reused = (*kind)->ReuseStoredRuns(*store_, audit_id, spec);
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

absl::StatusOr<bool> Scorer::Ingest(const v1::Observation& o) {
  v1::AuditSpec spec;
  auto kind = HandlerOf(o.audit_id(), &spec);
  if (kind.status().code() == absl::StatusCode::kNotFound) {
    return absl::NotFoundError(
        absl::StrCat("observation.audit_id: unknown audit \"", o.audit_id(), "\""));
  }
  if (!kind.ok()) return kind.status();
  if (absl::Status s = (*kind)->ValidateObservation(spec, o); !s.ok()) return s;
  auto stored = store_->PutObservation(o);
  if (!stored.ok()) return stored.status();
  if (metrics_ != nullptr) {
    metrics::AddCounter(*metrics_, "memaudit_scorer_observations_total",
                        "Observations received, by outcome.")
        .Add({{"outcome", *stored ? "stored" : "duplicate"}})
        .Increment();
  }
  return *stored;
}

absl::Status Scorer::ScoreIfComplete(const std::string& audit_id) {
  absl::MutexLock lock(&scoring_mu_);
  auto existing = store_->GetResults(audit_id);
  if (!existing.ok()) return existing.status();
  // Complete results are final; partial ones (a forgetting curve filling in)
  // are recomputed as more points arrive.
  if (existing->has_value() && (*existing)->complete()) return absl::OkStatus();
  v1::AuditSpec spec;
  auto kind = HandlerOf(audit_id, &spec);
  if (!kind.ok()) return kind.status();
  const auto scoring_started = std::chrono::steady_clock::now();
  auto results = (*kind)->Score(*store_, audit_id, spec);
  if (!results.ok()) return results.status();
  if (!results->has_value()) return absl::OkStatus();
  ObserveScoringSeconds(metrics_, AuditKindName(spec.kind_case()), scoring_started);
  return Finish(audit_id, **std::move(results));
}

absl::Status Scorer::Finish(const std::string& audit_id, v1::AuditResults results) {
  results.set_audit_id(audit_id);
  if (absl::Status s = store_->PutResults(results); !s.ok()) return s;
  Publish(results);
  absl::MutexLock version_lock(&version_mu_);
  ++results_version_;
  version_cv_.SignalAll();
  return absl::OkStatus();
}

uint64_t Scorer::results_version() const {
  absl::MutexLock lock(&version_mu_);
  return results_version_;
}

uint64_t Scorer::WaitForResults(uint64_t seen, int timeout_ms) const {
  const absl::Time deadline = absl::Now() + absl::Milliseconds(timeout_ms);
  absl::MutexLock lock(&version_mu_);
  while (results_version_ == seen) {
    if (version_cv_.WaitWithDeadline(&version_mu_, deadline)) break;  // true: timed out
  }
  return results_version_;
}

absl::StatusOr<v1::AuditResults> Scorer::GetResults(const std::string& audit_id) {
  v1::AuditSpec spec;
  auto kind = HandlerOf(audit_id, &spec);
  if (!kind.ok()) return kind.status();
  auto results = store_->GetResults(audit_id);
  if (!results.ok()) return results.status();
  if (results->has_value()) return **results;
  v1::AuditResults placeholder = (*kind)->Placeholder(spec);
  placeholder.set_audit_id(audit_id);
  return placeholder;
}

void Scorer::Publish(const v1::AuditResults& results) {
  if (metrics_ == nullptr) return;
  const KindHandler* kind = HandlerFor(AuditKindByName(results.kind()));
  if (kind == nullptr) return;
  kind->Publish(*metrics_, results);
  // A forgetting curve is published point by point; count the audit once.
  if (results.complete()) {
    metrics::AddCounter(*metrics_, "memaudit_scorer_audits_scored_total",
                        "Audits whose metrics were computed.")
        .Add({})
        .Increment();
  }
}

}  // namespace memaudit::scorer
