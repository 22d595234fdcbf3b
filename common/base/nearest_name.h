// "Did you mean": the known name closest to a mistyped one (a command, a
// spec field).
#ifndef MEMAUDIT_COMMON_BASE_NEAREST_NAME_H_
#define MEMAUDIT_COMMON_BASE_NEAREST_NAME_H_

#include <optional>
#include <string>
#include <vector>

namespace memaudit {

// The entry of `known` closest to `typed` by edit distance, if within 2
// edits (or `typed` is a prefix of it); nullopt otherwise. Names longer than
// kMaxComparedBytes are not compared (the distance is quadratic).
inline constexpr size_t kMaxComparedBytes = 256;
std::optional<std::string> NearestName(const std::string& typed,
                                       const std::vector<std::string>& known);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_BASE_NEAREST_NAME_H_
