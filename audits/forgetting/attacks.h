// The forgetting audit's attacks on a classifier, declared once: each
// attack's name, whether it is the default, whether it trains reference
// models or a replay, how it scores one arm of one trial, and its doc line.
// The spec rules and the scorer read this table. (LM canaries are scored by
// exposure, attack "exposure", not here.)
#ifndef MEMAUDIT_AUDITS_FORGETTING_ATTACKS_H_
#define MEMAUDIT_AUDITS_FORGETTING_ATTACKS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace memaudit::forgetting {

// One trial's signals of the injected examples Dp under one arm (injected or
// baseline) at one evaluation point, and at the checkpoint before injection.
struct ArmSignals {
  const std::vector<double>& phi;
  const std::vector<double>& loss;
  const std::vector<double>& phi_checkpoint;
  const std::vector<double>& loss_checkpoint;
  // deterministic_replay only: phi of Dp under the replayed baseline.
  const std::vector<double>* phi_replay = nullptr;
  // LiRA attacks only: the OUT and (lira_online) IN reference models' phi.
  const std::vector<const std::vector<double>*>& phi_references;
  const std::vector<const std::vector<double>*>& phi_in_references;
  bool per_example_variance = false;
};

// One score per Dp example, higher = member.
using ArmScoreFn = absl::StatusOr<std::vector<double>> (*)(const ArmSignals&);

struct Attack {
  const char* name;
  // What a classifier spec without `attack` gets.
  bool is_default;
  // Trains `reference_models` OUT models (and, online, as many IN models).
  bool uses_reference_models;
  ArmScoreFn score;
  // One line for docs/audits/forgetting.md (a test checks it is there).
  const char* doc;
};

// Every attack on a classifier, the default first.
absl::Span<const Attack> Attacks();
// The attack named `name`, or null.
const Attack* FindAttack(absl::string_view name);
// The one attack with is_default.
const Attack& DefaultAttack();
std::vector<std::string> AttackNames();

// LiRA scores (higher = member) of one arm's phi on Dp against reference
// models at the same step, by scoring::LiraScores with the references'
// median as centre: offline, log Phi((phi - mu_out) / sigma_out) (the IN
// references are then unused); online, log N(phi; mu_in, sigma_in) -
// log N(phi; mu_out, sigma_out). sigma is each side's std pooled over Dp, or
// with `per_example_variance` each example's own references' std (floored at
// scoring::kLiraSigmaFloor). INVALID_ARGUMENT when a reference has the wrong
// length.
absl::StatusOr<std::vector<double>> ForgettingLiraScores(
    const std::vector<double>& phi, const std::vector<const std::vector<double>*>& out_references,
    const std::vector<const std::vector<double>*>& in_references, bool online,
    bool per_example_variance);

}  // namespace memaudit::forgetting

#endif  // MEMAUDIT_AUDITS_FORGETTING_ATTACKS_H_
