#include "cli/command_line.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_join.h"
#include "common/base/nearest_name.h"

namespace memaudit::cli {

std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
  if (argc > 1 && argv[1][0] != '-' &&
      std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
    const std::optional<std::string> nearest = NearestName(argv[1], commands);
    std::fprintf(stderr, "error: unknown command '%s'%s; the commands are: %s\n", argv[1],
                 nearest ? (" (did you mean '" + *nearest + "'?)").c_str() : "",
                 absl::StrJoin(commands, ", ").c_str());
    return kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, the version or the error
    return code == 0 ? 0 : kExitBadInput;
  }
  return std::nullopt;
}

}  // namespace memaudit::cli
