// The layout of a `dp_audit` (Privacy Auditing with One (1) Training Run) and
// its worker -> scorer contract: one task per run (role kRunRole, index =
// the run), which sends the canaries' scores and a summary at point kPoint.
// Which canaries each run includes is a pure function of the spec, so the
// scorer reads the truth from the seed, never from the worker. Header-only
// and torch-free so the coordinator, worker and scorer agree.
#ifndef MEMAUDIT_AUDITS_DP_AUDIT_SIGNALS_H_
#define MEMAUDIT_AUDITS_DP_AUDIT_SIGNALS_H_

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit::dp_audit {

inline constexpr char kRunRole[] = "dp_audit_run";
inline constexpr char kPoint[] = "final";
// Per canary, in canary order: higher = more likely included.
inline constexpr char kScores[] = "scores";
// kSummaryValues values at these places.
inline constexpr char kSummary[] = "summary";
inline constexpr int kTrainAccuracy = 0;
inline constexpr int kAccountantEpsilon = 1;  // 0 without DP-SGD
inline constexpr int kNoiseMultiplier = 2;    // 0 without DP-SGD
inline constexpr int kSummaryValues = 3;

inline constexpr char kInputCanaries[] = "input";
inline constexpr char kGradientCanaries[] = "gradient";

inline bool UsesInputCanaries(const v1::DpAudit& d) { return d.canary_type() != kGradientCanaries; }

// Input canaries' scores, and where the canaries come from.
inline constexpr char kLossScore[] = "loss";
inline constexpr char kScaledLogitScore[] = "scaled_logit";
inline constexpr char kMislabelledCanaries[] = "mislabelled";
inline constexpr char kFirstRowsCanaries[] = "first_rows";
// The team's own canaries: the dataset's first `canaries` rows, as labelled.
inline bool TeamCanaries(const v1::DpAudit& d) { return d.canary_source() == kFirstRowsCanaries; }

// Audit-pool positions: input canaries take the first `canaries` (the
// team's own: the dataset's first rows, outside the drawn pool), the
// training set the rest; gradient canaries need no rows.
inline uint32_t FirstTrainingPosition(const v1::DpAudit& d) {
  return UsesInputCanaries(d) ? d.canaries() : 0;
}
inline uint32_t TrainingExamples(const v1::DpAudit& d) {
  const uint32_t first = FirstTrainingPosition(d);
  return d.dataset().pool_size() > first ? d.dataset().pool_size() - first : 0;
}

// Seeds of run `run`: what each run draws on its own.
inline uint64_t RunSeed(uint64_t seed, const char* what, uint32_t run) {
  return DeriveSeed(seed, absl::StrCat("dp_audit/", what), run);
}

// Run `run`'s inclusion bits, one per canary, each 1 with probability 1/2.
inline std::vector<uint8_t> Included(const v1::AuditSpec& spec, uint32_t run) {
  SplitMix64 rng(RunSeed(spec.seed(), "included", run));
  std::vector<uint8_t> bits(spec.dp_audit().canaries());
  for (uint8_t& b : bits) b = static_cast<uint8_t>(rng.Next() >> 63);
  return bits;
}

}  // namespace memaudit::dp_audit

#endif  // MEMAUDIT_AUDITS_DP_AUDIT_SIGNALS_H_
