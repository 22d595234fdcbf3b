#include "services/scorer/exposure_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/exposure_signals.h"
#include "scoring/exposure.h"
#include "scoring/skew_normal.h"

namespace memaudit::scorer {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

size_t CanaryCount(const v1::ExposureAudit& e) { return e.repeats_size() + e.controls(); }

bool IsPerCanary(const std::string& signal) {
  return signal == exposure::kRepeats || signal == exposure::kPxBits || signal == exposure::kRank ||
         signal == exposure::kExact || signal == exposure::kRankQueries;
}

bool IsBytes(double v) { return v >= 0 && v <= 255 && v == std::floor(v); }

std::string DecodeBytes(const std::vector<double>& values, size_t from) {
  std::string out;
  for (size_t i = from; i < values.size(); ++i) out.push_back(static_cast<char>(values[i]));
  return out;
}

double Median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return kNaN;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// Bins for the report's plot of the reference Px against the skew-normal fit.
constexpr int kPxHistogramBins = 40;

// Equal bins over [min, max], the maximum in the last bin; when every value
// is the same, bins over [v - 0.5, v + 0.5]. `px` is non-empty and finite.
v1::PxHistogram PxHistogramOf(const std::vector<double>& px) {
  const auto [lo, hi] = std::minmax_element(px.begin(), px.end());
  v1::PxHistogram h;
  h.set_bin_width(*hi > *lo ? (*hi - *lo) / kPxHistogramBins : 1.0 / kPxHistogramBins);
  h.set_low(*hi > *lo ? *lo : *lo - 0.5);
  std::vector<uint64_t> counts(kPxHistogramBins, 0);
  for (double v : px) {
    const int bin = static_cast<int>(std::floor((v - h.low()) / h.bin_width()));
    ++counts[std::clamp(bin, 0, kPxHistogramBins - 1)];
  }
  h.mutable_counts()->Add(counts.begin(), counts.end());
  return h;
}

}  // namespace

std::vector<std::string> RequiredExposureSignals(const v1::ExposureAudit& e) {
  std::vector<std::string> out = {
      exposure::kRepeats,     exposure::kPxBits,      exposure::kRank,       exposure::kExact,
      exposure::kRankQueries, exposure::kSecretsUtf8, exposure::kExtraction, exposure::kModel};
  if (exposure::NeedsReferences(e.estimator())) out.push_back(exposure::kReferencePxBits);
  return out;
}

