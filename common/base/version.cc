#include "common/base/version.h"

#include "absl/strings/str_cat.h"

namespace memaudit {

std::string CodeVersion() {
  return absl::StrCat(MEMAUDIT_VERSION, " (commit ", MEMAUDIT_GIT_COMMIT, ")");
}

}  // namespace memaudit
