// Small helpers shared by the engine benchmarks.
#ifndef MEMAUDIT_BENCH_BENCH_UTIL_H_
#define MEMAUDIT_BENCH_BENCH_UTIL_H_

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
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

}  // namespace memaudit::bench

#endif  // MEMAUDIT_BENCH_BENCH_UTIL_H_
