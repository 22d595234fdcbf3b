#include "common/metrics_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // Names lower-cased.
  std::string body;
};

// A deliberately tiny HTTP/1.1 client over a POSIX socket, so the test checks
// what actually goes over the wire. Returns status 0 on connection failure.
HttpResponse Fetch(int port, const std::string& method, const std::string& path) {
  HttpResponse response;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return response;
  timeval timeout{5, 0};  // Fail the test rather than hang it.
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return response;
  }
  const std::string request =
      method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string raw;
  char buffer[4096];
  ssize_t n;
  while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) raw.append(buffer, n);
  close(fd);

  const size_t header_end = raw.find("\r\n\r\n");
  if (raw.compare(0, 9, "HTTP/1.1 ") != 0 || header_end == std::string::npos) return response;
  response.status = std::stoi(raw.substr(9, 3));
  size_t line = raw.find("\r\n") + 2;
  while (line < header_end) {
    const size_t eol = raw.find("\r\n", line);
    const std::string header = raw.substr(line, eol - line);
    const size_t colon = header.find(':');
    if (colon != std::string::npos) {
      std::string name = header.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(), ::tolower);
      response.headers[name] = header.substr(header.find_first_not_of(' ', colon + 1));
    }
    line = eol + 2;
  }
  response.body = raw.substr(header_end + 4);
  return response;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_.AddCounter("memaudit_rpcs_total", "RPCs served.")
        .Add({{"method", "Score"}})
        .Increment(3);
    registry_.AddGauge("memaudit_queue_depth", "Jobs \"waiting\".").Add({}).Set(2);
    absl::StatusOr<std::unique_ptr<HttpServer>> server =
        HttpServer::Start(&registry_, "127.0.0.1", 0);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  Registry registry_;  // Declared first: must outlive the server.
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, ServesMetrics) {
  ASSERT_GT(server_->port(), 0);
  HttpResponse response = Fetch(server_->port(), "GET", "/metrics");
  EXPECT_EQ(response.status, 200);
  EXPECT_THAT(response.headers["content-type"], StartsWith("text/plain; version=0.0.4"));
  EXPECT_EQ(response.headers["content-length"], std::to_string(response.body.size()));
  EXPECT_EQ(response.body, registry_.Serialize());
  EXPECT_THAT(response.body, HasSubstr("memaudit_rpcs_total{method=\"Score\"} 3\n"));
}

TEST_F(HttpServerTest, EachScrapeSeesCurrentValues) {
  registry_.AddCounter("memaudit_rpcs_total", "").Add({{"method", "Score"}}).Increment();
  EXPECT_THAT(Fetch(server_->port(), "GET", "/metrics").body,
              HasSubstr("memaudit_rpcs_total{method=\"Score\"} 4\n"));
}

TEST_F(HttpServerTest, HealthzAnswersOk) {
  HttpResponse response = Fetch(server_->port(), "GET", "/healthz");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "ok\n");
}

TEST_F(HttpServerTest, HeadSendsHeadersOnly) {
  HttpResponse response = Fetch(server_->port(), "HEAD", "/metrics");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "");
}

TEST_F(HttpServerTest, OtherPathsAre404) {
  for (const char* path : {"/", "/metric", "/metrics/x", "/metricsx", "/index.html"}) {
    EXPECT_EQ(Fetch(server_->port(), "GET", path).status, 404) << path;
  }
}

TEST_F(HttpServerTest, OtherMethodsAre405) {
  HttpResponse response = Fetch(server_->port(), "POST", "/metrics");
  EXPECT_EQ(response.status, 405);
  EXPECT_EQ(response.headers["allow"], "GET, HEAD");
}

TEST_F(HttpServerTest, ConcurrentScrapesWhileUpdating) {
  Counter& counter = registry_.AddCounter("memaudit_rpcs_total", "").Add({{"method", "Score"}});
  std::thread writer([&] {
    for (int i = 0; i < 100000; ++i) counter.Increment();
  });
  std::vector<std::thread> scrapers;
  std::vector<int> statuses(4 * 10);
  for (int t = 0; t < 4; ++t) {
    scrapers.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i)
        statuses[t * 10 + i] = Fetch(server_->port(), "GET", "/metrics").status;
    });
  }
  writer.join();
  for (std::thread& scraper : scrapers) scraper.join();
  EXPECT_THAT(statuses, ::testing::Each(200));
  EXPECT_EQ(counter.Value(), 100003);
}

TEST_F(HttpServerTest, BusyPortIsUnavailable) {
  absl::StatusOr<std::unique_ptr<HttpServer>> second =
      HttpServer::Start(&registry_, "127.0.0.1", server_->port());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
}

TEST_F(HttpServerTest, DestructorStopsListening) {
  const int port = server_->port();
  server_.reset();
  EXPECT_EQ(Fetch(port, "GET", "/healthz").status, 0);
}

TEST(HttpServerStartTest, RejectsBadArguments) {
  Registry registry;
  EXPECT_EQ(HttpServer::Start(nullptr, "127.0.0.1", 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpServer::Start(&registry, "127.0.0.1", -1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpServer::Start(&registry, "127.0.0.1", 65536).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(HttpServer::Start(&registry, "not a host", 0).ok());
}

TEST(HttpServerStartTest, AcceptsLocalhost) {
  Registry registry;
  auto server = HttpServer::Start(&registry, "localhost", 0);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(Fetch((*server)->port(), "GET", "/healthz").status, 200);
}

TEST(HttpServerStartTest, TwoServersGetDistinctPorts) {
  Registry registry;
  auto a = HttpServer::Start(&registry, "127.0.0.1", 0);
  auto b = HttpServer::Start(&registry, "", 0);  // All interfaces.
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE((*a)->port(), (*b)->port());
  EXPECT_EQ(Fetch((*b)->port(), "GET", "/healthz").status, 200);
}

// civetweb may set SIGCHLD to SIG_IGN, which would break waitpid() in the
// rest of the process; Start must leave it as it was.
TEST(HttpServerStartTest, KeepsSigchldDisposition) {
  struct sigaction before;
  sigaction(SIGCHLD, nullptr, &before);
  Registry registry;
  auto server = HttpServer::Start(&registry, "127.0.0.1", 0);
  ASSERT_TRUE(server.ok()) << server.status();
  struct sigaction after;
  sigaction(SIGCHLD, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

}  // namespace
}  // namespace memaudit::metrics
