#include "common/messages/spec_yaml.h"

#include <google/protobuf/util/json_util.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/utf8.h"
#include "common/messages/spec_unknown_fields.h"
#include "nlohmann/json.hpp"

namespace memaudit {
namespace {

// Longest protobuf parse error kept (it may echo a key of the document).
constexpr size_t kMaxParserMessageBytes = 512;

// Fields whose proto3 zero means "unset, use the default": an explicit 0 in
// YAML would silently become the default, so it is refused with the rule.
struct ExplicitZero {
  std::vector<const char*> path;
  const char* rule;
};
const std::vector<ExplicitZero>& ExplicitZeroRefused() {
  static const auto* fields = new std::vector<ExplicitZero>{
      {{"exposure", "canary", "digits"},
       "must be in [1, 18] (got 0); leave it out for the default"},
      {{"forgetting", "canaries", "canary", "digits"},
       "must be in [1, 18] (got 0); leave it out for the default"},
      {{"resources", "models_per_task"}, "must be in [1, 64] or auto (got 0)"},
  };
  return *fields;
}

// Fields whose proto3 zero means "memaudit decides", spelled as a word in
// YAML (`models_per_task: auto`): the word leaves the field unset.
struct ZeroKeyword {
  std::vector<const char*> path;
  const char* word;
};
const std::vector<ZeroKeyword>& ZeroKeywords() {
  static const auto* fields = new std::vector<ZeroKeyword>{
      {{"resources", "models_per_task"}, "auto"},
  };
  return *fields;
}

// The node at `path` in `root`, or null (Json: const or not).
template <typename Json>
Json* Find(Json& root, const std::vector<const char*>& path) {
  Json* node = &root;
  for (const char* key : path) {
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
  }
  return node;
}

// Removes every field of ZeroKeywords() spelled as its word.
void DropZeroKeywords(nlohmann::json& root) {
  for (const ZeroKeyword& field : ZeroKeywords()) {
    std::vector<const char*> parent(field.path.begin(), field.path.end() - 1);
    nlohmann::json* node = Find(root, parent);
    if (node == nullptr || !node->is_object()) continue;
    auto it = node->find(field.path.back());
    if (it != node->end() && it->is_string() && *it == field.word) node->erase(it);
  }
}

// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, without std::regex (whose
// recursion overflows the stack on a long scalar). `integral`: no fraction or
// exponent.
bool IsJsonNumber(const std::string& s, bool* integral) {
  size_t i = 0;
  const size_t n = s.size();
  auto digits = [&] {
    const size_t start = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') ++i;
    return i - start;
  };
  if (i < n && s[i] == '-') ++i;
  if (i < n && s[i] == '0') {
    ++i;
  } else if (i >= n || s[i] < '1' || s[i] > '9' || digits() == 0) {
    return false;
  }
  *integral = true;
  if (i < n && s[i] == '.') {
    ++i;
    if (digits() == 0) return false;
    *integral = false;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
    *integral = false;
  }
  return i == n;
}

// What stops the conversion: where, which key path, and why.
struct SpecReadError {
  YAML::Mark mark;
  std::string path;
  std::string message;
};

// Streams yaml-cpp's parse events into a JSON tree, counting every node and
// scalar byte (aliases count their whole expansion) against the limits.
class JsonBuilder : public YAML::EventHandler {
 public:
  nlohmann::json TakeRoot() { return std::move(root_); }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (ExpectingKey()) Fail(mark, "a key must not be empty");
    Count(mark, 1, 0);
    Emit(mark, nullptr, anchor, 1, 0);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (ExpectingKey()) Fail(mark, "a key must be a plain scalar, not an alias");
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) Fail(mark, "an alias must follow its complete anchored node");
    Count(mark, it->second.nodes, it->second.bytes);
    Emit(mark, it->second.value, 0, 0, 0);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (!IsValidUtf8(value)) Fail(mark, "not valid UTF-8");
    Count(mark, 1, value.size());
    if (ExpectingKey()) {
      if (anchor != 0) Fail(mark, "a key must not carry an anchor");
      SetKey(mark, value);
      return;
    }
    Emit(mark, ScalarToJson(mark, tag, value), anchor, 1, value.size());
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, nlohmann::json::array(), anchor);
  }
  void OnSequenceEnd() override { Close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, nlohmann::json::object(), anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    nlohmann::json value;
    std::optional<std::string> key;  // maps: the key whose value comes next
    YAML::anchor_t anchor = 0;
    size_t nodes_before = 0;
    size_t bytes_before = 0;
  };
  struct Anchored {
    nlohmann::json value;
    size_t nodes = 0;
    size_t bytes = 0;
  };

  bool ExpectingKey() const {
    return !stack_.empty() && stack_.back().value.is_object() && !stack_.back().key.has_value();
  }

  // "membership.fpr_points[3]": the path of the node that comes next.
  std::string Path() const {
    std::string out;
    for (const Frame& f : stack_) {
      if (f.value.is_array()) {
        absl::StrAppend(&out, "[", f.value.size(), "]");
      } else if (f.key.has_value()) {
        const std::string key = f.key->size() <= kMaxQuotedBytes ? *f.key : QuoteValue(*f.key);
        absl::StrAppend(&out, out.empty() ? "" : ".", key);
      }
    }
    return out;
  }

  [[noreturn]] void Fail(const YAML::Mark& mark, std::string message) const {
    throw SpecReadError{mark, Path(), std::move(message)};
  }

  void Count(const YAML::Mark& mark, size_t nodes, size_t bytes) {
    nodes_ += nodes;
    bytes_ += bytes;
    if (nodes_ > kMaxSpecNodes) {
      Fail(mark, absl::StrCat("the spec expands to more than ", kMaxSpecNodes,
                              " nodes (aliases count their whole expansion)"));
    }
    if (bytes_ > kMaxSpecExpandedBytes) {
      Fail(mark, absl::StrCat("the spec expands to more than ", kMaxSpecExpandedBytes,
                              " bytes of keys and values (aliases count their whole expansion)"));
    }
  }

  void SetKey(const YAML::Mark& mark, const std::string& key) {
    Frame& top = stack_.back();
    if (top.value.contains(key)) {
      top.key = key;
      Fail(mark, "duplicate key");
    }
    top.key = key;
  }

  // Places a complete node under its parent (or as the root) and remembers
  // it under its anchor.
  void Emit(const YAML::Mark&, nlohmann::json value, YAML::anchor_t anchor, size_t nodes,
            size_t bytes) {
    if (anchor != 0) anchors_[anchor] = {value, nodes, bytes};
    if (stack_.empty()) {
      root_ = std::move(value);
      return;
    }
    Frame& top = stack_.back();
    if (top.value.is_array()) {
      top.value.push_back(std::move(value));
    } else {
      top.value[*top.key] = std::move(value);
      top.key.reset();
    }
  }

  void Open(const YAML::Mark& mark, nlohmann::json value, YAML::anchor_t anchor) {
    if (ExpectingKey()) Fail(mark, "a key must be a plain scalar, not a map or a list");
    if (stack_.size() >= kMaxSpecDepth) {
      Fail(mark, absl::StrCat("nested deeper than ", kMaxSpecDepth, " levels"));
    }
    Count(mark, 1, 0);
    stack_.push_back({std::move(value), std::nullopt, anchor, nodes_ - 1, bytes_});
  }

  void Close() {
    Frame done = std::move(stack_.back());
    stack_.pop_back();
    Emit(YAML::Mark(), std::move(done.value), done.anchor, nodes_ - done.nodes_before,
         bytes_ - done.bytes_before);
  }

  nlohmann::json ScalarToJson(const YAML::Mark& mark, const std::string& tag,
                              const std::string& text) const {
    // A quoted scalar carries the "!" tag: it is a string whatever it spells.
    if (tag == "!") return text;
    if (text == "true" || text == "True") return true;
    if (text == "false" || text == "False") return false;
    if (text == "null" || text == "~" || text.empty()) return nullptr;
    bool integral = false;
    if (IsJsonNumber(text, &integral)) {
      errno = 0;
      char* end = nullptr;
      if (integral && text[0] == '-') {
        const long long v = std::strtoll(text.c_str(), &end, 10);
        if (errno != ERANGE) return static_cast<int64_t>(v);
      } else if (integral) {
        const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
        if (errno != ERANGE) return static_cast<uint64_t>(v);
      } else {
        const double v = std::strtod(text.c_str(), &end);
        if (errno != ERANGE && std::isfinite(v)) return v;
      }
      Fail(mark, absl::StrCat("number out of range (got ", QuoteValue(text), ")"));
    }
    errno = 0;
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (end != text.c_str() && *end == '\0') {
      if (errno == ERANGE) {
        Fail(mark, absl::StrCat("number out of range (got ", QuoteValue(text), ")"));
      }
      // inf and nan stay text: protobuf reads "Infinity" and "NaN" only, and
      // the validators name the field.
      if (std::isfinite(value)) return value;
    }
    return text;
  }

  nlohmann::json root_;
  std::vector<Frame> stack_;
  std::map<YAML::anchor_t, Anchored> anchors_;
  size_t nodes_ = 0;
  size_t bytes_ = 0;
};

