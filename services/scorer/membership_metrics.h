// Scores a membership audit once every reference model's signals are in:
// each model in turn is the target, the others its references, and the
// (target, example) scores of all targets are pooled into one ROC per attack.
#ifndef MEMAUDIT_SERVICES_SCORER_MEMBERSHIP_METRICS_H_
#define MEMAUDIT_SERVICES_SCORER_MEMBERSHIP_METRICS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memaudit/v1/results.pb.h"
#include "memaudit/v1/spec.pb.h"
#include "services/scorer/kind_handler.h"

namespace memaudit::scorer {

// The evaluation point and signals a membership audit needs from each model.
inline constexpr char kFinalPoint[] = "final";
inline constexpr char kPhiSignal[] = "phi";
inline constexpr char kLossSignal[] = "loss";
// Loss on RMIA's population (population_size values), when it has one.
inline constexpr char kPopulationLossSignal[] = "loss_population";
// The largest |phi| and loss Ingest accepts.
inline constexpr double kMaxSignalMagnitude = 1e6;

// The signals every model of `spec` sends at kFinalPoint.
std::vector<std::string> RequiredMembershipSignals(const v1::MembershipAudit& m);

// `phi` and `loss` map run -> one value per pool example, `population_loss`
// run -> one per population example (empty without a population); each must
// hold every run 0..N-1.
absl::StatusOr<v1::AuditResults> ScoreMembership(
    const v1::AuditSpec& spec, const std::map<uint32_t, std::vector<double>>& phi,
    const std::map<uint32_t, std::vector<double>>& loss,
    const std::map<uint32_t, std::vector<double>>& population_loss);

// Observations, scoring, placeholder, gauges and content-keyed reuse of the
// membership audit (kind_handler.h).
const KindHandler& MembershipHandler();

}  // namespace memaudit::scorer

#endif  // MEMAUDIT_SERVICES_SCORER_MEMBERSHIP_METRICS_H_