absl::Status ValidateExposureObservation(const v1::ExposureAudit& e, const v1::Observation& o) {
  if (o.run() >= kExposureModels) {
    return absl::InvalidArgumentError(absl::StrCat("observation.run: ", o.run(),
                                                   " is outside the audit's ", kExposureModels,
                                                   " canary model(s)"));
  }
  if (o.point() != "final") {
    return absl::InvalidArgumentError(
        absl::StrCat("observation.point: \"", o.point(), "\" (expected \"final\")"));
  }
  const std::vector<std::string> known = RequiredExposureSignals(e);
  if (std::find(known.begin(), known.end(), o.signal()) == known.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("observation.signal: \"", o.signal(), "\" is not a signal of this audit"));
  }
  const size_t n = o.values_size();
  size_t expected = 0;
  if (IsPerCanary(o.signal())) {
    expected = CanaryCount(e);
  } else if (o.signal() == exposure::kReferencePxBits) {
    expected = e.reference_samples();
  } else if (o.signal() == exposure::kModel) {
    expected = exposure::kModelValues;
  }
  if (expected > 0 && n != expected) {
    return absl::InvalidArgumentError(absl::StrCat("observation.values: expected ", expected,
                                                   " values for signal \"", o.signal(), "\", got ",
                                                   n));
  }
  if (o.signal() == exposure::kExtraction && n < exposure::kExtractionHeader) {
    return absl::InvalidArgumentError("observation.values: extraction needs 3 header values");
  }
  for (size_t i = 0; i < n; ++i) {
    const double v = o.values(i);
    bool ok = std::isfinite(v);
    if (o.signal() == exposure::kSecretsUtf8) ok = IsBytes(v);
    if (o.signal() == exposure::kExtraction && i >= exposure::kExtractionHeader) ok = IsBytes(v);
    if (o.signal() == exposure::kExact) ok = v == 0 || v == 1;
    if (o.signal() == exposure::kRank) ok = v >= 1 && v == std::floor(v);
    if (o.signal() == exposure::kRepeats)
      ok = v == (i < static_cast<size_t>(e.repeats_size()) ? e.repeats(static_cast<int>(i)) : 0);
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("observation.values[", i, "]: ", v,
                                                     " is not a valid \"", o.signal(), "\" value"));
    }
  }
  if (o.signal() == exposure::kSecretsUtf8) {
    const std::string text = DecodeBytes({o.values().begin(), o.values().end()}, 0);
    if (static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) != CanaryCount(e)) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.values: expected ", CanaryCount(e), " newline-ended secrets"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::AuditResults> ScoreExposure(
    const v1::AuditSpec& spec, const std::map<std::string, std::vector<double>>& signals) {
  const v1::ExposureAudit& e = spec.exposure();
  for (const std::string& name : RequiredExposureSignals(e)) {
    if (!signals.count(name)) return absl::FailedPreconditionError(absl::StrCat("missing ", name));
  }
  const std::vector<double>& repeats = signals.at(exposure::kRepeats);
  const std::vector<double>& px = signals.at(exposure::kPxBits);
  const std::vector<double>& rank = signals.at(exposure::kRank);
  const std::vector<double>& exact = signals.at(exposure::kExact);
  const std::vector<double>& queries = signals.at(exposure::kRankQueries);
  const std::vector<double>& model = signals.at(exposure::kModel);
  const std::vector<double>& extraction = signals.at(exposure::kExtraction);
  const size_t count = CanaryCount(e);
  if (px.size() != count || model.size() != exposure::kModelValues) {
    return absl::InvalidArgumentError("observations: shapes do not match the spec");
  }
  std::vector<std::string> secrets;
  std::string all = DecodeBytes(signals.at(exposure::kSecretsUtf8), 0);
  for (size_t start = 0, end; (end = all.find('\n', start)) != std::string::npos; start = end + 1) {
    secrets.push_back(all.substr(start, end - start));
  }
  if (secrets.size() != count) return absl::InvalidArgumentError("secrets_utf8: wrong count");

  v1::AuditResults results;
  results.set_kind("exposure");
  results.set_complete(true);
  results.set_models(kExposureModels);
  results.set_examples(static_cast<uint32_t>(count));
  v1::ExposureResults* out = results.mutable_exposure();
  const double log2_space = model[0];
  out->set_log2_space(log2_space);
  out->set_training_steps(static_cast<uint64_t>(model[1]));
  out->set_final_loss(model[2]);
  const bool sampled = e.estimator() == "sampled" || e.estimator() == "all";
  const bool extrapolated = e.estimator() == "extrapolated" || e.estimator() == "all";
  // The exact rank is always computed (bounded by the query budget): it is
  // what the extraction check and the headline "rank 1" rest on.
  out->add_estimators("exact");
  if (sampled) out->add_estimators("sampled");
  if (extrapolated) out->add_estimators("extrapolated");

  std::vector<double> refs;
  if (exposure::NeedsReferences(e.estimator())) refs = signals.at(exposure::kReferencePxBits);
  out->set_reference_samples(static_cast<uint32_t>(refs.size()));
  out->set_log2_reference_samples(refs.empty() ? 0 : std::log2(static_cast<double>(refs.size())));
  if (!refs.empty()) *out->mutable_reference_px_histogram() = PxHistogramOf(refs);
  scoring::SkewNormalParams fit;
  bool fitted = false;
  if (extrapolated) {
    // A failed fit (e.g. a degenerate sample) leaves the extrapolated numbers
    // NaN rather than blocking the audit's other results.
    absl::StatusOr<scoring::SkewNormalFit> f = scoring::FitSkewNormal(refs);
    if (f.ok()) {
      fit = f->params;
      fitted = true;
      out->set_fit_location(fit.location);
      out->set_fit_scale(fit.scale);
      out->set_fit_shape(fit.shape);
      out->set_fit_ks_statistic(f->ks.statistic);
      out->set_fit_ks_p_value(f->ks.p_value);
    }
  }

  for (size_t i = 0; i < count; ++i) {
    v1::CanaryResult* c = out->add_canaries();
    c->set_secret(secrets[i]);
    c->set_repeats(static_cast<uint32_t>(repeats[i]));
    c->set_px_bits(px[i]);
    c->set_rank(static_cast<uint64_t>(rank[i]));
    c->set_exact(exact[i] != 0);
    c->set_rank_queries(static_cast<uint64_t>(queries[i]));
    absl::StatusOr<scoring::ExposureResult> x = scoring::ExposureFromRank(log2_space, c->rank());
    if (!x.ok()) return x.status();
    c->set_exposure(x->exposure);
    if (sampled) {
      absl::StatusOr<scoring::ExposureResult> s = scoring::SampledExposure(refs, px[i]);
      if (!s.ok()) return s.status();
      c->set_sampled_exposure(s->exposure);
      c->set_sampled_lower_bound(s->lower_bound);
    }
    c->set_extrapolated_exposure(!extrapolated ? 0
                                 : fitted      ? scoring::ExtrapolatedExposure(fit, px[i])
                                               : kNaN);
  }

  std::map<uint32_t, std::vector<const v1::CanaryResult*>> groups;
  for (const v1::CanaryResult& c : out->canaries()) groups[c.repeats()].push_back(&c);
  for (const auto& [r, members] : groups) {
    std::vector<double> ex, sa, xt;
    for (const v1::CanaryResult* c : members) {
      ex.push_back(c->exposure());
      sa.push_back(c->sampled_exposure());
      xt.push_back(c->extrapolated_exposure());
    }
    v1::ExposureByRepeats* g = out->add_by_repeats();
    g->set_repeats(r);
    g->set_canaries(static_cast<uint32_t>(members.size()));
    g->set_mean_exposure(Mean(ex));
    g->set_median_exposure(Median(ex));
    g->set_mean_sampled_exposure(sampled ? Mean(sa) : 0);
    g->set_median_sampled_exposure(sampled ? Median(sa) : 0);
    g->set_mean_extrapolated_exposure(extrapolated ? Mean(xt) : 0);
    g->set_median_extrapolated_exposure(extrapolated ? Median(xt) : 0);
    if (r == 0) {
      out->set_control_median_exposure(g->median_exposure());
      out->set_control_median_sampled_exposure(g->median_sampled_exposure());
      out->set_control_median_extrapolated_exposure(g->median_extrapolated_exposure());
    }
  }

  out->set_extraction_attempted(extraction[0] != 0);
  out->set_extracted(extraction[1] != 0);
  out->set_extraction_queries(static_cast<uint64_t>(extraction[2]));
  out->set_extraction(DecodeBytes(extraction, exposure::kExtractionHeader));
  if (e.repeats_size() > 0) {
    const int most = static_cast<int>(std::max_element(e.repeats().begin(), e.repeats().end()) -
                                      e.repeats().begin());
    out->set_extraction_target(secrets[most]);
  }
  return results;
}

void PublishExposure(metrics::Registry* metrics, const v1::AuditResults& results) {
  if (metrics == nullptr || !results.has_exposure()) return;
  const v1::ExposureResults& x = results.exposure();
  auto& bits = metrics->AddGauge(
      "memaudit_exposure_log2",
      "Median canary exposure (log2|R| - log2 rank) by insertion count; 0 = controls.");
  for (const v1::ExposureByRepeats& g : x.by_repeats()) {
    for (const std::string& estimator : x.estimators()) {
      const double value = estimator == "exact"     ? g.median_exposure()
                           : estimator == "sampled" ? g.median_sampled_exposure()
                                                    : g.median_extrapolated_exposure();
      if (!std::isfinite(value)) continue;
      bits.Add({{"audit", results.audit_id()},
                {"insertions", absl::StrCat(g.repeats())},
                {"estimator", estimator}})
          .Set(value);
    }
  }
  metrics
      ->AddGauge("memaudit_exposure_space_log2",
                 "log2|R|, the largest exposure the canary space allows.")
      .Add({{"audit", results.audit_id()}})
      .Set(x.log2_space());
}

}  // namespace memaudit::scorer
