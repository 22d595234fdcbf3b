#include "audits/dp_audit/scorer_metrics.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "audits/dp_audit/signals.h"
#include "common/base/status_macros.h"
#include "common/messages/export_arrays.h"
#include "common/metrics/metrics.h"
#include "scoring/one_run_audit.h"
#include "scoring/roc.h"
#include "services/scorer/scorer_store.h"

namespace memaudit::scorer {

absl::Status ValidateDpAuditObservation(const v1::DpAudit& d, const v1::Observation& o) {
  if (o.run() >= d.runs()) {
    return absl::InvalidArgumentError(
        absl::StrCat("observation.run: ", o.run(), " is outside the audit's ", d.runs(), " runs"));
  }
  if (o.point() != dp_audit::kPoint) {
    return absl::InvalidArgumentError(
        absl::StrCat("observation.point: must be \"", dp_audit::kPoint, "\""));
  }
  int expected = 0;
  if (o.signal() == dp_audit::kScores) {
    expected = static_cast<int>(d.canaries());
  } else if (o.signal() == dp_audit::kSummary) {
    expected = dp_audit::kSummaryValues;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "observation.signal: must be \"", dp_audit::kScores, "\" or \"", dp_audit::kSummary, "\""));
  }
  if (o.values_size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat("observation.values: ", o.signal(), " holds ",
                                                   expected, " values (got ", o.values_size(),
                                                   ")"));
  }
  for (int i = 0; i < o.values_size(); ++i) {
    const double v = o.values(i);
    // The accountant's epsilon is +inf without noise; nothing else may be.
    const bool may_be_infinite =
        o.signal() == dp_audit::kSummary && i == dp_audit::kAccountantEpsilon && v == HUGE_VAL;
    if (std::isnan(v) || (std::isinf(v) && !may_be_infinite)) {
      return absl::InvalidArgumentError(absl::StrCat("observation.values[", i, "]: not finite"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::AuditResults> ScoreDpAudit(const v1::AuditSpec& spec,
                                              const DpAuditSignals& signals) {
  const v1::DpAudit& d = spec.dp_audit();
  std::vector<double> scores;
  std::vector<uint8_t> included;
  v1::DpAuditResults out;
  double accuracy = 0;
  for (uint32_t run = 0; run < d.runs(); ++run) {
    const auto s = signals.scores.find(run);
    const auto summary = signals.summary.find(run);
    if (s == signals.scores.end() || summary == signals.summary.end()) {
      return absl::FailedPreconditionError(absl::StrCat("run ", run, " has not reported"));
    }
    scores.insert(scores.end(), s->second.begin(), s->second.end());
    const std::vector<uint8_t> bits = dp_audit::Included(spec, run);
    included.insert(included.end(), bits.begin(), bits.end());
    accuracy += summary->second[dp_audit::kTrainAccuracy] / d.runs();
    out.set_accountant_epsilon(
        std::max(out.accountant_epsilon(), summary->second[dp_audit::kAccountantEpsilon]));
    out.set_noise_multiplier(summary->second[dp_audit::kNoiseMultiplier]);
  }
  const std::vector<scoring::GuessBudget> budgets = scoring::DefaultGuessBudgets(scores.size());
  MEMAUDIT_ASSIGN_OR_RETURN(
      scoring::OneRunAuditResult audit,
      scoring::AuditOneRun(scores, included, budgets, d.delta(), d.confidence()));
  MEMAUDIT_ASSIGN_OR_RETURN(double auc, scoring::Auc(scores, included));

  out.set_canary_type(d.canary_type());
  out.set_canaries(d.canaries());
  out.set_runs(d.runs());
  out.set_audited(scores.size());
  const uint64_t in = static_cast<uint64_t>(std::count(included.begin(), included.end(), 1));
  out.set_included(in);
  out.set_delta(d.delta());
  out.set_confidence(d.confidence());
  out.set_significance_per_test(audit.significance_per_budget);
  for (const scoring::BudgetOutcome& b : audit.budgets) {
    v1::DpAuditBudget* p = out.add_budgets();
    p->set_positives(b.budget.positives);
    p->set_negatives(b.budget.negatives);
    p->set_guesses(b.guesses);
    p->set_correct(b.correct);
    p->set_epsilon_lower(b.epsilon_lower);
    p->set_gdp_mu_lower(b.gdp_mu_lower);
  }
  out.set_best_budget(static_cast<uint32_t>(audit.best));
  out.set_epsilon_lower(audit.epsilon_lower);
  out.set_gdp_mu_lower(audit.gdp_mu_lower);
  out.set_gdp_epsilon_lower(audit.gdp_epsilon_lower);
  out.set_max_certifiable_epsilon(
      scoring::PerfectAttackEpsilon(included, budgets, d.delta(), d.confidence()));
  out.set_dp_sgd(d.has_dp_sgd());
  out.set_train_accuracy(accuracy);
  out.set_auc(auc);

  v1::AuditResults results;
  results.set_kind(v1::DP_AUDIT);
  results.set_complete(true);
  results.set_models(d.runs());
  results.set_examples(d.canaries());
  results.set_members(in);
  results.set_non_members(scores.size() - in);
  *results.mutable_dp_audit() = std::move(out);
  return results;
}

namespace {

absl::StatusOr<DpAuditSignals> LoadDpAuditSignals(ScorerStore& store, const std::string& audit_id) {
  DpAuditSignals signals;
  MEMAUDIT_ASSIGN_OR_RETURN(signals.scores,
                            store.LoadSignal(audit_id, dp_audit::kPoint, dp_audit::kScores));
  MEMAUDIT_ASSIGN_OR_RETURN(signals.summary,
                            store.LoadSignal(audit_id, dp_audit::kPoint, dp_audit::kSummary));
  return signals;
}

class DpAuditKind final : public KindHandler {
 public:
  absl::Status ValidateObservation(const v1::AuditSpec& spec,
                                   const v1::Observation& o) const override {
    return ValidateDpAuditObservation(spec.dp_audit(), o);
  }

  absl::StatusOr<std::optional<v1::AuditResults>> Score(ScorerStore& store,
                                                        const std::string& audit_id,
                                                        const v1::AuditSpec& spec) const override {
    MEMAUDIT_ASSIGN_OR_RETURN(DpAuditSignals signals, LoadDpAuditSignals(store, audit_id));
    if (signals.scores.size() < spec.dp_audit().runs() ||
        signals.summary.size() < spec.dp_audit().runs()) {
      return std::nullopt;
    }
    MEMAUDIT_ASSIGN_OR_RETURN(v1::AuditResults results, ScoreDpAudit(spec, signals));
    return std::optional<v1::AuditResults>(std::move(results));
  }

  v1::AuditResults Placeholder(const v1::AuditSpec& spec) const override {
    v1::AuditResults results;
    results.set_kind(v1::DP_AUDIT);
    results.set_complete(false);
    results.set_models(spec.dp_audit().runs());
    results.set_examples(spec.dp_audit().canaries());
    return results;
  }

  absl::StatusOr<std::vector<v1::ExportArray>> Export(ScorerStore& store,
                                                      const std::string& audit_id,
                                                      const v1::AuditSpec& spec) const override {
    const v1::DpAudit& d = spec.dp_audit();
    MEMAUDIT_ASSIGN_OR_RETURN(DpAuditSignals signals, LoadDpAuditSignals(store, audit_id));
    std::vector<double> scores, included;
    for (uint32_t run = 0; run < d.runs(); ++run) {
      const auto s = signals.scores.find(run);
      if (s == signals.scores.end()) {
        return absl::FailedPreconditionError(absl::StrCat("run ", run, " has not reported"));
      }
      scores.insert(scores.end(), s->second.begin(), s->second.end());
      for (uint8_t b : dp_audit::Included(spec, run)) included.push_back(b);
    }
    const std::vector<uint64_t> shape = {d.runs(), d.canaries()};
    std::vector<v1::ExportArray> out;
    out.push_back(MakeExportArray(
        "score", {"run", "canary"}, shape, v1::FLOAT64,
        dp_audit::UsesInputCanaries(d)
            ? "Minus the input canary's loss (with its training label) under the run's model."
            : "The privatised sum's coordinate of the gradient canary less the data's clipped "
              "sum, over the run's steps, in units of the clip norm.",
        std::move(scores)));
    out.push_back(MakeExportArray(
        "included", {"run", "canary"}, shape, v1::UINT8,
        absl::StrCat("1 when the ", d.canary_type(), " canary took part in the run's training."),
        std::move(included)));
    return out;
  }

  void Publish(prometheus::Registry& registry, const v1::AuditResults& results,
               const std::string& team) const override {
    if (!results.has_dp_audit()) return;
    const v1::DpAuditResults& r = results.dp_audit();
    const prometheus::Labels labels = {{"audit", results.audit_id()}, {"team", team}};
    metrics::AddGauge(registry, "memaudit_dp_audit_epsilon_lower",
                      "One-run audit: the epsilon the correct guesses prove the training "
                      "exceeds, at the audit's delta and confidence (0: nothing proven).")
        .Add(labels)
        .Set(r.epsilon_lower());
    metrics::AddGauge(registry, "memaudit_dp_audit_gdp_epsilon_lower",
                      "One-run audit: the mu-GDP lower bound's epsilon at the audit's delta.")
        .Add(labels)
        .Set(r.gdp_epsilon_lower());
    if (r.dp_sgd() && std::isfinite(r.accountant_epsilon())) {
      metrics::AddGauge(registry, "memaudit_dp_audit_accountant_epsilon",
                        "One-run audit: the RDP accountant's epsilon of the audited DP-SGD run "
                        "at the audit's delta, the claim the lower bound tests.")
          .Add(labels)
          .Set(r.accountant_epsilon());
    }
  }

  absl::StatusOr<TaskRef> TaskOf(const v1::AuditSpec& spec,
                                 const v1::Observation& o) const override {
    if (o.run() >= spec.dp_audit().runs()) {
      return absl::InvalidArgumentError(absl::StrCat("observation.run: ", o.run(),
                                                     " is outside the audit's ",
                                                     spec.dp_audit().runs(), " runs"));
    }
    return TaskRef{dp_audit::kRunRole, o.run()};
  }

  absl::StatusOr<std::vector<ObservationKey>> TaskObservations(ScorerStore& /*store*/,
                                                               const std::string& /*audit_id*/,
                                                               const v1::AuditSpec& spec,
                                                               const TaskRef& task) const override {
    if (task.role != dp_audit::kRunRole || task.index >= spec.dp_audit().runs()) {
      return absl::InvalidArgumentError(
          absl::StrCat("task ", task.ToString(), " is not a task of this dp_audit"));
    }
    return std::vector<ObservationKey>{{task.index, dp_audit::kPoint, dp_audit::kScores},
                                       {task.index, dp_audit::kPoint, dp_audit::kSummary}};
  }
};

}  // namespace

}  // namespace memaudit::scorer

namespace memaudit {

template <>
const scorer::KindHandler& HandlerOfKind<scorer::KindHandler, v1::AuditSpec::kDpAudit>() {
  static const scorer::DpAuditKind handler;
  return handler;
}

}  // namespace memaudit
