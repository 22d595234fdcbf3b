// How the CLI shows release gates (docs/gates.md) and turns their verdicts
// into exit statuses: 4 when a gate failed, 5 when none failed but one is
// inconclusive.
#ifndef MEMAUDIT_CLI_GATES_H_
#define MEMAUDIT_CLI_GATES_H_

#include <string>

#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

inline constexpr int kExitGateFailed = 4;
inline constexpr int kExitGateInconclusive = 5;

// One line per gate: "gate lira_online.auc max 0.6: FAIL (0.71 [0.70, 0.72]: ...)".
std::string GateLines(const v1::AuditResults& results);
// The HTML report's gate section ("" without gates).
std::string GatesHtml(const v1::AuditResults& results);
// 0 when every gate passed (or there are none), else kExitGateFailed or
// kExitGateInconclusive.
int GateExitCode(const v1::AuditResults& results);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_CLI_GATES_H_
