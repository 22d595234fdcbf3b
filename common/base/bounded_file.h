// Reads a small file an operator names by a flag (a key, a token, a
// certificate) without trusting its size: at most `max_bytes` are read, so a
// wrong path (/dev/zero, a dataset) costs nothing.
#ifndef MEMAUDIT_COMMON_BASE_BOUNDED_FILE_H_
#define MEMAUDIT_COMMON_BASE_BOUNDED_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace memaudit {

// The whole file; INVALID_ARGUMENT naming `flag` and `path` when it cannot be
// read or holds more than `max_bytes`.
absl::StatusOr<std::string> ReadBoundedFile(absl::string_view flag, const std::string& path,
                                            size_t max_bytes);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_BASE_BOUNDED_FILE_H_