// The document is longer than kMaxSpecBytes: names the line where the limit
// falls and the key that line starts with, if any ("line 1: name").
absl::Status TooLarge(absl::string_view head, size_t total, bool total_known) {
  const absl::string_view read = head.substr(0, kMaxSpecBytes);
  size_t line = 1;
  for (char c : read) line += c == '\n';
  const size_t start = read.rfind('\n') == absl::string_view::npos ? 0 : read.rfind('\n') + 1;
  size_t i = start;
  while (i < read.size() && (read[i] == ' ' || read[i] == '-')) ++i;
  const size_t key_start = i;
  while (i < read.size() && (std::isalnum(static_cast<unsigned char>(read[i])) || read[i] == '_')) {
    ++i;
  }
  std::string where = absl::StrCat("line ", line, ": ");
  if (i > key_start && i < read.size() && read[i] == ':') {
    absl::StrAppend(&where, read.substr(key_start, std::min<size_t>(i - key_start, 64)), ": ");
  }
  return absl::InvalidArgumentError(absl::StrCat(
      where, "the spec is ", total_known ? "" : "more than ", total, " bytes; at most ",
      kMaxSpecBytes, " are read (put large text in a file: corpus.path)"));
}

absl::StatusOr<std::string> BoundedYamlToJson(absl::string_view yaml, size_t total,
                                              bool total_known) {
  if (total > kMaxSpecBytes) return TooLarge(yaml, total, total_known);
  JsonBuilder builder;
  try {
    std::istringstream in{std::string(yaml)};
    YAML::Parser parser(in);
    parser.HandleNextDocument(builder);
    return builder.TakeRoot().dump();
  } catch (const SpecReadError& e) {
    return absl::InvalidArgumentError(absl::StrCat("line ", e.mark.line + 1, ", column ",
                                                   e.mark.column + 1, ": ", e.path,
                                                   e.path.empty() ? "" : ": ", e.message));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("not valid YAML: line ", e.mark.line + 1,
                                                   ", column ", e.mark.column + 1, ": ", e.msg));
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("not valid: ", e.what()));
  }
}

