#include "audits/relational/scorer_metrics.h"

#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "audits/relational/signals.h"
#include "common/base/status_macros.h"
#include "common/messages/export_arrays.h"
#include "scoring/difference_intervals.h"
#include "scoring/intervals.h"
#include "scoring/relational.h"
#include "services/scorer/result_warnings.h"
#include "services/scorer/trial_mean.h"

namespace memaudit::scorer {
namespace {

bool IsLinear(const v1::RelationalAudit& r) { return r.has_linear(); }

std::vector<std::string> TruthSignals(const v1::RelationalAudit& r) {
  if (IsLinear(r)) return {relational::kTargetTrain, relational::kTargetVal};
  return {relational::kNumbersTrain, relational::kNumbersVal};
}

// Per point, in the order ScoreRelational reads them: train, held-out
// predictions, then the clean task.
std::vector<std::string> PointSignals(const v1::RelationalAudit& r) {
  if (IsLinear(r)) {
    return {relational::kRecoveredTrain, relational::kRecoveredVal, relational::kCleanTrain,
            relational::kCleanVal};
  }
  return {relational::kPredictedTrain, relational::kPredictedVal, relational::kCleanTrain,
          relational::kCleanVal};
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  for (const std::string& n : names) {
    if (n == name) return true;
  }
  return false;
}

bool IsTrainSignal(const std::string& s) {
  return s == relational::kNumbersTrain || s == relational::kPredictedTrain ||
         s == relational::kTargetTrain || s == relational::kRecoveredTrain;
}

// UTF-8 bytes, one per value, each line ended by '\n' (relational::AppendLines).
absl::StatusOr<std::vector<std::string>> DecodeLines(const std::vector<double>& values) {
  std::vector<std::string> lines;
  std::string current;
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    if (!(v >= 0 && v <= 255) || v != std::floor(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.values[", i, "]: not a byte (got ", v, ")"));
    }
    if (v == '\n') {
      lines.push_back(std::move(current));
      current.clear();
    } else {
      current.push_back(static_cast<char>(static_cast<unsigned char>(v)));
    }
  }
  if (!current.empty()) {
    return absl::InvalidArgumentError("observation.values: the last line has no '\\n'");
  }
  return lines;
}

absl::StatusOr<scoring::SuccessMetric> ParseMetric(const std::string& name) {
  if (name == "exact_match") return scoring::SuccessMetric::kExactMatch;
  if (name == "digit_f1") return scoring::SuccessMetric::kDigitF1;
  return absl::InvalidArgumentError(absl::StrCat("relational.metrics: unknown \"", name, "\""));
}

bool KnownPoint(const v1::RelationalAudit& r, const std::string& point) {
  uint64_t step = 0;
  if (!absl::SimpleAtoi(point, &step) || absl::StrCat(step) != point) return false;
  if (IsLinear(r)) {
    for (uint64_t s : r.linear().steps()) {
      if (s == step) return true;
    }
    return false;
  }
  return step >= 1 && step <= r.phone_book().training().epochs();
}

std::vector<scoring::QaPrediction> Pairs(const std::vector<std::string>& predictions,
                                         const std::vector<std::string>& truth) {
  std::vector<scoring::QaPrediction> out;
  for (size_t i = 0; i < truth.size(); ++i) out.push_back({predictions[i], {truth[i]}});
  return out;
}

double WithinTolerance(const std::vector<double>& estimates, const std::vector<double>& truth,
                       double tolerance) {
  size_t hits = 0;
  for (size_t i = 0; i < truth.size(); ++i) hits += std::abs(estimates[i] - truth[i]) < tolerance;
  return truth.empty() ? 0.0 : static_cast<double>(hits) / static_cast<double>(truth.size());
}

// Per sample, 1 when the estimate is within the tolerance: what
// WithinTolerance averages, for the intervals.
std::vector<double> ToleranceHits(const std::vector<double>& estimates,
                                  const std::vector<double>& truth, double tolerance) {
  std::vector<double> hits(truth.size());
  for (size_t i = 0; i < truth.size(); ++i) hits[i] = std::abs(estimates[i] - truth[i]) < tolerance;
  return hits;
}

size_t TotalPoints(const v1::AuditResults& results) {
  size_t n = 0;
  for (const v1::RelationalCurve& c : results.relational().curves()) n += c.points_size();
  return n;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> RequiredRelationalSignals(
    const v1::RelationalAudit& r) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& s : TruthSignals(r)) out.emplace_back(relational::kTruthPoint, s);
  const std::vector<std::string> per_point = PointSignals(r);
  for (uint64_t p : relational::Points(r)) {
    for (const std::string& s : per_point) out.emplace_back(absl::StrCat(p), s);
  }
  return out;
}

absl::Status ValidateRelationalObservation(const v1::RelationalAudit& r, const v1::Observation& o) {
  const uint32_t runs = relational::Runs(r);
  if (o.run() >= runs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "observation.run: ", o.run(), " is outside the audit's ", runs, " variants x replicates"));
  }
  const bool truth = o.point() == relational::kTruthPoint;
  if (!truth && !KnownPoint(r, o.point())) {
    return absl::InvalidArgumentError(absl::StrCat("observation.point: \"", o.point(),
                                                   "\" is not a measurement point of this audit"));
  }
  if (!Contains(truth ? TruthSignals(r) : PointSignals(r), o.signal())) {
    return absl::InvalidArgumentError(absl::StrCat("observation.signal: \"", o.signal(),
                                                   "\" is not a signal of this audit at point \"",
                                                   o.point(), "\""));
  }
  for (int i = 0; i < o.values_size(); ++i) {
    if (!std::isfinite(o.values(i))) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.values[", i, "]: not a finite number"));
    }
  }
  const bool train = IsTrainSignal(o.signal());
  if (o.signal() == relational::kCleanTrain || o.signal() == relational::kCleanVal) {
    if (o.values_size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.values: expected 1 value, got ", o.values_size()));
    }
    const double v = o.values(0);
    if (IsLinear(r) ? !(v >= 0) : !(v >= 0 && v <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.values[0]: ", v,
                       IsLinear(r) ? " is not a squared error" : " is not an accuracy"));
    }
    return absl::OkStatus();
  }
  if (IsLinear(r)) {
    if (static_cast<uint32_t>(o.values_size()) != r.linear().samples()) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.values: expected ", r.linear().samples(),
                       " values (one per sample), got ", o.values_size()));
    }
    return absl::OkStatus();
  }
  const v1::PhoneBookSpec& p = r.phone_book();
  const uint32_t records = train ? p.records() : p.validation_records();
  std::vector<double> values(o.values().begin(), o.values().end());
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<std::string> lines, DecodeLines(values));
  if (lines.size() != records) {
    return absl::InvalidArgumentError(absl::StrCat("observation.values: expected ", records,
                                                   " lines (one per record), got ", lines.size()));
  }
  if (truth) {
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string& n = lines[i];
      bool digits = n.size() == p.digits();
      for (char c : n) digits = digits && c >= '0' && c <= '9';
      if (!digits) {
        return absl::InvalidArgumentError(absl::StrCat("observation.values: line ", i, " is not a ",
                                                       p.digits(), "-digit number"));
      }
    }
  }
  return absl::OkStatus();
}

