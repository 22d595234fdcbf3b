#include "cli/command_line.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_join.h"

namespace memaudit::cli {
namespace {

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::optional<std::string> NearestCommand(const std::string& typed,
                                          const std::vector<std::string>& known) {
  constexpr size_t kMaxEdits = 2;
  std::optional<std::string> best;
  size_t best_distance = kMaxEdits + 1;
  for (const std::string& k : known) {
    const size_t d = k.rfind(typed, 0) == 0 && !typed.empty() ? 1 : EditDistance(typed, k);
    if (d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
  if (argc > 1 && argv[1][0] != '-' &&
      std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
    const std::optional<std::string> nearest = NearestCommand(argv[1], commands);
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
