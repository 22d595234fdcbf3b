// The files examples/own-data-*.yaml and examples/target-model.yaml name:
// tests that check every example write them once per host with the
// example script itself, under a lock (test binaries run in parallel).
#ifndef MEMAUDIT_COMMON_TESTING_EXAMPLE_DATA_H_
#define MEMAUDIT_COMMON_TESTING_EXAMPLE_DATA_H_

#include <cstdlib>
#include <string>

namespace memaudit::testing {

// Where the examples expect their files (examples/models/make_example_data.py).
inline constexpr char kExampleDataDir[] = "/tmp/memaudit-own-data";

// Runs make_example_data.py from `source_dir` unless an earlier run
// completed; returns whether the files are there.
inline bool EnsureExampleData(const std::string& source_dir) {
  const std::string dir = kExampleDataDir;
  const std::string marker = dir + "/complete-v2";
  const std::string command =
      "flock " + dir + ".lock sh -c 'test -f " + marker + " || { /usr/bin/python3 " + source_dir +
      "/examples/models/make_example_data.py " + dir + " >/dev/null && touch " + marker + "; }'";
  return std::system(command.c_str()) == 0;
}

}  // namespace memaudit::testing

#endif  // MEMAUDIT_COMMON_TESTING_EXAMPLE_DATA_H_
