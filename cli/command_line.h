// Parsing `memaudit`'s command line the way its docs promise: a mistyped
// command gets the nearest real one suggested, and every parse error exits
// 2 (bad input), where CLI11's own codes are 105 and up.
#ifndef MEMAUDIT_CLI_COMMAND_LINE_H_
#define MEMAUDIT_CLI_COMMAND_LINE_H_

#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace memaudit::cli {

// The exit status for input the CLI cannot use (a command, a flag, a spec).
inline constexpr int kExitBadInput = 2;

// Parses argv into `app`. Returns nullopt to go on, or the exit status to
// return at once: 0 after --help or --version, kExitBadInput after an
// unknown command (with a suggestion) or any other parse error, its message
// printed on stderr.
std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_CLI_COMMAND_LINE_H_
