#include "common/messages/spec_paths.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace memaudit {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

std::string Join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : absl::StrCat(prefix, ".", name);
}

// Walks the set fields of `message` (named from `prefix`) into `out`.
void Collect(const Message& message, const std::string& prefix, std::vector<SpecPath>* out) {
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);  // set fields only: empty strings are left out
  for (const FieldDescriptor* field : fields) {
    const std::string name = Join(prefix, field->name());
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (!field->is_repeated()) {
        Collect(reflection->GetMessage(message, field), name, out);
        continue;
      }
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        Collect(reflection->GetRepeatedMessage(message, field, i), absl::StrCat(name, "[", i, "]"),
                out);
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING &&
               IsPathFieldName(field->name())) {
      if (!field->is_repeated()) {
        std::string path = reflection->GetString(message, field);
        if (!path.empty()) out->push_back({name, std::move(path)});
        continue;
      }
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        std::string path = reflection->GetRepeatedString(message, field, i);
        if (!path.empty()) out->push_back({absl::StrCat(name, "[", i, "]"), std::move(path)});
      }
    }
  }
}

}  // namespace

bool IsPathFieldName(absl::string_view name) {
  return name == "path" || absl::EndsWith(name, "_path");
}

std::vector<SpecPath> SpecPaths(const v1::AuditSpec& spec) {
  std::vector<SpecPath> paths;
  Collect(spec, "", &paths);
  return paths;
}

}  // namespace memaudit
