#include "services/scorer/scorer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/content_key.h"
#include "services/scorer/exposure_metrics.h"
#include "services/scorer/forgetting_metrics.h"
#include "services/scorer/membership_metrics.h"
#include "services/scorer/relational_metrics.h"
#include "services/scorer/unlearning_metrics.h"

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

absl::Status Scorer::OpenAudit(const std::string& audit_id, const v1::AuditSpec& spec) {
  if (audit_id.empty()) return absl::InvalidArgumentError("audit_id: required");
  if (spec.kind_case() == v1::AuditSpec::KIND_NOT_SET) {
    return absl::UnimplementedError("the scorer scores audits of a kind; spec names none");
  }
  return store_->OpenAudit(audit_id, spec);
}

absl::StatusOr<std::vector<v1::ReusedRun>> Scorer::ReuseStoredRuns(const std::string& audit_id) {
  auto spec = store_->GetAudit(audit_id);
  if (!spec.ok()) return spec.status();
  if (!spec->has_value()) return absl::NotFoundError(absl::StrCat("unknown audit ", audit_id));
  std::vector<v1::ReusedRun> reused;
  if (!(*spec)->has_membership()) return reused;
  for (uint32_t run = 0; run < (*spec)->membership().reference_models(); ++run) {
    const std::string key = MembershipModelKey(**spec, run);
    if (absl::Status s = store_->PutModelKey(audit_id, run, key); !s.ok()) return s;
    auto from = store_->FindStoredRun(key, audit_id, kFinalPoint,
                                      RequiredMembershipSignals((*spec)->membership()));
    if (!from.ok()) return from.status();
    if (!from->has_value()) continue;
    if (absl::Status s = store_->CopyRun(**from, audit_id, run); !s.ok()) return s;
    v1::ReusedRun& r = reused.emplace_back();
    r.set_run(run);
    r.set_from_audit_id((*from)->audit_id);
  }
  if (metrics_ != nullptr && !reused.empty()) {
    metrics::AddCounter(*metrics_, "memaudit_scorer_reused_models_total",
                        "Models whose stored observations a new audit reused instead of training.")
        .Add({})
        .Increment(static_cast<double>(reused.size()));
  }
  if (absl::Status s = ScoreIfComplete(audit_id); !s.ok()) return s;
  return reused;
}

absl::StatusOr<bool> Scorer::Ingest(const v1::Observation& o) {
  auto spec = store_->GetAudit(o.audit_id());
  if (!spec.ok()) return spec.status();
  if (!spec->has_value()) {
    return absl::NotFoundError(
        absl::StrCat("observation.audit_id: unknown audit \"", o.audit_id(), "\""));
  }
  if ((*spec)->has_exposure()) {
    if (absl::Status s = ValidateExposureObservation((*spec)->exposure(), o); !s.ok()) return s;
    return Store(o);
  }
  if ((*spec)->has_forgetting()) {
    if (absl::Status s = ValidateForgettingObservation((*spec)->forgetting(), o); !s.ok()) {
      return s;
    }
    return Store(o);
  }
  if ((*spec)->has_relational()) {
    if (absl::Status s = ValidateRelationalObservation((*spec)->relational(), o); !s.ok()) {
      return s;
    }
    return Store(o);
  }
  if ((*spec)->has_unlearning()) {
    if (absl::Status s = ValidateUnlearningObservation((*spec)->unlearning(), o); !s.ok()) {
      return s;
    }
    return Store(o);
  }
  const v1::MembershipAudit& m = (*spec)->membership();
  if (o.run() >= m.reference_models()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "observation.run: ", o.run(), " is outside the audit's ", m.reference_models(), " models"));
  }
  if (o.point() != kFinalPoint) {
    return absl::InvalidArgumentError(absl::StrCat("observation.point: \"", o.point(),
                                                   "\" is not an evaluation point of this audit "
                                                   "(expected \"final\")"));
  }
  const std::vector<std::string> signals = RequiredMembershipSignals(m);
  if (std::find(signals.begin(), signals.end(), o.signal()) == signals.end()) {
    return absl::InvalidArgumentError(absl::StrCat("observation.signal: \"", o.signal(),
                                                   "\" (expected one of ",
                                                   absl::StrJoin(signals, ", "), ")"));
  }
  const bool population = o.signal() == kPopulationLossSignal;
  const uint32_t expected = population ? m.population_size() : m.dataset().pool_size();
  if (static_cast<uint32_t>(o.values_size()) != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("observation.values: expected ", expected, " values (one per ",
                     population ? "population" : "pool", " example), got ", o.values_size()));
  }
  for (int i = 0; i < o.values_size(); ++i) {
    if (!std::isfinite(o.values(i))) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.values[", i, "]: not a finite number"));
    }
  }
  return Store(o);
}