namespace {

// One metric at one reached point of one run (a variant of a replicate):
// every record's success, and the rates the results report.
struct PointRecords {
  uint32_t variant = 0;
  uint32_t replicate = 0;
  uint64_t step = 0;
  std::string metric;
  double success_train = 0, success_val = 0;
  std::vector<double> train, val;
  double clean_train = 0, clean_val = 0;
};

// Calls `visit` for each metric at each point each run (variant of a
// replicate, relational::Runs) has reached, in run order; returns whether
// every run reached every point.
absl::StatusOr<bool> VisitReachedPoints(
    const v1::RelationalAudit& r, const RelationalSignals& signals,
    const std::function<absl::Status(const PointRecords&)>& visit) {
  const std::vector<std::string> metric_names = relational::MetricNames(r);
  std::vector<scoring::SuccessMetric> metrics;
  if (!IsLinear(r)) {
    for (const std::string& m : metric_names) {
      MEMAUDIT_ASSIGN_OR_RETURN(scoring::SuccessMetric parsed, ParseMetric(m));
      metrics.push_back(parsed);
    }
  }
  auto find = [&](const std::string& point, const std::string& signal,
                  uint32_t variant) -> const std::vector<double>* {
    auto it = signals.find({point, signal});
    if (it == signals.end()) return nullptr;
    auto v = it->second.find(variant);
    return v == it->second.end() ? nullptr : &v->second;
  };
  const std::vector<std::string> variants = relational::Variants(r);
  const std::vector<uint64_t> points = relational::Points(r);
  const std::vector<std::string> truth_names = TruthSignals(r);
  const std::vector<std::string> point_names = PointSignals(r);
  bool complete = true;
  for (uint32_t run = 0; run < relational::Runs(r); ++run) {
    const uint32_t v = relational::VariantOfRun(r, run);
    const std::string name =
        absl::StrCat(variants[v], " replicate ", relational::ReplicateOfRun(r, run));
    const std::vector<double>* truth_train = find(relational::kTruthPoint, truth_names[0], run);
    const std::vector<double>* truth_val = find(relational::kTruthPoint, truth_names[1], run);
    if (truth_train == nullptr || truth_val == nullptr) {
      complete = false;
      continue;
    }
    std::vector<std::string> numbers_train, numbers_val;
    if (!IsLinear(r)) {
      auto a = DecodeLines(*truth_train);
      auto b = DecodeLines(*truth_val);
      if (!a.ok()) return a.status();
      if (!b.ok()) return b.status();
      numbers_train = *std::move(a);
      numbers_val = *std::move(b);
    }
    size_t reached = 0;
    for (uint64_t step : points) {
      const std::string key = absl::StrCat(step);
      std::vector<const std::vector<double>*> got;
      got.reserve(point_names.size());
      for (const std::string& s : point_names) got.push_back(find(key, s, run));
      if (got[0] == nullptr || got[1] == nullptr || got[2] == nullptr || got[3] == nullptr) break;
      ++reached;
      PointRecords point;
      point.variant = v;
      point.replicate = relational::ReplicateOfRun(r, run);
      point.step = step;
      point.clean_train = got[2]->at(0);
      point.clean_val = got[3]->at(0);
      if (IsLinear(r)) {
        if (got[0]->size() != truth_train->size() || got[1]->size() != truth_val->size()) {
          return absl::FailedPreconditionError(
              absl::StrCat("variant ", name, " point ", key, ": estimate counts differ"));
        }
        const double tol = r.linear().tolerance();
        point.metric = relational::kWithinTolerance;
        point.success_train = WithinTolerance(*got[0], *truth_train, tol);
        point.success_val = WithinTolerance(*got[1], *truth_val, tol);
        point.train = ToleranceHits(*got[0], *truth_train, tol);
        point.val = ToleranceHits(*got[1], *truth_val, tol);
        MEMAUDIT_RETURN_IF_ERROR(visit(point));
        continue;
      }
      auto predicted_train = DecodeLines(*got[0]);
      auto predicted_val = DecodeLines(*got[1]);
      if (!predicted_train.ok()) return predicted_train.status();
      if (!predicted_val.ok()) return predicted_val.status();
      if (predicted_train->size() != numbers_train.size() ||
          predicted_val->size() != numbers_val.size()) {
        return absl::FailedPreconditionError(
            absl::StrCat("variant ", name, " epoch ", key, ": prediction counts differ"));
      }
      const auto train = Pairs(*predicted_train, numbers_train);
      const auto val = Pairs(*predicted_val, numbers_val);
      for (size_t m = 0; m < metrics.size(); ++m) {
        MEMAUDIT_ASSIGN_OR_RETURN(auto rm,
                                  scoring::ComputeRelationalMemorization(train, val, metrics[m]));
        point.metric = metric_names[m];
        point.success_train = rm.success_train;
        point.success_val = rm.success_val;
        MEMAUDIT_ASSIGN_OR_RETURN(point.train, scoring::RecordSuccesses(train, metrics[m]));
        MEMAUDIT_ASSIGN_OR_RETURN(point.val, scoring::RecordSuccesses(val, metrics[m]));
        MEMAUDIT_RETURN_IF_ERROR(visit(point));
      }
    }
    if (reached < points.size()) complete = false;
  }
  return complete;
}

}  // namespace

