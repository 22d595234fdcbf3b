#include "cli/archived_results.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace memaudit::cli {

absl::StatusOr<v1::AuditResults> ReadResultsFile(const std::string& path) {
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(path, error);
  if (error) return absl::NotFoundError(absl::StrCat(path, ": ", error.message()));
  if (size > kMaxResultsFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", size, " bytes; a results file is at most ", kMaxResultsFileBytes, " bytes"));
  }
  std::ifstream in(path, std::ios::binary);
  std::string json(size, '\0');
  if (!in.read(json.data(), static_cast<std::streamsize>(size))) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot read"));
  }
  v1::AuditResults results;
  // Strict: a file that is not a results document should say so, not render
  // as an empty report.
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  if (auto s = google::protobuf::util::JsonStringToMessage(json, &results, options); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a memaudit results document: ", s.message().as_string()));
  }
  if (results.kind() == v1::AUDIT_KIND_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a memaudit results document: it names no kind"));
  }
  return results;
}

v1::Audit AuditOfResults(const v1::AuditResults& results) {
  v1::Audit audit;
  audit.set_audit_id(results.audit_id());
  audit.set_kind(results.kind());
  audit.set_name(results.spec().name());
  *audit.mutable_spec() = results.spec();
  audit.set_error(results.error());
  audit.set_state(!results.error().empty() ? v1::FAILED
                  : results.complete()     ? v1::SUCCEEDED
                                           : v1::RUNNING);
  return audit;
}

bool NamesAResultsFile(const std::string& argument) {
  return argument.find('/') != std::string::npos || argument.find('.') != std::string::npos;
}

}  // namespace memaudit::cli