absl::StatusOr<bool> Scorer::Store(const v1::Observation& o) {
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
  std::lock_guard<std::mutex> lock(scoring_mu_);
  auto existing = store_->GetResults(audit_id);
  if (!existing.ok()) return existing.status();
  // Complete results are final; partial ones (a forgetting curve filling in)
  // are recomputed as more points arrive.
  if (existing->has_value() && (*existing)->complete()) return absl::OkStatus();
  auto spec = store_->GetAudit(audit_id);
  if (!spec.ok()) return spec.status();
  if (!spec->has_value()) return absl::NotFoundError(absl::StrCat("unknown audit ", audit_id));
  if ((*spec)->has_exposure()) return ScoreExposureIfComplete(audit_id, **spec);
  if ((*spec)->has_forgetting()) return ScoreForgettingIfComplete(audit_id, **spec);
  if ((*spec)->has_relational()) {
    // Curves fill in point by point, like forgetting's.
    const auto scoring_started = std::chrono::steady_clock::now();
    auto results = ScoreRelationalFromStore(*store_, audit_id, **spec);
    ObserveScoringSeconds(metrics_, "relational", scoring_started);
    if (!results.ok()) return results.status();
    if (!results->has_value()) return absl::OkStatus();
    return Finish(audit_id, **std::move(results));
  }
  if ((*spec)->has_unlearning()) {
    // Scored once, when every task's observations are in.
    const auto scoring_started = std::chrono::steady_clock::now();
    auto results = ScoreUnlearningFromStore(*store_, audit_id, **spec);
    if (!results.ok()) return results.status();
    if (!results->has_value()) return absl::OkStatus();
    ObserveScoringSeconds(metrics_, "unlearning", scoring_started);
    return Finish(audit_id, **std::move(results));
  }
  const v1::MembershipAudit& m = (*spec)->membership();
  // Ingest admits only these signals of these runs, so a count short of all
  // of them means incomplete: no need to decode every stored vector per batch.
  const std::vector<std::string> required = RequiredMembershipSignals(m);
  auto count = store_->CountObservations(audit_id);
  if (!count.ok()) return count.status();
  if (*count < static_cast<int64_t>(required.size()) * m.reference_models()) {
    return absl::OkStatus();
  }
  std::map<std::string, std::map<uint32_t, std::vector<double>>> signals;
  for (const std::string& name : required) {
    auto runs = store_->LoadSignal(audit_id, kFinalPoint, name);
    if (!runs.ok()) return runs.status();
    if (runs->size() < m.reference_models()) return absl::OkStatus();
    signals[name] = *std::move(runs);
  }
  const auto scoring_started = std::chrono::steady_clock::now();
  auto results = ScoreMembership(**spec, signals[kPhiSignal], signals[kLossSignal],
                                 signals[kPopulationLossSignal]);
  ObserveScoringSeconds(metrics_, "membership", scoring_started);
  if (!results.ok()) return results.status();
  return Finish(audit_id, *std::move(results));
}

absl::Status Scorer::ScoreExposureIfComplete(const std::string& audit_id,
                                             const v1::AuditSpec& spec) {
  // Scored once, when every model of every sweep variant has reported.
  const auto scoring_started = std::chrono::steady_clock::now();
  auto results = ScoreExposureFromStore(*store_, audit_id, spec);
  if (!results.ok()) return results.status();
  if (!results->has_value()) return absl::OkStatus();
  ObserveScoringSeconds(metrics_, "exposure", scoring_started);
  return Finish(audit_id, **std::move(results));
}

absl::Status Scorer::ScoreForgettingIfComplete(const std::string& audit_id,
                                               const v1::AuditSpec& spec) {
  // Whatever has arrived: the curve covers every point all trials have reached.
  ForgettingSignals signals;
  for (const auto& [point, name] : RequiredForgettingSignals(spec.forgetting())) {
    auto runs = store_->LoadSignal(audit_id, point, name);
    if (!runs.ok()) return runs.status();
    if (!runs->empty()) signals[{point, name}] = *std::move(runs);
  }
  const auto scoring_started = std::chrono::steady_clock::now();
  auto results = ScoreForgetting(spec, signals);
  ObserveScoringSeconds(metrics_, "forgetting", scoring_started);
  if (!results.ok()) return results.status();
  if (ForgettingProgress(*results) == 0) return absl::OkStatus();
  auto stored = store_->GetResults(audit_id);
  if (!stored.ok()) return stored.status();
  if (stored->has_value() && ForgettingProgress(**stored) == ForgettingProgress(*results)) {
    return absl::OkStatus();  // no new point since the last computation
  }
  return Finish(audit_id, *std::move(results));
}

