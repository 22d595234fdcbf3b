#include "common/spec_yaml.h"

#include <google/protobuf/util/json_util.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace memaudit {
namespace {

bool IsJsonNumber(const std::string& s) {
  static const std::regex kNumber(R"(-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)");
  return std::regex_match(s, kNumber);
}

nlohmann::json ScalarToJson(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  // A quoted scalar carries the "!" tag: it is a string whatever it spells.
  if (node.Tag() == "!") return text;
  if (text == "true" || text == "True") return true;
  if (text == "false" || text == "False") return false;
  if (text == "null" || text == "~" || text.empty()) return nullptr;
  if (IsJsonNumber(text)) return nlohmann::json::parse(text);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() && *end == '\0') return value;
  return text;
}

nlohmann::json NodeToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return ScalarToJson(node);
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) out.push_back(NodeToJson(item));
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = NodeToJson(kv.second);
      return out;
    }
    default:
      return nullptr;
  }
}

}  // namespace

absl::StatusOr<std::string> YamlToJson(absl::string_view yaml) {
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    return NodeToJson(root).dump();
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", e.mark.line + 1, ", column ", e.mark.column + 1, ": ", e.msg));
  }
}

absl::StatusOr<v1::AuditSpec> ParseSpecYaml(absl::string_view yaml, absl::string_view source) {
  absl::StatusOr<std::string> json = YamlToJson(yaml);
  if (!json.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not valid YAML: ", json.status().message()));
  }
  v1::AuditSpec spec;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(*json, &spec, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": ", std::string(status.message()),
                     " (field names are those of memaudit.v1.AuditSpec; see docs/spec.md)"));
  }
  return spec;
}

absl::StatusOr<v1::AuditSpec> LoadSpecFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open spec file"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseSpecYaml(buffer.str(), path);
}

}  // namespace memaudit
