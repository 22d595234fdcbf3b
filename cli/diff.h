// `memaudit diff OLD NEW`: the terminal table of spec/diff.h's comparison of
// two audits of one kind.
#ifndef MEMAUDIT_CLI_DIFF_H_
#define MEMAUDIT_CLI_DIFF_H_

#include <string>
#include <vector>

#include "spec/diff.h"

namespace memaudit::cli {

// A line per metric, then how many changed significantly.
std::string DiffTable(const std::vector<spec::MetricChange>& changes, const std::string& old_name,
                      const std::string& new_name);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_CLI_DIFF_H_
