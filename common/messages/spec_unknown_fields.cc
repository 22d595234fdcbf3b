#include "common/messages/spec_unknown_fields.h"

#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/nearest_name.h"
#include "nlohmann/json.hpp"

namespace memaudit {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : absl::StrCat(path, ".", key);
}

// Protobuf's own types (Duration, Struct, ...) have their own JSON forms.
bool Descend(const FieldDescriptor& field) {
  return field.type() == FieldDescriptor::TYPE_MESSAGE && !field.is_map() &&
         !absl::StartsWith(field.message_type()->full_name(), "google.protobuf.");
}

void Walk(nlohmann::json* node, const Descriptor& type, const std::string& path,
          std::vector<UnknownSpecField>* out) {
  if (!node->is_object()) return;  // the parser names a wrong shape itself
  std::vector<std::string> names;
  names.reserve(type.field_count());
  for (int i = 0; i < type.field_count(); ++i) names.push_back(type.field(i)->name());
  // The JSON parser also takes a field's lowerCamelCase name.
  auto by_json_name = [&type](const std::string& key) -> const FieldDescriptor* {
    for (int i = 0; i < type.field_count(); ++i) {
      if (type.field(i)->json_name() == key) return type.field(i);
    }
    return nullptr;
  };
  for (auto it = node->begin(); it != node->end();) {
    const std::string& key = it.key();
    const FieldDescriptor* field = type.FindFieldByName(key);
    if (field == nullptr) field = by_json_name(key);
    if (field == nullptr) {
      const std::optional<std::string> near = NearestName(key, names);
      out->push_back(
          {Join(path, key), near ? absl::StrCat("unknown field; did you mean \"", *near, "\"?")
                                 : absl::StrCat("unknown field of ", type.name())});
      it = node->erase(it);
      continue;
    }
    if (Descend(*field)) {
      if (field->is_repeated() && it->is_array()) {
        for (size_t i = 0; i < it->size(); ++i) {
          Walk(&(*it)[i], *field->message_type(), absl::StrCat(Join(path, key), "[", i, "]"), out);
        }
      } else {
        Walk(&*it, *field->message_type(), Join(path, key), out);
      }
    }
    ++it;
  }
}

}  // namespace

std::vector<UnknownSpecField> RemoveUnknownFields(nlohmann::json* tree, const Descriptor* type) {
  std::vector<UnknownSpecField> out;
  Walk(tree, *type, "", &out);
  return out;
}

}  // namespace memaudit
