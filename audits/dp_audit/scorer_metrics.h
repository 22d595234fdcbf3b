// Scoring of a `dp_audit` (Privacy Auditing with One (1) Training Run): the
// runs' canary scores pooled, the inclusion bits read from the seed, and the
// epsilon and mu-GDP lower bounds of scoring/one_run_audit.h.
#ifndef MEMAUDIT_AUDITS_DP_AUDIT_SCORER_METRICS_H_
#define MEMAUDIT_AUDITS_DP_AUDIT_SCORER_METRICS_H_

#include <cstdint>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "memaudit/v1/results.pb.h"
#include "memaudit/v1/scorer.pb.h"
#include "memaudit/v1/spec.pb.h"
#include "services/scorer/kind_handler.h"

namespace memaudit::scorer {

absl::Status ValidateDpAuditObservation(const v1::DpAudit& d, const v1::Observation& o);

// Per run: its canary scores and its summary (audits/dp_audit/signals.h).
struct DpAuditSignals {
  std::map<uint32_t, std::vector<double>> scores;
  std::map<uint32_t, std::vector<double>> summary;
};

// Complete results from every run's signals; FAILED_PRECONDITION while a
// run is missing.
absl::StatusOr<v1::AuditResults> ScoreDpAudit(const v1::AuditSpec& spec,
                                              const DpAuditSignals& signals);

}  // namespace memaudit::scorer

#endif  // MEMAUDIT_AUDITS_DP_AUDIT_SCORER_METRICS_H_