absl::Status Scorer::Finish(const std::string& audit_id, v1::AuditResults results) {
  results.set_audit_id(audit_id);
  if (absl::Status s = store_->PutResults(results); !s.ok()) return s;
  Publish(results);
  {
    std::lock_guard<std::mutex> version_lock(version_mu_);
    ++results_version_;
  }
  version_cv_.notify_all();
  return absl::OkStatus();
}

uint64_t Scorer::results_version() const {
  std::lock_guard<std::mutex> lock(version_mu_);
  return results_version_;
}

uint64_t Scorer::WaitForResults(uint64_t seen, int timeout_ms) const {
  std::unique_lock<std::mutex> lock(version_mu_);
  version_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                       [&] { return results_version_ != seen; });
  return results_version_;
}

absl::StatusOr<v1::AuditResults> Scorer::GetResults(const std::string& audit_id) {
  auto spec = store_->GetAudit(audit_id);
  if (!spec.ok()) return spec.status();
  if (!spec->has_value()) return absl::NotFoundError(absl::StrCat("unknown audit ", audit_id));
  auto results = store_->GetResults(audit_id);
  if (!results.ok()) return results.status();
  if (results->has_value()) return **results;
  v1::AuditResults partial;
  partial.set_audit_id(audit_id);
  partial.set_complete(false);
  if ((*spec)->has_exposure()) {
    partial.set_kind("exposure");
    partial.set_models(ExposureModels((*spec)->exposure()));
    partial.set_examples((*spec)->exposure().repeats_size() + (*spec)->exposure().controls());
    return partial;
  }
  if ((*spec)->has_forgetting()) {
    partial.set_kind("forgetting");
    partial.set_models(2 * (*spec)->forgetting().trials());
    partial.set_examples((*spec)->forgetting().injected().size());
    return partial;
  }
  if ((*spec)->has_relational()) {
    v1::AuditResults placeholder = RelationalPlaceholder(**spec);
    placeholder.set_audit_id(audit_id);
    return placeholder;
  }
  if ((*spec)->has_unlearning()) {
    partial.set_kind("unlearning");
    const v1::UnlearningAudit& u = (*spec)->unlearning();
    partial.set_models(u.shadow().originals() + u.target().originals());
    return partial;
  }
  partial.set_kind("membership");
  partial.set_models((*spec)->membership().reference_models());
  partial.set_examples((*spec)->membership().dataset().pool_size());
  return partial;
}

void Scorer::Publish(const v1::AuditResults& results) {
  if (metrics_ == nullptr) return;
  if (results.has_exposure() || results.has_forgetting() || results.has_relational() ||
      results.has_unlearning()) {
    PublishExposure(metrics_, results);
    PublishForgetting(metrics_, results);
    PublishRelational(metrics_, results);
    PublishUnlearning(metrics_, results);
    // A forgetting curve is published point by point; count the audit once.
    if (results.complete()) {
      metrics::AddCounter(*metrics_, "memaudit_scorer_audits_scored_total",
                          "Audits whose metrics were computed.")
          .Add({})
          .Increment();
    }
    return;
  }
  auto& auc = metrics::AddGauge(*metrics_, "memaudit_membership_auc_ratio",
                                "Membership-inference ROC AUC, pooled over target models.");
  auto& tpr = metrics::AddGauge(
      *metrics_, "memaudit_membership_tpr_ratio",
      "Membership-inference TPR at the largest threshold whose FPR <= the fpr label.");
  for (const v1::AttackResult& a : results.attacks()) {
    prometheus::Labels labels = {{"audit", results.audit_id()}, {"attack", a.attack()}};
    auc.Add(labels).Set(a.auc());
    for (const v1::OperatingPoint& p : a.operating_points()) {
      prometheus::Labels with_fpr = labels;
      with_fpr["fpr"] = absl::StrFormat("%g", p.fpr_target());
      tpr.Add(with_fpr).Set(p.tpr());
    }
  }
  metrics::AddCounter(*metrics_, "memaudit_scorer_audits_scored_total",
                      "Audits whose metrics were computed.")
      .Add({})
      .Increment();
}

}  // namespace memaudit::scorer