// An explicit 0 for a field listed in ExplicitZeroRefused.
absl::Status CheckExplicitZeros(const nlohmann::json& root) {
  for (const ExplicitZero& field : ExplicitZeroRefused()) {
    const nlohmann::json* node = Find(root, field.path);
    if (node != nullptr && node->is_number() && *node == 0) {
      std::string path;
      for (const char* key : field.path) absl::StrAppend(&path, path.empty() ? "" : ".", key);
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", field.rule));
    }
  }
  return absl::OkStatus();
}

// A spec without a name is named after its file ("quickstart" for
// examples/quickstart.yaml); "audit" when that name would not do.
std::string NameFromSource(absl::string_view source) {
  std::string stem = std::filesystem::path(std::string(source)).stem().string();
  const bool printable = std::all_of(stem.begin(), stem.end(), [](char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    return u >= 0x20 && u != 0x7F;
  });
  if (stem.empty() || stem.size() > 128 || !printable || stem.front() == '<') return "audit";
  return stem;
}

absl::StatusOr<v1::AuditSpec> ParseBounded(absl::string_view yaml, size_t total, bool total_known,
                                           absl::string_view source,
                                           std::vector<UnknownSpecField>* unknown) {
  absl::StatusOr<std::string> json = BoundedYamlToJson(yaml, total, total_known);
  if (!json.ok())
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", json.status().message()));
  nlohmann::json tree = nlohmann::json::parse(*json);
  if (!tree.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": a spec is a map of fields (name, seed, one audit kind, ...)"));
  }
  if (tree.contains("name") && (tree["name"].is_null() || tree["name"] == "")) {
    return absl::InvalidArgumentError(
        absl::StrCat(source,
                     ": name: must not be empty (leave it out to name the audit after "
                     "its file)"));
  }
  if (absl::Status s = CheckExplicitZeros(tree); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", s.message()));
  }
  DropZeroKeywords(tree);
  std::vector<UnknownSpecField> found = RemoveUnknownFields(&tree, v1::AuditSpec::descriptor());
  if (!found.empty() && unknown == nullptr) {
    std::string message = absl::StrCat(source, ": ", found.size(), " unknown field(s):");
    for (const UnknownSpecField& f : found)
      absl::StrAppend(&message, "\n  ", f.field, ": ", f.rule);
    return absl::InvalidArgumentError(message);
  }
  if (unknown != nullptr) unknown->insert(unknown->end(), found.begin(), found.end());
  v1::AuditSpec spec;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(tree.dump(), &spec, options);
  if (!status.ok()) {
    std::string message(status.message());
    if (message.size() > kMaxParserMessageBytes) {
      message = absl::StrCat(QuoteValue(message), " (cut)");
    }
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": ", message,
                     " (field names are those of memaudit.v1.AuditSpec; see docs/spec.md)"));
  }
  if (spec.name().empty()) spec.set_name(NameFromSource(source));
  return spec;
}

}  // namespace

