#include "common/messages/spec_message_bounds.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/messages/spec_yaml.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"
#include "google/protobuf/unknown_field_set.h"

namespace memaudit {
namespace {

// Unknown fields named in one error; the count says how many more.
constexpr size_t kMaxNamed = 5;

const char* WireTypeName(google::protobuf::UnknownField::Type type) {
  switch (type) {
    case google::protobuf::UnknownField::TYPE_VARINT:
      return "varint";
    case google::protobuf::UnknownField::TYPE_FIXED32:
      return "fixed32";
    case google::protobuf::UnknownField::TYPE_FIXED64:
      return "fixed64";
    case google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED:
      return "bytes";
    case google::protobuf::UnknownField::TYPE_GROUP:
      return "group";
  }
  return "?";
}

struct Walk {
  size_t nodes = 0;
  size_t deepest = 0;
  size_t unknown = 0;
  std::vector<std::string> named;

  void Visit(const google::protobuf::Message& message, const std::string& path, size_t depth) {
    deepest = std::max(deepest, depth);
    if (depth > kMaxSpecDepth || nodes > kMaxSpecNodes) return;
    const google::protobuf::Reflection* reflection = message.GetReflection();
    const google::protobuf::UnknownFieldSet& unknowns = reflection->GetUnknownFields(message);
    for (int i = 0; i < unknowns.field_count(); ++i) {
      const google::protobuf::UnknownField& f = unknowns.field(i);
      ++unknown;
      if (named.size() < kMaxNamed) {
        std::string what =
            absl::StrCat(path, ": unknown field ", f.number(), " (", WireTypeName(f.type()));
        if (f.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
          absl::StrAppend(&what, ", ", f.length_delimited().size(), " bytes");
        }
        named.push_back(absl::StrCat(what, ")"));
      }
    }
    std::vector<const google::protobuf::FieldDescriptor*> fields;
    reflection->ListFields(message, &fields);
    for (const google::protobuf::FieldDescriptor* field : fields) {
      const std::string at = absl::StrCat(path, ".", field->name());
      if (!field->is_repeated()) {
        ++nodes;
        if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
          Visit(reflection->GetMessage(message, field), at, depth + 1);
        }
        continue;
      }
      const int size = reflection->FieldSize(message, field);
      nodes += static_cast<size_t>(size) + 1;
      if (field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
      for (int i = 0; i < size && nodes <= kMaxSpecNodes; ++i) {
        Visit(reflection->GetRepeatedMessage(message, field, i), absl::StrCat(at, "[", i, "]"),
              depth + 1);
      }
    }
  }
};

}  // namespace

absl::Status CheckSpecMessage(const v1::AuditSpec& spec) {
  // Counted first, before the walk: a huge spec costs one pass of sizes.
  const size_t bytes = spec.ByteSizeLong();
  if (bytes > kMaxSpecBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec: ", bytes, " bytes serialized; at most ", kMaxSpecBytes,
                     " (large data belongs in files the spec names)"));
  }
  Walk walk;
  walk.Visit(spec, "spec", 1);
  if (walk.deepest > kMaxSpecDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec: nested deeper than ", kMaxSpecDepth, " messages"));
  }
  if (walk.nodes > kMaxSpecNodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec: more than ", kMaxSpecNodes, " fields and list entries"));
  }
  if (walk.unknown > 0) {
    std::string message = absl::StrJoin(walk.named, "; ");
    if (walk.unknown > walk.named.size()) {
      absl::StrAppend(&message, "; and ", walk.unknown - walk.named.size(), " more");
    }
    return absl::InvalidArgumentError(
        absl::StrCat(message, " (fields this coordinator does not know are refused, not stored)"));
  }
  return absl::OkStatus();
}

}  // namespace memaudit
