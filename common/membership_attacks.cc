#include "common/membership_attacks.h"

#include "common/enum_names.h"

namespace memaudit {

std::string AttackName(v1::MembershipAttack attack) {
  return LowerCaseName(*v1::MembershipAttack_descriptor(), attack);
}

v1::MembershipAttack AttackByName(absl::string_view name) {
  return static_cast<v1::MembershipAttack>(
      ValueOfLowerCaseName(*v1::MembershipAttack_descriptor(), name));
}

const std::vector<std::string>& DefaultMembershipAttacks() {
  static const auto* attacks = [] {
    auto* names = new std::vector<std::string>;
    for (v1::MembershipAttack a :
         {v1::LIRA_ONLINE, v1::LIRA_OFFLINE, v1::LIRA_ONLINE_FIXED_VARIANCE,
          v1::LIRA_OFFLINE_FIXED_VARIANCE, v1::RMIA, v1::LOSS}) {
      names->push_back(AttackName(a));
    }
    return names;
  }();
  return *attacks;
}

const std::vector<std::string>& KnownMembershipAttacks() {
  static const auto* attacks = [] {
    auto* names = new std::vector<std::string>;
    const google::protobuf::EnumDescriptor* e = v1::MembershipAttack_descriptor();
    for (int i = 0; i < e->value_count(); ++i) {
      const auto attack = static_cast<v1::MembershipAttack>(e->value(i)->number());
      if (attack != v1::MEMBERSHIP_ATTACK_UNSPECIFIED) names->push_back(AttackName(attack));
    }
    return names;
  }();
  return *attacks;
}

uint32_t MinReferenceModels(absl::string_view attack) {
  const v1::MembershipAttack a = AttackByName(attack);
  const bool per_example_variance =
      a == v1::LIRA_ONLINE || a == v1::LIRA_OFFLINE || a == v1::LIRA_OFFLINE_TWO_SIDED;
  return per_example_variance ? 6 : 4;
}

}  // namespace memaudit
