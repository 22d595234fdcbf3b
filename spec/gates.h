// Release gates (docs/gates.md): a spec's limits on its audit's metrics,
// checked at Submit against the metrics the kind reports, and judged from
// each metric's interval once the results are complete.
#ifndef MEMAUDIT_SPEC_GATES_H_
#define MEMAUDIT_SPEC_GATES_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "memaudit/v1/results.pb.h"
#include "memaudit/v1/spec.pb.h"
#include "spec/spec_validator.h"

namespace memaudit::spec {

inline constexpr int kMaxGates = 32;
// The level of every interval in the results, so of a gate by default. A
// gate may ask for another level in [0.5, 0.999]: the interval it reads is
// rescaled to it (docs/gates.md, "Confidence").
inline constexpr double kGateConfidence = 0.95;
inline constexpr double kMinGateConfidence = 0.5;
inline constexpr double kMaxGateConfidence = 0.999;

// A metric's value and the interval a verdict reads.
struct MetricReading {
  double value = 0;
  double low = 0;
  double high = 0;
};

// A metric a gate may name (and `memaudit diff` compares): how to read it
// from complete results (nullopt when they lack it), and what more of would
// narrow its interval (for an inconclusive verdict's reason: "reference
// models", "canaries"). Every metric is one where higher means more leakage.
struct GateMetric {
  std::string name;
  std::string scales_with;
  std::function<std::optional<MetricReading>(const v1::AuditResults&)> read;
  // False for a bound that already holds at a confidence (a dp_audit's ε
  // lower bound): its reading is the bound itself, with no interval for a
  // difference of two audits.
  bool interval = true;
};

// A reading from a value and its interval: the re-run interval when the
// results have one (high > low), else the sampling interval.
MetricReading ReadingOf(double value, double rerun_low, double rerun_high, double low, double high);

// A metric of one record of the results (an attack's, an attack cell's):
// `find` picks the record (null when absent), and the accessors read its
// value, re-run interval and sampling interval (ReadingOf).
template <class Record>
GateMetric RecordMetric(std::string name, std::string scales_with,
                        std::function<const Record*(const v1::AuditResults&)> find,
                        double (Record::*value)() const, double (Record::*rerun_low)() const,
                        double (Record::*rerun_high)() const, double (Record::*low)() const,
                        double (Record::*high)() const) {
  return {std::move(name), std::move(scales_with),
          [=](const v1::AuditResults& r) -> std::optional<MetricReading> {
            const Record* record = find(r);
            if (record == nullptr) return std::nullopt;
            return ReadingOf((record->*value)(), (record->*rerun_low)(), (record->*rerun_high)(),
                             (record->*low)(), (record->*high)());
          }};
}

// One problem per bad field of spec.gates: a metric the kind does not
// report (naming the ones it does; not checked when `metrics` is null, as
// for a kind spec with problems of its own), not exactly one of max and
// min, a limit that is not finite, a confidence outside [0.5, 0.999] or,
// on a bound without an interval, other than 0.95.
void ValidateGates(const v1::AuditSpec& spec, const std::vector<GateMetric>* metrics,
                   std::vector<SpecProblem>* problems);

// The verdict of one gate from a reading at 95% (nullopt: the metric is
// missing), its interval rescaled to the gate's confidence.
v1::GateVerdict Judge(const v1::Gate& gate, std::optional<MetricReading> reading,
                      const std::string& scales_with);

// Every gate of `spec` judged on `results` (complete), in the spec's order.
std::vector<v1::GateVerdict> JudgeGates(const v1::AuditSpec& spec, const v1::AuditResults& results);

}  // namespace memaudit::spec

#endif  // MEMAUDIT_SPEC_GATES_H_
