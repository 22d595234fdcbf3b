// Per-team limits on what a team may have the coordinator hold at once, read
// from the coordinator's --quotas file (YAML):
//
//   default:                     # every team, unless its own block says otherwise
//     max_concurrent_audits: 4   # audits QUEUED or RUNNING
//     max_queued_tasks: 512      # unfinished (queued or running) tasks, all audits
//     max_models_per_audit: 64   # models one audit's plan trains
//     max_spec_bytes: 65536      # the serialized spec as submitted
//   teams:
//     alpha:
//       max_concurrent_audits: 8
//       weight: 3                # its share of leases (default 1)
//     beta: {}                   # the defaults
//
// A limit left out of a team's block comes from `default:`; one left out of
// both is unlimited (so no file, or an empty one, limits nothing). 0 allows
// nothing. The owner name an audit is charged to is the submitting caller's
// name (a team's, or an administrator's for its own submissions).
//
// `weight` (a team's block only; a whole number in [1, 1000], default 1) is
// not a limit but the team's share of the workers: while several teams have
// queued tasks, each gets leases in proportion to its weight (fair_share.h),
// so alpha above gets 3 leases for each of beta's. A team with no queued
// work leaves its share to the others and banks none of it.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_QUOTAS_H_
#define MEMAUDIT_SERVICES_COORDINATOR_QUOTAS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace memaudit::coordinator {

// Bounds on the file itself: it is read once at start.
inline constexpr size_t kMaxQuotaFileBytes = 1 << 20;
inline constexpr size_t kMaxQuotaTeams = 10000;
// Largest value a limit may take (well past anything a coordinator holds).
inline constexpr uint64_t kMaxQuotaValue = uint64_t{1} << 40;
// A team's weight (QuotaConfig::weights): at least 1, at most this.
inline constexpr uint32_t kMaxTeamWeight = 1000;

struct QuotaLimits {
  std::optional<uint64_t> max_concurrent_audits;
  std::optional<uint64_t> max_queued_tasks;
  std::optional<uint64_t> max_models_per_audit;
  std::optional<uint64_t> max_spec_bytes;
};

struct QuotaConfig {
  QuotaLimits defaults;
  std::map<std::string, QuotaLimits> teams;
  // Team -> its `weight` in [1, kMaxTeamWeight], for the teams that set one.
  std::map<std::string, uint32_t> weights;

  // The limits that apply to `team`: its block's, the default's where it
  // sets none.
  QuotaLimits For(const std::string& team) const;
  // `team`'s weight: its block's, else 1.
  uint32_t WeightOf(const std::string& team) const;
};

// What one submission would add, and the owner's usage before it.
struct QuotaUsage {
  uint64_t active_audits = 0;   // the owner's audits QUEUED or RUNNING
  uint64_t queued_tasks = 0;    // their unfinished tasks
  uint64_t planned_tasks = 0;   // the new audit's tasks
  uint64_t planned_models = 0;  // the new audit's models
  uint64_t spec_bytes = 0;      // the new audit's spec, serialized
};

// OK, or RESOURCE_EXHAUSTED naming the first limit `usage` breaks, the owner
// (`who`: "team alpha") and the numbers ("quota max_concurrent_audits for
// team alpha: 2 audits running or queued, at most 2"). `limit_name`, when not
// null, is set to the limit's name on a refusal (for the metrics).
absl::Status CheckQuota(const QuotaLimits& limits, const std::string& who, const QuotaUsage& usage,
                        std::string* limit_name = nullptr);

// The file's text; INVALID_ARGUMENT naming the line and key of the first
// problem (an unknown key, a value that is not a whole number in
// [0, kMaxQuotaValue], a team name that is not a valid name, a duplicate).
absl::StatusOr<QuotaConfig> ParseQuotaFile(absl::string_view yaml);
// Reads and parses `path`; the message starts with the path.
absl::StatusOr<QuotaConfig> LoadQuotaFile(const std::string& path);

// The four limits' names, in the order CheckQuota tries them.
inline constexpr const char* kQuotaLimitNames[] = {"max_spec_bytes", "max_models_per_audit",
                                                   "max_concurrent_audits", "max_queued_tasks"};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_QUOTAS_H_
