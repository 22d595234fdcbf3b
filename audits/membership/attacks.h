// The membership attacks memaudit runs, declared once: each attack's enum
// value, whether a spec that names none gets it, the reference models it
// needs, whether it needs a population, how it scores and its doc line. The
// spec rules (defaults, validation), the scorer and the result warnings read
// this table; nothing picks an attack by its name's shape.
#ifndef MEMAUDIT_AUDITS_MEMBERSHIP_ATTACKS_H_
#define MEMAUDIT_AUDITS_MEMBERSHIP_ATTACKS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "memaudit/v1/results.pb.h"
#include "memaudit/v1/spec.pb.h"
#include "scoring/matrix.h"

namespace memaudit::membership {

// What an attack scores from. Rows are models, columns the pool's examples;
// population_loss holds each model's losses on examples no model saw.
struct AttackInputs {
  const scoring::Matrix& phi;
  const scoring::KeepMatrix& keep;
  const scoring::Matrix& loss;
  const scoring::Matrix& population_loss;
  // The targets scored: rows [first_target, first_target + targets). Row t of
  // the result scores every example against target t; rows outside the range
  // may be left 0.
  size_t first_target = 0;
  size_t targets = 0;
  // Documents' text signals (engine/lm_membership_signals.h), one row per
  // model like `loss`; null for a dataset.
  const scoring::Matrix* zlib = nullptr;
  const scoring::Matrix* min_k = nullptr;
  const scoring::Matrix* min_k_plus = nullptr;
};

// rows x cols scores, higher = more likely a member.
using AttackScoreFn = absl::StatusOr<std::vector<double>> (*)(const AttackInputs&);

struct Attack {
  v1::MembershipAttack id;
  // A spec that names no attacks gets every default one, in table order
  // (those undefined at its reference_models left out): is_default for a
  // dataset, documents_default for documents (IsDefault).
  bool is_default;
  bool documents_default;
  // Scores documents' text signals: refused for a dataset.
  bool needs_documents;
  // The fewest reference_models under which the attack is defined. Every
  // example is in exactly half of the N models, so a target's references hold
  // N/2 - 1 models on one side of an example and N/2 on the other: fitting a
  // per-example variance needs two values on each side it fits (N >= 6).
  uint32_t min_reference_models;
  // Scored against population examples no model saw (population_size >= 1).
  bool needs_population;
  // Scored against the reference models (every attack but the loss): its
  // re-run intervals redraw them (scoring::HalfSampledRerunIntervals).
  bool uses_reference_models;
  AttackScoreFn score;
  // One line for docs/audits/membership.md (a test checks it is there).
  const char* doc;
};

// Whether a spec `m` that names no attacks gets `attack`.
bool IsDefault(const Attack& attack, const v1::MembershipAudit& m);

// Every attack, one per MembershipAttack value but UNSPECIFIED, in the
// enum's order: the defaults, then the LiRA reference code's variants.
absl::Span<const Attack> Attacks();

// The attack a spec names ("lira_online"), or null for a name that is none.
const Attack* FindAttack(absl::string_view name);

// An attack's name in specs, tables and metric labels: its enum value in
// lower case ("lira_online"); "" for unspecified. And back (UNSPECIFIED for
// a name that is no attack).
std::string AttackName(v1::MembershipAttack attack);
v1::MembershipAttack AttackByName(absl::string_view name);

// The name of every attack, in table order.
std::vector<std::string> AttackNames();

// Whether a default attack runs for a spec that names none, and if not, why:
// it needs a population and the pool takes all `rows` of the dataset (0 =
// rows unknown), or it is undefined at `reference_models`. The spec's
// defaults and the results' warnings both ask this.
enum class DefaultFit { kRuns, kNoPopulation, kTooFewReferenceModels };
DefaultFit FitOfDefault(const Attack& attack, uint32_t reference_models, uint32_t rows,
                        uint32_t pool_size);

// Below this many reference models LiRA's per-example estimates come from a
// handful of values and its numbers are noisy: results carry a warning.
// (Membership Inference Attacks From First Principles trains 64 and more.)
inline constexpr uint32_t kFewReferenceModels = 16;

}  // namespace memaudit::membership

#endif  // MEMAUDIT_AUDITS_MEMBERSHIP_ATTACKS_H_