absl::StatusOr<v1::AuditResults> ScoreRelational(const v1::AuditSpec& spec,
                                                 const RelationalSignals& signals) {
  const v1::RelationalAudit& r = spec.relational();
  v1::AuditResults results = RelationalPlaceholder(spec);
  v1::RelationalResults* out = results.mutable_relational();
  out->set_model(IsLinear(r) ? "linear" : "phone_book");
  for (const std::string& m : relational::MetricNames(r)) out->add_metrics(m);
  for (const std::string& variant : relational::Variants(r))
    out->add_curves()->set_variant(variant);
  out->set_replicates(relational::Replicates(r));
  // Each replicate's rates at each (variant, step, metric), in replicate
  // order, for the numbers across replicates.
  std::map<std::tuple<uint32_t, uint64_t, std::string>, std::vector<std::array<double, 3>>>
      by_replicate;
  // Replicate 0's rates, and the per-record successes they average for their
  // intervals.
  auto add_point = [&](const PointRecords& point) -> absl::Status {
    by_replicate[{point.variant, point.step, point.metric}].push_back(
        {point.success_train, point.success_val, point.success_train - point.success_val});
    if (point.replicate != 0) return absl::OkStatus();
    MEMAUDIT_ASSIGN_OR_RETURN(const scoring::SuccessIntervals ci,
                              scoring::SuccessRateIntervals(point.train, point.val));
    v1::RelationalPoint* p = out->mutable_curves(point.variant)->add_points();
    p->set_step(point.step);
    p->set_metric(point.metric);
    p->set_success_train(point.success_train);
    p->set_success_val(point.success_val);
    p->set_rm_norm(point.success_train - point.success_val);
    p->set_success_train_low(ci.first.lo);
    p->set_success_train_high(ci.first.hi);
    p->set_success_val_low(ci.second.lo);
    p->set_success_val_high(ci.second.hi);
    p->set_rm_norm_low(ci.difference.lo);
    p->set_rm_norm_high(ci.difference.hi);
    p->set_clean_train(point.clean_train);
    p->set_clean_val(point.clean_val);
    return absl::OkStatus();
  };
  MEMAUDIT_ASSIGN_OR_RETURN(const bool complete, VisitReachedPoints(r, signals, add_point));
  results.set_complete(complete);
  const uint32_t replicates = relational::Replicates(r);
  if (replicates < 2) return results;
  for (int v = 0; v < out->curves_size(); ++v) {
    for (v1::RelationalPoint& p : *out->mutable_curves(v)->mutable_points()) {
      const auto& values = by_replicate[{static_cast<uint32_t>(v), p.step(), p.metric()}];
      if (values.size() < replicates) continue;  // a replicate has not reached it yet
      v1::RelationalAcrossReplicates* across = p.mutable_across_replicates();
      across->set_replicates(replicates);
      v1::TrialMean* means[] = {across->mutable_success_train(), across->mutable_success_val(),
                                across->mutable_rm_norm()};
      for (size_t k = 0; k < 3; ++k) {
        std::vector<double> column;
        for (const auto& value : values) column.push_back(value[k]);
        // Rates lie in [0, 1], their difference in [-1, 1].
        const scoring::Interval range =
            k == 2 ? scoring::Interval{-1.0, 1.0} : scoring::kUnitInterval;
        MEMAUDIT_ASSIGN_OR_RETURN(const scoring::MeanSummary summary,
                                  scoring::SummarizeMean(column, 0.95, range));
        *means[k] = TrialMeanOf(summary);
      }
    }
  }
  return results;
}

