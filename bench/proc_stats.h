// A process's threads, memory and CPU time from /proc, for the benches that
// watch a service they started.
#ifndef MEMAUDIT_BENCH_PROC_STATS_H_
#define MEMAUDIT_BENCH_PROC_STATS_H_

#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace memaudit::bench {

struct ProcStatus {
  long threads = 0;
  long rss_kb = 0;
};

inline ProcStatus ReadProcStatus(pid_t pid) {
  ProcStatus s;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Threads:", 0) == 0) s.threads = std::atol(line.c_str() + 8);
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kb = std::atol(line.c_str() + 6);
  }
  return s;
}

// utime + stime of `pid`, in seconds.
inline double ProcCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = all.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(all.substr(paren + 2));
  std::vector<std::string> tokens;
  for (std::string t; fields >> t;) tokens.push_back(t);
  if (tokens.size() < 13) return 0;
  // Field 3 (state) is tokens[0]; utime is field 14, stime field 15.
  return (std::atof(tokens[11].c_str()) + std::atof(tokens[12].c_str())) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

inline double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec +
         u.ru_stime.tv_usec * 1e-6;
}

}  // namespace memaudit::bench

#endif  // MEMAUDIT_BENCH_PROC_STATS_H_
