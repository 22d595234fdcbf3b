#include "common/metrics/metrics_endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "common/metrics/metrics.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // Names lower-cased.
  std::string body;
};

// A deliberately tiny HTTP/1.1 client over a POSIX socket, so the test checks
// what actually goes over the wire. Returns status 0 on connection failure.
HttpResponse Fetch(int port, const std::string& method, const std::string& path,
                   const std::string& extra_headers = "") {
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
  const std::string request = method + " " + path +
                              " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" +
                              extra_headers + "\r\n";
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

class MetricsEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    metrics::AddCounter(registry_, "memaudit_rpcs_total", "RPCs served.")
        .Add({{"method", "Score"}})
        .Increment(3);
    metrics::AddGauge(registry_, "memaudit_queue_depth", "Jobs \"waiting\".").Add({}).Set(2);
    auto endpoint = MetricsEndpoint::Start(&registry_, "127.0.0.1", 0);
    MEMAUDIT_ASSERT_OK(endpoint);
    endpoint_ = *std::move(endpoint);
  }

  prometheus::Registry registry_;  // Declared first: must outlive the endpoint.
  std::unique_ptr<MetricsEndpoint> endpoint_;
};

// With a password, a scrape without it (or with another) gets 401 and no
// metrics; Prometheus' basic_auth with any user name and the password gets
// them; probes of /healthz need none.
TEST(MetricsPasswordTest, ScrapesNeedThePassword) {
  prometheus::Registry registry;
  metrics::AddGauge(registry, "memaudit_secret_ratio", "A result.").Add({}).Set(0.5);
  auto endpoint = MetricsEndpoint::Start(&registry, "127.0.0.1", 0, "s3cret");
  MEMAUDIT_ASSERT_OK(endpoint);
  const int port = (*endpoint)->port();
  HttpResponse open = Fetch(port, "GET", "/metrics");
  EXPECT_EQ(open.status, 401);
  EXPECT_EQ(open.body.find("memaudit_secret_ratio"), std::string::npos);
  // base64("prometheus:wrong"), base64("prometheus:s3cret")
  EXPECT_EQ(
      Fetch(port, "GET", "/metrics", "Authorization: Basic cHJvbWV0aGV1czp3cm9uZw==\r\n").status,
      401);
  HttpResponse scraped =
      Fetch(port, "GET", "/metrics", "Authorization: Basic cHJvbWV0aGV1czpzM2NyZXQ=\r\n");
  EXPECT_EQ(scraped.status, 200);
  EXPECT_NE(scraped.body.find("memaudit_secret_ratio 0.5"), std::string::npos) << scraped.body;
  EXPECT_EQ(Fetch(port, "GET", "/healthz").status, 200);
}

TEST_F(MetricsEndpointTest, ServesTheRegistry) {
  ASSERT_GT(endpoint_->port(), 0);
  HttpResponse response = Fetch(endpoint_->port(), "GET", "/metrics");
  EXPECT_EQ(response.status, 200);
  EXPECT_THAT(response.headers["content-type"], ::testing::StartsWith("text/plain"));
  EXPECT_EQ(response.headers["content-length"], std::to_string(response.body.size()));
  EXPECT_THAT(response.body, HasSubstr(metrics::Exposition(registry_)));
  EXPECT_THAT(response.body, HasSubstr("memaudit_rpcs_total{method=\"Score\"} 3\n"));
  EXPECT_THAT(response.body, HasSubstr("memaudit_queue_depth 2\n"));
}

TEST_F(MetricsEndpointTest, EachScrapeSeesCurrentValues) {
  metrics::AddCounter(registry_, "memaudit_rpcs_total", "").Add({{"method", "Score"}}).Increment();
  EXPECT_THAT(Fetch(endpoint_->port(), "GET", "/metrics").body,
              HasSubstr("memaudit_rpcs_total{method=\"Score\"} 4\n"));
}

