#include "cli/csv_export.h"

#include <sys/stat.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "cli/kind_handler.h"

namespace memaudit::cli {

absl::Status WriteResultsCsv(const v1::AuditResults& r, const std::string& dir) {
  const KindHandler* kind = HandlerFor(KindOfApi(r.kind()));
  if (kind == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("results.kind: unknown kind ", static_cast<int>(r.kind())));
  }
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::PermissionDeniedError(absl::StrCat("cannot create directory ", dir));
  }
  return kind->WriteCsv(r, dir);
}

}  // namespace memaudit::cli
