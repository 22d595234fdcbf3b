#include "audits/exposure/scorer_replicates.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "scoring/intervals.h"
#include "services/scorer/trial_mean.h"

namespace memaudit::scorer {
namespace {

bool Ran(const v1::ExposureResults& x, const char* estimator) {
  return std::find(x.estimators().begin(), x.estimators().end(), estimator) != x.estimators().end();
}

// One estimator's per-canary value.
using Value = double (v1::CanaryResult::*)() const;

// The mean of `value` over the canaries inserted `repeats` times.
double GroupMean(const v1::ExposureResults& x, uint32_t repeats, Value value) {
  double sum = 0;
  int n = 0;
  for (const v1::CanaryResult& c : x.canaries()) {
    if (c.repeats() != repeats) continue;
    sum += (c.*value)();
    ++n;
  }
  return n > 0 ? sum / n : std::numeric_limits<double>::quiet_NaN();
}

// The group's mean across replicates; nullopt where a replicate's mean is
// not finite (a failed skew-normal fit gives NaN extrapolated exposure).
absl::StatusOr<std::optional<v1::TrialMean>> AcrossReplicates(
    const std::vector<v1::ExposureResults>& replicates, uint32_t repeats, Value value,
    scoring::Interval range) {
  std::vector<double> means;
  for (const v1::ExposureResults& r : replicates) {
    means.push_back(GroupMean(r, repeats, value));
    if (!std::isfinite(means.back())) return std::nullopt;
  }
  MEMAUDIT_ASSIGN_OR_RETURN(scoring::MeanSummary s, scoring::SummarizeMean(means, 0.95, range));
  return std::optional<v1::TrialMean>(TrialMeanOf(s));
}

void AddModel(uint32_t index, const v1::ExposureResults& r, bool sampled, bool extrapolated,
              v1::ExposureReplicate* m) {
  m->set_replicate(index);
  m->set_training_steps(r.training_steps());
  m->set_final_loss(r.final_loss());
  for (const v1::CanaryResult& c : r.canaries()) {
    m->add_px_bits(c.px_bits());
    m->add_rank(c.rank());
    m->add_exact(c.exact());
    m->add_exposure(c.exposure());
    m->add_secret(c.secret());
    if (sampled) {
      m->add_sampled_exposure(c.sampled_exposure());
      m->add_sampled_lower_bound(c.sampled_lower_bound());
    }
    if (extrapolated) m->add_extrapolated_exposure(c.extrapolated_exposure());
  }
}

}  // namespace

absl::Status AddAcrossReplicates(const std::vector<v1::ExposureResults>& replicates,
                                 v1::ExposureResults* x) {
  const size_t k = replicates.size();
  if (k < 2) return absl::OkStatus();
  const bool sampled = Ran(*x, "sampled"), extrapolated = Ran(*x, "extrapolated");
  for (const v1::ExposureResults& r : replicates) {
    if (r.canaries_size() != x->canaries_size()) {
      return absl::InvalidArgumentError("replicate models: canary counts differ");
    }
  }
  v1::ExposureReplicates* models = x->mutable_replicates();
  models->set_count(static_cast<uint32_t>(k));
  for (size_t r = 0; r < k; ++r) {
    AddModel(static_cast<uint32_t>(r), replicates[r], sampled, extrapolated, models->add_models());
  }
  // Each estimator's interval stays inside what it can take: exact in
  // [0, log2|R|], sampled in [0, log2|S|], extrapolated >= 0 (uncapped).
  const scoring::Interval exact_range{0, x->log2_space()};
  const scoring::Interval sampled_range{0, x->log2_reference_samples()};
  const scoring::Interval extrapolated_range{0, std::numeric_limits<double>::infinity()};
  for (v1::ExposureByRepeats& g : *x->mutable_by_repeats()) {
    v1::ExposureAcrossReplicates* across = g.mutable_across_replicates();
    across->set_replicates(static_cast<uint32_t>(k));
    const struct {
      bool ran;
      Value value;
      scoring::Interval range;
      v1::TrialMean* (v1::ExposureAcrossReplicates::*out)();
    } estimators[] = {{true, &v1::CanaryResult::exposure, exact_range,
                       &v1::ExposureAcrossReplicates::mutable_exposure},
                      {sampled, &v1::CanaryResult::sampled_exposure, sampled_range,
                       &v1::ExposureAcrossReplicates::mutable_sampled_exposure},
                      {extrapolated, &v1::CanaryResult::extrapolated_exposure, extrapolated_range,
                       &v1::ExposureAcrossReplicates::mutable_extrapolated_exposure}};
    for (const auto& e : estimators) {
      if (!e.ran) continue;
      MEMAUDIT_ASSIGN_OR_RETURN(std::optional<v1::TrialMean> m,
                                AcrossReplicates(replicates, g.repeats(), e.value, e.range));
      if (m) *(across->*e.out)() = *std::move(m);
    }
  }
  return absl::OkStatus();
}

void PublishExposureReplicates(
    prometheus::Registry& metrics, const std::string& audit, const std::string& team,
    const std::vector<std::pair<std::string, const v1::ExposureResults*>>& variants) {
  bool any = false;
  for (const auto& [name, x] : variants) any = any || x->has_replicates();
  if (!any) return;
  auto& mean = metrics::AddGauge(
      metrics, "memaudit_exposure_replicated_log2",
      "Exposure by variant, insertion count (0 = controls) and estimator (exact, sampled, "
      "extrapolated) across the spec's replicate canary models: the mean over replicates of "
      "each replicate's mean over the group's canaries.");
  auto& low = metrics::AddGauge(metrics, "memaudit_exposure_replicated_low_log2",
                                "Low end of the Student-t 95% interval across replicates of "
                                "memaudit_exposure_replicated_log2.");
  auto& high = metrics::AddGauge(metrics, "memaudit_exposure_replicated_high_log2",
                                 "High end of the Student-t 95% interval across replicates of "
                                 "memaudit_exposure_replicated_log2.");
  for (const auto& [name, x] : variants) {
    for (const v1::ExposureByRepeats& g : x->by_repeats()) {
      if (!g.has_across_replicates()) continue;
      const v1::ExposureAcrossReplicates& a = g.across_replicates();
      for (const auto& [estimator, has, m] :
           {std::tuple<const char*, bool, const v1::TrialMean*>{"exact", a.has_exposure(),
                                                                &a.exposure()},
            {"sampled", a.has_sampled_exposure(), &a.sampled_exposure()},
            {"extrapolated", a.has_extrapolated_exposure(), &a.extrapolated_exposure()}}) {
        if (!has) continue;
        const prometheus::Labels labels = {{"audit", audit},
                                           {"team", team},
                                           {"variant", name},
                                           {"insertions", absl::StrCat(g.repeats())},
                                           {"estimator", estimator}};
        mean.Add(labels).Set(m->mean());
        low.Add(labels).Set(m->low());
        high.Add(labels).Set(m->high());
      }
    }
  }
}

}  // namespace memaudit::scorer
