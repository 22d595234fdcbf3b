#include "common/base/bounded_file.h"

#include <fstream>

#include "absl/strings/str_cat.h"

namespace memaudit {

absl::StatusOr<std::string> ReadBoundedFile(absl::string_view flag, const std::string& path,
                                            size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read \"", path, "\""));
  std::string text(max_bytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": \"", path, "\" is over ", max_bytes, " bytes"));
  }
  return text;
}

}  // namespace memaudit
