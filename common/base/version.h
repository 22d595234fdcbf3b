// The code that produced a number: release version and git commit, fixed at
// configure time. Reports print it; content keys include it, so a stored
// model is reused only by the code that trained it.
#ifndef MEMAUDIT_COMMON_BASE_VERSION_H_
#define MEMAUDIT_COMMON_BASE_VERSION_H_

#include <string>

namespace memaudit {

// "0.1.0 (commit 0123456789ab)".
std::string CodeVersion();

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_BASE_VERSION_H_