absl::StatusOr<std::vector<v1::ExportArray>> RelationalExport(const v1::AuditSpec& spec,
                                                              const RelationalSignals& signals) {
  const v1::RelationalAudit& r = spec.relational();
  const std::vector<std::string> metrics = relational::MetricNames(r);
  const uint64_t variants = relational::Variants(r).size();
  const std::vector<uint64_t> steps = relational::Points(r);
  // [metric] -> records of every (variant, point), in visiting order.
  std::map<std::string, std::vector<double>> train, val;
  uint64_t train_records = 0, val_records = 0;
  auto collect = [&](const PointRecords& point) -> absl::Status {
    if (point.replicate != 0) return absl::OkStatus();  // the arrays are replicate 0's
    if (train[point.metric].empty() && val[point.metric].empty()) {
      train_records = point.train.size();
      val_records = point.val.size();
    }
    if (point.train.size() != train_records || point.val.size() != val_records) {
      return absl::FailedPreconditionError("relational: variants differ in their records");
    }
    train[point.metric].insert(train[point.metric].end(), point.train.begin(), point.train.end());
    val[point.metric].insert(val[point.metric].end(), point.val.begin(), point.val.end());
    return absl::OkStatus();
  };
  MEMAUDIT_ASSIGN_OR_RETURN(const bool complete, VisitReachedPoints(r, signals, collect));
  if (!complete) return absl::FailedPreconditionError("relational: points missing");
  const uint64_t points = steps.size();
  std::vector<v1::ExportArray> out;
  out.push_back(MakeExportArray("step", {"point"}, {points}, v1::INT64,
                                IsLinear(r) ? "gradient steps" : "epochs",
                                std::vector<double>(steps.begin(), steps.end())));
  for (const std::string& m : metrics) {
    out.push_back(MakeExportArray(absl::StrCat("success_train_", m), {"variant", "point", "record"},
                                  {variants, points, train_records}, v1::FLOAT64,
                                  absl::StrCat(m, " success of the corrupted training record"),
                                  std::move(train[m])));
    out.push_back(MakeExportArray(absl::StrCat("success_val_", m), {"variant", "point", "record"},
                                  {variants, points, val_records}, v1::FLOAT64,
                                  absl::StrCat(m, " success of the corrupted held-out record"),
                                  std::move(val[m])));
  }
  return out;
}

