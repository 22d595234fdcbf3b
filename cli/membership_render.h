// The membership audit's table, CSV files and HTML report sections.
#ifndef MEMAUDIT_CLI_MEMBERSHIP_RENDER_H_
#define MEMAUDIT_CLI_MEMBERSHIP_RENDER_H_

#include "cli/kind_handler.h"

namespace memaudit::cli {

const KindHandler& MembershipHandler();

}  // namespace memaudit::cli

#endif  // MEMAUDIT_CLI_MEMBERSHIP_RENDER_H_
