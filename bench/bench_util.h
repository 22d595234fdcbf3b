// Small helpers shared by the engine benchmarks.
#ifndef MEMAUDIT_BENCH_BENCH_UTIL_H_
#define MEMAUDIT_BENCH_BENCH_UTIL_H_

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace memaudit::bench {

inline double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// --name=value flags; returns `fallback` when absent.
inline std::string Flag(int argc, char** argv, const std::string& name,
                        const std::string& fallback) {
  const std::string key = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], key.c_str(), key.size()) == 0) return argv[i] + key.size();
  }
  return fallback;
}

inline long FlagInt(int argc, char** argv, const std::string& name, long fallback) {
  return std::atol(Flag(argc, argv, name, std::to_string(fallback)).c_str());
}

// The p-quantile (0..1) of `v`, nearest rank; 0 for none.
inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

// Removes a directory this program made when it goes out of scope (declared
// before a cluster, so after the cluster's processes have stopped).
struct RemovedDir {
  std::string path;
  ~RemovedDir() {
    if (path.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// --dir=DIR, or a fresh /tmp/<prefix>.XXXXXX that `*removed` deletes at the
// end unless --keep-dir=1; "" when none can be made.
inline std::string ScratchDir(int argc, char** argv, const std::string& prefix,
                              RemovedDir* removed) {
  std::string dir = Flag(argc, argv, "dir", "");
  if (!dir.empty()) return dir;
  std::string tmpl = "/tmp/" + prefix + ".XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror("mkdtemp");
    return "";
  }
  if (FlagInt(argc, argv, "keep-dir", 0) == 0) removed->path = tmpl;
  return tmpl;
}

// The line that reruns this program as it was run.
inline std::string Reproduce(const std::string& program, int argc, char** argv) {
  std::string line = program;
  for (int i = 1; i < argc; ++i) line += std::string(" ") + argv[i];
  return line;
}

}  // namespace memaudit::bench

#endif  // MEMAUDIT_BENCH_BENCH_UTIL_H_
