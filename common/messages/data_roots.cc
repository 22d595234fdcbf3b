#include "common/messages/data_roots.h"

#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/messages/spec_paths.h"
#include "common/messages/spec_yaml.h"

namespace memaudit {
namespace {

namespace fs = std::filesystem;

// Whether `path` is `root` or below it, component by component.
bool AtOrBelow(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (p == path.end() || *p != *r) return false;
  }
  return true;
}

bool HasControlCharacter(absl::string_view text) {
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<DataRoots> DataRoots::Create(const std::vector<std::string>& roots) {
  DataRoots out;
  for (const std::string& root : roots) {
    std::error_code error;
    fs::path resolved = root.empty() ? fs::path() : fs::canonical(root, error);
    if (root.empty() || error) {
      // The operator's own flag: named whole, not cut like a spec's values.
      return absl::NotFoundError(
          absl::StrCat("data root \"", root, "\": ", root.empty() ? "empty" : error.message()));
    }
    if (!fs::is_directory(resolved, error)) {
      return absl::InvalidArgumentError(absl::StrCat("data root \"", root, "\": not a directory"));
    }
    out.roots_.push_back(resolved.string());
    out.resolved_.push_back(std::move(resolved));
  }
  return out;
}

DataRoots DataRoots::Defaults() {
  std::vector<std::string> present;
  for (const char* root : kDefaultDataRoots) {
    std::error_code error;
    if (fs::is_directory(root, error)) present.emplace_back(root);
  }
  absl::StatusOr<DataRoots> roots = Create(present);
  return roots.ok() ? *std::move(roots) : DataRoots();
}

absl::StatusOr<DataRoots> DataRoots::FromFlag(const std::vector<std::string>& given) {
  if (given.empty()) return Defaults();
  return Create(given);
}

std::string DataRoots::Problem(absl::string_view path) const {
  if (path.empty()) return "";
  if (HasControlCharacter(path)) {
    // A NUL would cut the path the kernel sees short of the one checked here.
    return absl::StrCat("must not contain control characters (got ", QuoteValue(path), ")");
  }
  const fs::path given{std::string(path)};
  if (!given.is_absolute()) {
    return absl::StrCat("must be an absolute path (got ", QuoteValue(path), ")");
  }
  std::error_code error;
  const fs::path resolved = fs::weakly_canonical(given, error);
  if (error) {
    return absl::StrCat("cannot be resolved: ", error.message(), " (got ", QuoteValue(path), ")");
  }
  for (const fs::path& root : resolved_) {
    if (AtOrBelow(resolved, root)) return "";
  }
  std::string got = QuoteValue(path);
  if (resolved.string() != path) {
    absl::StrAppend(&got, ", which resolves to ", QuoteValue(resolved.string()));
  }
  if (roots_.empty()) {
    return absl::StrCat("must lie under a data root, and none is configured (got ", got, ")");
  }
  return absl::StrCat("must lie under a data root (", absl::StrJoin(roots_, ", "), "; got ", got,
                      ")");
}

absl::Status DataRoots::Check(absl::string_view field, absl::string_view path) const {
  const std::string problem = Problem(path);
  if (problem.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
}

absl::Status DataRoots::CheckSpec(const v1::AuditSpec& spec) const {
  std::vector<std::string> problems;
  for (const SpecPath& p : SpecPaths(spec)) {
    if (std::string problem = Problem(p.path); !problem.empty()) {
      problems.push_back(absl::StrCat(p.field, ": ", problem));
    }
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems, "; "));
}

std::string DescribeDataRoots(const DataRoots& roots) {
  if (roots.roots().empty()) return "none (a spec naming any file is refused)";
  return absl::StrJoin(roots.roots(), ", ");
}

}  // namespace memaudit