absl::StatusOr<RelationalSignals> LoadRelationalSignals(ScorerStore& store,
                                                        const std::string& audit_id,
                                                        const v1::AuditSpec& spec) {
  RelationalSignals signals;
  for (const auto& [point, name] : RequiredRelationalSignals(spec.relational())) {
    MEMAUDIT_ASSIGN_OR_RETURN(auto runs, store.LoadSignal(audit_id, point, name));
    if (!runs.empty()) signals[{point, name}] = std::move(runs);
  }
  return signals;
}

absl::StatusOr<std::optional<v1::AuditResults>> ScoreRelationalFromStore(
    ScorerStore& store, const std::string& audit_id, const v1::AuditSpec& spec) {
  // Whatever has arrived: each curve covers the points its variant reached.
  MEMAUDIT_ASSIGN_OR_RETURN(RelationalSignals signals,
                            LoadRelationalSignals(store, audit_id, spec));
  MEMAUDIT_ASSIGN_OR_RETURN(auto results, ScoreRelational(spec, signals));
  const size_t points = TotalPoints(results);
  if (points == 0) return std::nullopt;
  MEMAUDIT_ASSIGN_OR_RETURN(auto stored, store.GetResults(audit_id));
  if (stored.has_value() && TotalPoints(*stored) == points &&
      stored->complete() == results.complete()) {
    return std::nullopt;  // no new point since the last computation
  }
  return results;
}

v1::AuditResults RelationalPlaceholder(const v1::AuditSpec& spec) {
  const v1::RelationalAudit& r = spec.relational();
  v1::AuditResults results;
  results.set_kind(v1::RELATIONAL);
  results.set_complete(false);
  results.set_models(relational::Runs(r));
  // Training records (samples) are the members, held-out ones the non-members.
  const uint64_t train = IsLinear(r) ? r.linear().samples() : r.phone_book().records();
  const uint64_t held_out =
      IsLinear(r) ? r.linear().samples() : r.phone_book().validation_records();
  results.set_examples(static_cast<uint32_t>(train + held_out));
  results.set_members(train);
  results.set_non_members(held_out);
  return results;
}

