// Helpers for data/'s tests: scratch directories, files, and NumPy (via
// Debian's /usr/bin/python3) to write the arrays the readers must accept.
#ifndef MEMAUDIT_DATA_TEST_UTIL_H_
#define MEMAUDIT_DATA_TEST_UTIL_H_

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace memaudit::data::testing {

// A fresh directory per call.
inline std::string ScratchDir() {
  static std::atomic<int> counter{0};
  const std::string dir = ::testing::TempDir() + "/memaudit_data_" + std::to_string(getpid()) +
                          "_" + std::to_string(counter++);
  mkdir(dir.c_str(), 0755);
  return dir;
}

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// Debian's python3-numpy installs for /usr/bin/python3, which a pyenv or
// venv python3 on PATH may shadow.
inline bool HaveNumpy() {
  static const bool have = std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
  return have;
}

// Runs `code` (with numpy imported as np) in `dir`; true on success.
inline bool RunNumpy(const std::string& dir, const std::string& code) {
  const std::string script = dir + "/script.py";
  WriteFile(script, "import numpy as np\nimport os\nos.chdir(" + std::string("'") + dir + "')\n" +
                        code + "\n");
  return std::system(("/usr/bin/python3 " + script).c_str()) == 0;
}

// The output of a shell command.
inline std::string CommandOutput(const std::string& command) {
  std::string out;
  if (FILE* p = popen(command.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    pclose(p);
  }
  return out;
}

}  // namespace memaudit::data::testing

#define MEMAUDIT_REQUIRE_NUMPY()                                                     \
  do {                                                                               \
    if (!::memaudit::data::testing::HaveNumpy()) {                                   \
      GTEST_SKIP() << "numpy for /usr/bin/python3 is not installed (python3-numpy)"; \
    }                                                                                \
  } while (false)

#endif  // MEMAUDIT_DATA_TEST_UTIL_H_
