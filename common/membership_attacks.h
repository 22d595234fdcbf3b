// The membership attacks memaudit runs, and how many reference models each
// needs to be defined. One place: the coordinator's defaults and validation
// and the scorer's warnings read it.
#ifndef MEMAUDIT_COMMON_MEMBERSHIP_ATTACKS_H_
#define MEMAUDIT_COMMON_MEMBERSHIP_ATTACKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "memaudit/v1/results.pb.h"

namespace memaudit {

// An attack's name in specs, tables and metric labels: its enum value in
// lower case ("lira_online"); "" for unspecified. And back (UNSPECIFIED for
// a name that is no attack).
std::string AttackName(v1::MembershipAttack attack);
v1::MembershipAttack AttackByName(absl::string_view name);

// The attacks a spec that names none gets, in order (those that need more
// reference models than the spec has are left out: MinReferenceModels).
const std::vector<std::string>& DefaultMembershipAttacks();
// The attacks a membership spec may name: every value of MembershipAttack, in
// order (the defaults, then the reference code's variants, named to compare
// with published numbers).
const std::vector<std::string>& KnownMembershipAttacks();

// The fewest reference_models under which `attack` is defined. Every example
// is in exactly half of the N models, so a target's references hold N/2 - 1
// models on one side of the example and N/2 on the other. An attack that fits
// a per-example variance needs two values on each side it fits (N >= 6);
// fixed-variance LiRA, RMIA and the loss attack need one (N >= 4, the
// smallest audit).
uint32_t MinReferenceModels(absl::string_view attack);

// Below this many reference models LiRA's per-example estimates come from a
// handful of values and its numbers are noisy: results carry a warning.
// (Membership Inference Attacks From First Principles trains 64 and more.)
inline constexpr uint32_t kFewReferenceModels = 16;

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_MEMBERSHIP_ATTACKS_H_
