#include "spec/gates.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "scoring/intervals.h"
#include "scoring/normal.h"
#include "spec/kind_handler.h"

namespace memaudit::spec {
namespace {

const GateMetric* Find(const std::vector<GateMetric>& metrics, const std::string& name) {
  for (const GateMetric& m : metrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::string Interval(const MetricReading& r) {
  return absl::StrFormat("[%.4g, %.4g]", r.low, r.high);
}

// How many times the data would narrow the interval enough to decide, if
// the estimate stayed where it is: the half-width shrinks as 1/sqrt(data)
// and must fall under the estimate's distance to the limit.
std::string WhatWouldDecide(const MetricReading& r, double limit, const std::string& scales_with) {
  const double distance = std::abs(r.value - limit);
  const double half_width = (r.high - r.low) / 2;
  if (!(distance > 0) || !(half_width > 0) || !std::isfinite(half_width)) {
    return "the estimate sits on the limit: no amount of data decides it";
  }
  const double factor = std::pow(half_width / distance, 2);
  return absl::StrFormat("needs ~%.2g x the %s to decide, if the estimate holds", factor,
                         scales_with);
}

// The reading's interval at `confidence`: each side's distance from the
// value scaled by z_{(1+c)/2} / z_{0.975} (exact for a normal interval, a
// normal approximation for the exact-binomial and bootstrap ones).
MetricReading AtConfidence(const MetricReading& r, double confidence) {
  if (confidence == 0 || confidence == kGateConfidence) return r;
  const double scale = scoring::NormalQuantile((1 + confidence) / 2) / scoring::kZ95;
  return {r.value, r.value - (r.value - r.low) * scale, r.value + (r.high - r.value) * scale};
}

}  // namespace

MetricReading ReadingOf(double value, double rerun_low, double rerun_high, double low,
                        double high) {
  if (rerun_high > rerun_low) return {value, rerun_low, rerun_high};
  return {value, low, high};
}

void ValidateGates(const v1::AuditSpec& spec, const std::vector<GateMetric>* metrics,
                   std::vector<SpecProblem>* problems) {
  if (spec.gates_size() > kMaxGates) {
    problems->push_back(
        {"gates", absl::StrCat("at most ", kMaxGates, " gates (got ", spec.gates_size(), ")")});
    return;
  }
  for (int i = 0; i < spec.gates_size(); ++i) {
    const v1::Gate& g = spec.gates(i);
    const std::string field = absl::StrCat("gates[", i, "]");
    if (metrics != nullptr && Find(*metrics, g.metric()) == nullptr) {
      std::vector<std::string> names;
      names.reserve(metrics->size());
      for (const GateMetric& m : *metrics) names.push_back(m.name);
      problems->push_back({
          field + ".metric",
          absl::StrCat("\"", g.metric().substr(0, 64), "\" is not a metric of this ",
                       AuditKindName(spec.kind_case()), " audit",
                       names.empty() ? " (it reports none a gate can read)"
                                     : absl::StrCat("; it reports: ", absl::StrJoin(names, ", "))),
      });
    }
    if (g.has_max() == g.has_min()) {
      problems->push_back({field, "set exactly one of max and min"});
    } else if (!std::isfinite(g.has_max() ? g.max() : g.min())) {
      problems->push_back({field + (g.has_max() ? ".max" : ".min"), "must be finite"});
    }
    if (g.confidence() != 0 &&
        !(g.confidence() >= kMinGateConfidence && g.confidence() <= kMaxGateConfidence)) {
      problems->push_back({field + ".confidence",
                           absl::StrCat("must be in [", kMinGateConfidence, ", ",
                                        kMaxGateConfidence, "] (got ", g.confidence(), ")")});
    } else if (const GateMetric* m = metrics == nullptr ? nullptr : Find(*metrics, g.metric());
               m != nullptr && !m->interval && g.confidence() != 0 &&
               g.confidence() != kGateConfidence) {
      problems->push_back(
          {field + ".confidence",
           absl::StrCat("\"", g.metric(),
                        "\" is a bound that holds at the "
                        "audit's own confidence, not an interval: leave it unset")});
    }
  }
}

v1::GateVerdict Judge(const v1::Gate& gate, std::optional<MetricReading> reading,
                      const std::string& scales_with) {
  v1::GateVerdict v;
  v.set_metric(gate.metric());
  const bool is_max = gate.has_max();
  v.set_bound(is_max ? "max" : "min");
  const double limit = is_max ? gate.max() : gate.min();
  v.set_limit(limit);
  if (!reading.has_value()) {
    v.set_outcome(v1::GATE_INCONCLUSIVE);
    v.set_reason("the results do not have this metric");
    return v;
  }
  reading = AtConfidence(*reading, gate.confidence());
  v.set_value(reading->value);
  v.set_low(reading->low);
  v.set_high(reading->high);
  const std::string interval = Interval(*reading);
  // Beyond the limit: fail; within it: pass; across it: inconclusive.
  const bool beyond = is_max ? reading->low > limit : reading->high < limit;
  const bool within = is_max ? reading->high <= limit : reading->low >= limit;
  if (beyond) {
    v.set_outcome(v1::GATE_FAIL);
    v.set_reason(absl::StrCat("its interval ", interval, " lies ", is_max ? "above" : "below",
                              " the limit"));
  } else if (within) {
    v.set_outcome(v1::GATE_PASS);
    v.set_reason(absl::StrCat("its interval ", interval, " lies within the limit"));
  } else {
    v.set_outcome(v1::GATE_INCONCLUSIVE);
    v.set_reason(absl::StrCat("its interval ", interval, " contains the limit; ",
                              WhatWouldDecide(*reading, limit, scales_with)));
  }
  return v;
}

std::vector<v1::GateVerdict> JudgeGates(const v1::AuditSpec& spec,
                                        const v1::AuditResults& results) {
  std::vector<v1::GateVerdict> out;
  const KindHandler* kind = HandlerFor(spec.kind_case());
  if (kind == nullptr || spec.gates_size() == 0) return out;
  const std::vector<GateMetric> metrics = kind->GateMetrics(spec);
  for (const v1::Gate& g : spec.gates()) {
    const GateMetric* m = Find(metrics, g.metric());
    out.push_back(m == nullptr ? Judge(g, std::nullopt, "")
                               : Judge(g, m->read(results), m->scales_with));
  }
  return out;
}

}  // namespace memaudit::spec
