#include "common/messages/audit_kinds.h"

#include <google/protobuf/descriptor.h>

#include "common/messages/enum_names.h"

namespace memaudit {
namespace {

const google::protobuf::OneofDescriptor& KindOneof() {
  return *v1::AuditSpec::descriptor()->FindOneofByName("kind");
}

}  // namespace

const std::vector<AuditKind>& AllAuditKinds() {
  static const auto* kinds = [] {
    auto* all = new std::vector<AuditKind>();
    const google::protobuf::OneofDescriptor& oneof = KindOneof();
    // A KindCase value is its field's number.
    for (int i = 0; i < oneof.field_count(); ++i) {
      all->push_back(static_cast<AuditKind>(oneof.field(i)->number()));
    }
    return all;
  }();
  return *kinds;
}

std::string AuditKindName(AuditKind kind) {
  const google::protobuf::FieldDescriptor* field =
      v1::AuditSpec::descriptor()->FindFieldByNumber(static_cast<int>(kind));
  if (field == nullptr || field->containing_oneof() != &KindOneof()) return "";
  return field->name();
}

AuditKind AuditKindByName(absl::string_view name) {
  const google::protobuf::FieldDescriptor* field =
      v1::AuditSpec::descriptor()->FindFieldByName(std::string(name));
  if (field == nullptr || field->containing_oneof() != &KindOneof()) {
    return v1::AuditSpec::KIND_NOT_SET;
  }
  return static_cast<AuditKind>(field->number());
}

v1::AuditKind ApiKind(AuditKind kind) {
  return static_cast<v1::AuditKind>(
      ValueOfLowerCaseName(*v1::AuditKind_descriptor(), AuditKindName(kind)));
}

AuditKind KindOfApi(v1::AuditKind kind) { return AuditKindByName(AuditKindName(kind)); }

std::string AuditKindName(v1::AuditKind kind) {
  return LowerCaseName(*v1::AuditKind_descriptor(), kind);
}

}  // namespace memaudit