void PublishRelational(prometheus::Registry* metrics, const v1::AuditResults& results,
                       const std::string& team) {
  if (metrics == nullptr || !results.has_relational()) return;
  auto& rm = metrics::AddGauge(
      *metrics, "memaudit_relational_rm_norm_ratio",
      "Relational memorization RM_norm = s_train - s_val (success at recovering the private "
      "part from the corrupted record, training minus held-out) at each variant's latest point.");
  auto& success = metrics::AddGauge(
      *metrics, "memaudit_relational_success_ratio",
      "Reconstruction success on corrupted training (split=train) or held-out (split=val) "
      "records at each variant's latest point: the two rates RM_norm is made of.");
  // The 95% intervals' ends, labelled like the numbers they bound.
  auto& rm_low = metrics::AddGauge(
      *metrics, "memaudit_relational_rm_norm_low_ratio",
      "Lower end of RM_norm's 95% interval (Newcombe for 0/1 metrics, else MOVER).");
  auto& rm_high = metrics::AddGauge(
      *metrics, "memaudit_relational_rm_norm_high_ratio",
      "Upper end of RM_norm's 95% interval (Newcombe for 0/1 metrics, else MOVER).");
  auto& success_low = metrics::AddGauge(
      *metrics, "memaudit_relational_success_low_ratio",
      "Lower end of the success rate's 95% interval (Clopper-Pearson for 0/1 metrics, else "
      "Student t).");
  auto& success_high = metrics::AddGauge(
      *metrics, "memaudit_relational_success_high_ratio",
      "Upper end of the success rate's 95% interval (Clopper-Pearson for 0/1 metrics, else "
      "Student t).");
  for (const v1::RelationalCurve& c : results.relational().curves()) {
    if (c.points().empty()) continue;
    const uint64_t latest = c.points(c.points_size() - 1).step();
    for (const v1::RelationalPoint& p : c.points()) {
      if (p.step() != latest) continue;
      prometheus::Labels labels = {{"audit", results.audit_id()},
                                   {"team", team},
                                   {"variant", c.variant()},
                                   {"metric", p.metric()}};
      rm.Add(labels).Set(p.rm_norm());
      rm_low.Add(labels).Set(p.rm_norm_low());
      rm_high.Add(labels).Set(p.rm_norm_high());
      labels["split"] = "train";
      success.Add(labels).Set(p.success_train());
      success_low.Add(labels).Set(p.success_train_low());
      success_high.Add(labels).Set(p.success_train_high());
      labels["split"] = "val";
      success.Add(labels).Set(p.success_val());
      success_low.Add(labels).Set(p.success_val_low());
      success_high.Add(labels).Set(p.success_val_high());
    }
  }
}

namespace {

class Relational final : public KindHandler {
 public:
  absl::Status ValidateObservation(const v1::AuditSpec& spec,
                                   const v1::Observation& o) const override {
    return ValidateRelationalObservation(spec.relational(), o);
  }

  absl::StatusOr<std::optional<v1::AuditResults>> Score(ScorerStore& store,
                                                        const std::string& audit_id,
                                                        const v1::AuditSpec& spec) const override {
    // Curves fill in point by point, like forgetting's.
    return ScoreRelationalFromStore(store, audit_id, spec);
  }

  absl::StatusOr<std::vector<v1::ExportArray>> Export(ScorerStore& store,
                                                      const std::string& audit_id,
                                                      const v1::AuditSpec& spec) const override {
    MEMAUDIT_ASSIGN_OR_RETURN(RelationalSignals signals,
                              LoadRelationalSignals(store, audit_id, spec));
    return RelationalExport(spec, signals);
  }

  // One task per variant and replicate, run = the task's index.
  absl::StatusOr<TaskRef> TaskOf(const v1::AuditSpec& spec,
                                 const v1::Observation& o) const override {
    const uint32_t runs = relational::Runs(spec.relational());
    if (o.run() >= runs) {
      return absl::InvalidArgumentError(absl::StrCat("observation.run: ", o.run(),
                                                     " is outside the audit's ", runs,
                                                     " variants x replicates"));
    }
    return TaskRef{relational::kTaskRole, o.run()};
  }

  absl::StatusOr<std::vector<ObservationKey>> TaskObservations(ScorerStore& /*store*/,
                                                               const std::string& /*audit_id*/,
                                                               const v1::AuditSpec& spec,
                                                               const TaskRef& task) const override {
    if (task.role != relational::kTaskRole || task.index >= relational::Runs(spec.relational())) {
      return absl::InvalidArgumentError(
          absl::StrCat("task ", task.ToString(), " is not a task of this relational audit"));
    }
    std::vector<ObservationKey> out;
    for (const auto& [point, signal] : RequiredRelationalSignals(spec.relational())) {
      out.push_back({task.index, point, signal});
    }
    return out;
  }

  bool Streams() const override { return true; }

  v1::AuditResults Placeholder(const v1::AuditSpec& spec) const override {
    return RelationalPlaceholder(spec);
  }

  void Publish(prometheus::Registry& registry, const v1::AuditResults& results,
               const std::string& team) const override {
    PublishRelational(&registry, results, team);
  }

  std::vector<v1::ResultWarning> Warnings(const v1::AuditSpec& spec) const override {
    return RelationalWarnings(spec.relational());
  }
};

}  // namespace

}  // namespace memaudit::scorer

namespace memaudit {

template <>
const scorer::KindHandler& HandlerOfKind<scorer::KindHandler, v1::AuditSpec::kRelational>() {
  static const scorer::Relational handler;
  return handler;
}

}  // namespace memaudit
