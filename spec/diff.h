// Two audits of one kind compared metric by metric: every metric a gate may
// name (spec/gates.h) in both, the difference with an interval for it, and
// which changes are significant. One place for `memaudit diff` and the
// coordinator's Diff RPC (the Python client's `diff`).
#ifndef MEMAUDIT_SPEC_DIFF_H_
#define MEMAUDIT_SPEC_DIFF_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memaudit/v1/audit.pb.h"
#include "memaudit/v1/results.pb.h"
#include "spec/gates.h"

namespace memaudit::spec {

struct MetricChange {
  std::string metric;
  std::optional<MetricReading> old_reading;
  std::optional<MetricReading> new_reading;
  // new - old, and its 95% interval (MOVER, from the two intervals): set
  // when both audits have the metric with an interval.
  std::optional<MetricReading> difference;
  // The difference's interval excludes 0.
  bool significant = false;
  // Significant and up: every metric is one where higher means more leakage.
  bool worse = false;
};

// The interval of a - b from a's and b's (Zou & Donner's MOVER, "Construction
// of confidence limits about effect measures", 2008): a - b minus
// sqrt((a - a_low)^2 + (b_high - b)^2), plus sqrt((a_high - a)^2 + (b - b_low)^2).
MetricReading DifferenceOf(const MetricReading& a, const MetricReading& b);

// Every metric of either audit's spec, in the old one's order then the new
// one's own. INVALID_ARGUMENT when the results are of different kinds, lack
// their spec, or are not complete.
absl::StatusOr<std::vector<MetricChange>> DiffResults(const v1::AuditResults& old_results,
                                                      const v1::AuditResults& new_results);

// As the Diff RPC answers it.
v1::DiffResponse DiffProto(const std::vector<MetricChange>& changes);

}  // namespace memaudit::spec

#endif  // MEMAUDIT_SPEC_DIFF_H_
