// Scores a membership audit once every reference model's signals are in:
// each model in turn is the target, the others its references, and the
// (target, example) scores of all targets are pooled into one ROC per attack.
#ifndef MEMAUDIT_AUDITS_MEMBERSHIP_SCORER_METRICS_H_
#define MEMAUDIT_AUDITS_MEMBERSHIP_SCORER_METRICS_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "audits/membership/signals.h"
#include "memaudit/v1/export.pb.h"
#include "memaudit/v1/results.pb.h"
#include "memaudit/v1/spec.pb.h"
#include "scoring/matrix.h"
#include "services/scorer/kind_handler.h"
#include "services/scorer/scorer_store.h"

namespace memaudit::scorer {

// The evaluation point and signals a membership audit needs from each model.
using membership::kFinalPoint;
using membership::kLossSignal;
using membership::kPhiSignal;
using membership::kPopulationLossSignal;
// The largest |phi| and loss Ingest accepts.
inline constexpr double kMaxSignalMagnitude = 1e6;

// The signals every model of `spec` sends at kFinalPoint.
std::vector<std::string> RequiredMembershipSignals(const v1::MembershipAudit& m);
// Those of model `run`: a given target also sends kMemberSignal.
std::vector<std::string> MembershipSignalsOf(const v1::MembershipAudit& m, uint32_t run);

// A membership audit's signals as matrices (row = model), its keep-matrix,
// and the rows scored as targets: every model, or spec's target_model.
struct MembershipMatrices {
  scoring::Matrix phi;
  scoring::Matrix loss;
  scoring::Matrix population_loss;  // 0 columns without a population
  // Documents only (0 columns for a dataset): the text signals.
  scoring::Matrix zlib;
  scoring::Matrix min_k;
  scoring::Matrix min_k_plus;
  scoring::KeepMatrix keep;
  size_t first_target = 0;
  size_t targets = 0;
};

// `phi` and `loss` map run -> one value per pool example, `population_loss`
// run -> one per population example (empty without a population); each must
// hold every model (audits/membership/tasks.h: MembershipModels). With a
// given target, `target_members` is its kMemberSignal (0/1 per pool example),
// its keep-matrix row.
absl::StatusOr<MembershipMatrices> BuildMembershipMatrices(
    const v1::AuditSpec& spec, const std::map<uint32_t, std::vector<double>>& phi,
    const std::map<uint32_t, std::vector<double>>& loss,
    const std::map<uint32_t, std::vector<double>>& population_loss,
    const std::vector<double>& target_members = {});
// The stored signals of `audit_id`; nullopt while any is missing.
absl::StatusOr<std::optional<MembershipMatrices>> LoadMembershipMatrices(
    ScorerStore& store, const std::string& audit_id, const v1::AuditSpec& spec);
// The keep-matrix rows of the targets: the truth of their scores.
scoring::KeepMatrix TargetTruth(const MembershipMatrices& m);
// `attack`'s score of each (target, example), targets × examples row-major;
// each target's references are all the other models.
absl::StatusOr<std::vector<double>> MembershipTargetScores(const std::string& attack,
                                                           const MembershipMatrices& m);

absl::StatusOr<v1::AuditResults> ScoreMembership(const v1::AuditSpec& spec,
                                                 const MembershipMatrices& matrices);

// The per-example arrays of a complete membership audit (docs/export.md):
// keep-matrix, phi, loss and every attack's target scores
// (membership_export.cc).
absl::StatusOr<std::vector<v1::ExportArray>> MembershipExport(ScorerStore& store,
                                                              const std::string& audit_id,
                                                              const v1::AuditSpec& spec);

}  // namespace memaudit::scorer

#endif  // MEMAUDIT_AUDITS_MEMBERSHIP_SCORER_METRICS_H_
