// Reads one sample from a service's /metrics (loopback, no password), for
// benches that report what the service counted.
#ifndef MEMAUDIT_BENCH_METRICS_SCRAPE_H_
#define MEMAUDIT_BENCH_METRICS_SCRAPE_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

namespace memaudit::bench {

// Every unlabelled sample ("name value") of 127.0.0.1:`port`/metrics; empty
// when it cannot be read.
inline std::map<std::string, double> ScrapeMetrics(int port) {
  std::map<std::string, double> out;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return out;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string body;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[65536];
      for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) body.append(buf, n);
    }
  }
  close(fd);
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#' || line.find('{') != std::string::npos) continue;
    const size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    out[line.substr(0, space)] = std::strtod(line.c_str() + space + 1, nullptr);
  }
  return out;
}

}  // namespace memaudit::bench

#endif  // MEMAUDIT_BENCH_METRICS_SCRAPE_H_
