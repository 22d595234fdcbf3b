#include "common/messages/enum_names.h"

#include "absl/strings/ascii.h"

namespace memaudit {

std::string LowerCaseName(const google::protobuf::EnumDescriptor& type, int value) {
  const google::protobuf::EnumValueDescriptor* v = type.FindValueByNumber(value);
  if (value == 0 || v == nullptr) return "";
  return absl::AsciiStrToLower(v->name());
}

int ValueOfLowerCaseName(const google::protobuf::EnumDescriptor& type, absl::string_view name) {
  if (name != absl::AsciiStrToLower(name)) return 0;
  const google::protobuf::EnumValueDescriptor* v =
      type.FindValueByName(absl::AsciiStrToUpper(name));
  return v == nullptr ? 0 : v->number();
}

}  // namespace memaudit