std::string QuoteValue(absl::string_view value) {
  size_t cut = value.size();
  if (cut > kMaxQuotedBytes) {
    cut = kMaxQuotedBytes;
    // Back off to the start of a UTF-8 sequence.
    while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  }
  std::string out = "\"";
  for (char c : value.substr(0, cut)) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      absl::StrAppend(&out, "\\", std::string(1, c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      static const char kHex[] = "0123456789abcdef";
      absl::StrAppend(&out, "\\x", std::string(1, kHex[u >> 4]), std::string(1, kHex[u & 15]));
    } else {
      out += c;
    }
  }
  out += "\"";
  if (cut < value.size()) absl::StrAppend(&out, "\u2026 (", value.size(), " bytes)");
  return out;
}

absl::StatusOr<std::string> YamlToJson(absl::string_view yaml) {
  return BoundedYamlToJson(yaml, yaml.size(), /*total_known=*/true);
}

absl::StatusOr<v1::AuditSpec> ParseSpecYaml(absl::string_view yaml, absl::string_view source,
                                            std::vector<UnknownSpecField>* unknown) {
  return ParseBounded(yaml, yaml.size(), /*total_known=*/true, source, unknown);
}

absl::StatusOr<v1::AuditSpec> LoadSpecFile(const std::string& path,
                                           std::vector<UnknownSpecField>* unknown) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open spec file"));
  // Reads one byte past the limit, never the whole of a huge file.
  std::string head(kMaxSpecBytes + 1, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  if (head.size() <= kMaxSpecBytes) return ParseSpecYaml(head, path, unknown);
  std::ifstream sized(path, std::ios::binary | std::ios::ate);
  const std::streamoff end = sized ? static_cast<std::streamoff>(sized.tellg()) : -1;
  const bool known = end > 0;
  return ParseBounded(head, known ? static_cast<size_t>(end) : head.size(), known, path, unknown);
}

}  // namespace memaudit