TEST_F(MetricsEndpointTest, HealthzAnswers200WithoutTheRegistry) {
  HttpResponse response = Fetch(endpoint_->port(), "GET", "/healthz");
  EXPECT_EQ(response.status, 200);
  EXPECT_THAT(response.body, ::testing::Not(HasSubstr("memaudit_")));
}

TEST_F(MetricsEndpointTest, OtherPathsAre404) {
  for (const char* path : {"/", "/metric", "/index.html"}) {
    EXPECT_EQ(Fetch(endpoint_->port(), "GET", path).status, 404) << path;
  }
}

TEST_F(MetricsEndpointTest, ConcurrentScrapesWhileUpdating) {
  prometheus::Counter& counter =
      metrics::AddCounter(registry_, "memaudit_rpcs_total", "").Add({{"method", "Score"}});
  std::thread writer([&] {
    for (int i = 0; i < 100000; ++i) counter.Increment();
  });
  std::vector<std::thread> scrapers;
  std::vector<int> statuses(4 * 10);
  for (int t = 0; t < 4; ++t) {
    scrapers.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i)
        statuses[t * 10 + i] = Fetch(endpoint_->port(), "GET", "/metrics").status;
    });
  }
  writer.join();
  for (std::thread& scraper : scrapers) scraper.join();
  EXPECT_THAT(statuses, ::testing::Each(200));
  EXPECT_EQ(counter.Value(), 100003);
}

TEST_F(MetricsEndpointTest, BusyPortIsUnavailable) {
  auto second = MetricsEndpoint::Start(&registry_, "127.0.0.1", endpoint_->port());
  EXPECT_THAT(second, StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(MetricsEndpointTest, StopsListeningPromptlyAfterAScrape) {
  const int port = endpoint_->port();
  ASSERT_EQ(Fetch(port, "GET", "/metrics").status, 200);
  const auto start = std::chrono::steady_clock::now();
  endpoint_.reset();
  // civetweb alone waits up to 2 s for its accept loop here.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
  EXPECT_EQ(Fetch(port, "GET", "/healthz").status, 0);
}

TEST(MetricsEndpointStartTest, RejectsBadArguments) {
  prometheus::Registry registry;
  EXPECT_THAT(MetricsEndpoint::Start(nullptr, "127.0.0.1", 0),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(MetricsEndpoint::Start(&registry, "127.0.0.1", -1),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(MetricsEndpoint::Start(&registry, "127.0.0.1", 65536),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(MetricsEndpoint::Start(&registry, "::1", 0),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_FALSE(MetricsEndpoint::Start(&registry, "not a host", 0).ok());
}

TEST(MetricsEndpointStartTest, AcceptsLocalhost) {
  prometheus::Registry registry;
  auto endpoint = MetricsEndpoint::Start(&registry, "localhost", 0);
  MEMAUDIT_ASSERT_OK(endpoint);
  EXPECT_EQ(Fetch((*endpoint)->port(), "GET", "/healthz").status, 200);
}

TEST(MetricsEndpointStartTest, TwoEndpointsGetDistinctPorts) {
  prometheus::Registry registry;
  auto a = MetricsEndpoint::Start(&registry, "127.0.0.1", 0);
  auto b = MetricsEndpoint::Start(&registry, "", 0);  // All interfaces.
  MEMAUDIT_ASSERT_OK(a);
  MEMAUDIT_ASSERT_OK(b);
  EXPECT_NE((*a)->port(), (*b)->port());
  EXPECT_EQ(Fetch((*b)->port(), "GET", "/metrics").status, 200);
}

// civetweb may set SIGCHLD to SIG_IGN, which would break waitpid() in the
// rest of the process; Start must leave it as it was.
TEST(MetricsEndpointStartTest, KeepsSigchldDisposition) {
  struct sigaction before;
  sigaction(SIGCHLD, nullptr, &before);
  prometheus::Registry registry;
  auto endpoint = MetricsEndpoint::Start(&registry, "127.0.0.1", 0);
  MEMAUDIT_ASSERT_OK(endpoint);
  struct sigaction after;
  sigaction(SIGCHLD, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

}  // namespace
}  // namespace memaudit
