#include "common/metrics_registry.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/testing/promtool.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A registry with one family of each kind, in non-sorted registration order.
void Populate(Registry& registry) {
  Family<Histogram>& latency =
      registry.AddHistogram("memaudit_latency_seconds", "RPC latency.", {0.1, 1, 10});
  Histogram& score = latency.Add({{"method", "Score"}});
  for (double v : {0.25, 0.5, 2.0, 20.0}) score.Observe(v);

  Family<Gauge>& depth = registry.AddGauge("memaudit_queue_depth", "Jobs waiting.");
  depth.Add({{"queue", "b"}}).Set(3);
  depth.Add({{"queue", "a"}}).Set(1.5);

  registry.AddCounter("memaudit_rpcs_total", "RPCs served.")
      .Add({{"method", "Score"}, {"code", "OK"}})
      .Increment(2);
}

TEST(RegistryTest, SerializesExactText) {
  Registry registry;
  Populate(registry);
  EXPECT_EQ(registry.Serialize(),
            "# HELP memaudit_latency_seconds RPC latency.\n"
            "# TYPE memaudit_latency_seconds histogram\n"
            "memaudit_latency_seconds_bucket{method=\"Score\",le=\"0.1\"} 0\n"
            "memaudit_latency_seconds_bucket{method=\"Score\",le=\"1\"} 2\n"
            "memaudit_latency_seconds_bucket{method=\"Score\",le=\"10\"} 3\n"
            "memaudit_latency_seconds_bucket{method=\"Score\",le=\"+Inf\"} 4\n"
            "memaudit_latency_seconds_sum{method=\"Score\"} 22.75\n"
            "memaudit_latency_seconds_count{method=\"Score\"} 4\n"
            "# HELP memaudit_queue_depth Jobs waiting.\n"
            "# TYPE memaudit_queue_depth gauge\n"
            "memaudit_queue_depth{queue=\"a\"} 1.5\n"
            "memaudit_queue_depth{queue=\"b\"} 3\n"
            "# HELP memaudit_rpcs_total RPCs served.\n"
            "# TYPE memaudit_rpcs_total counter\n"
            "memaudit_rpcs_total{code=\"OK\",method=\"Score\"} 2\n");
}

TEST(RegistryTest, SeriesWithoutLabelsHasNoBraces) {
  Registry registry;
  registry.AddGauge("up", "Up.").Add({}).Set(1);
  EXPECT_EQ(registry.Serialize(), "# HELP up Up.\n# TYPE up gauge\nup 1\n");
}

TEST(RegistryTest, EmptyFamilyIsOmitted) {
  Registry registry;
  registry.AddGauge("unused", "Never given a series.");
  EXPECT_EQ(registry.Serialize(), "");
}

TEST(RegistryTest, FormatsNumbers) {
  Registry registry;
  Family<Gauge>& family = registry.AddGauge("g", "h");
  const std::vector<std::pair<double, std::string>> cases = {
      {0, "0"},
      {-0.0, "0"},
      {-3, "-3"},
      {123456789, "123456789"},
      {9007199254740992.0, "9007199254740992"},  // 2^53, still exact.
      {1e20, "1e+20"},
      {0.1, "0.1"},
      {1e-7, "1e-07"},
      {std::numeric_limits<double>::quiet_NaN(), "NaN"},
      {std::numeric_limits<double>::infinity(), "+Inf"},
      {-std::numeric_limits<double>::infinity(), "-Inf"},
  };
  for (const auto& [value, text] : cases) {
    family.Add({}).Set(value);
    EXPECT_THAT(registry.Serialize(), HasSubstr("\ng " + text + "\n")) << "value " << value;
  }
}

TEST(RegistryTest, EscapesLabelValuesAndHelp) {
  Registry registry;
  registry.AddGauge("g", "Back\\slash \"quoted\"\nsecond line")
      .Add({{"path", "C:\\dir \"x\"\nnext"}})
      .Set(1);
  EXPECT_EQ(registry.Serialize(),
            "# HELP g Back\\\\slash \"quoted\"\\nsecond line\n"
            "# TYPE g gauge\n"
            "g{path=\"C:\\\\dir \\\"x\\\"\\nnext\"} 1\n");
}

TEST(FamilyTest, SameLabelsGiveSameObject) {
  Registry registry;
  Family<Counter>& family = registry.AddCounter("c_total", "h");
  Counter& a = family.Add({{"k", "v"}, {"x", "y"}});
  Counter& b = family.Add({{"x", "y"}, {"k", "v"}});
  Counter& other = family.Add({{"k", "w"}});
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &other);
}

TEST(FamilyTest, RemoveDropsSeries) {
  Registry registry;
  Family<Gauge>& family = registry.AddGauge("g", "h");
  family.Add({{"k", "gone"}}).Set(7);
  family.Add({{"k", "kept"}}).Set(1);
  family.Remove({{"k", "gone"}});
  family.Remove({{"k", "never-added"}});
  EXPECT_THAT(registry.Serialize(), Not(HasSubstr("gone")));
  EXPECT_THAT(registry.Serialize(), HasSubstr("g{k=\"kept\"} 1\n"));
  EXPECT_EQ(family.Add({{"k", "gone"}}).Value(), 0);  // Re-added fresh.
}

TEST(RegistryTest, SameNameReturnsSameFamily) {
  Registry registry;
  EXPECT_EQ(&registry.AddGauge("g", "h"), &registry.AddGauge("g", "other help"));
  EXPECT_EQ(&registry.AddCounter("c_total", "h"), &registry.AddCounter("c_total", "h"));
  EXPECT_EQ(&registry.AddHistogram("h", "h", {1, 2}), &registry.AddHistogram("h", "h", {1, 2}));
}

TEST(RegistryTest, RejectsConflictingRegistrations) {
  Registry registry;
  registry.AddGauge("g", "h");
  registry.AddHistogram("lat", "h", {1, 2});
  EXPECT_THROW(registry.AddHistogram("g", "h", {1}), std::invalid_argument);
  EXPECT_THROW(registry.AddHistogram("lat", "h", {1, 3}), std::invalid_argument);
  EXPECT_THROW(registry.AddGauge("lat_count", "h"), std::invalid_argument);
  EXPECT_THROW(registry.AddGauge("lat", "h"), std::invalid_argument);
  registry.AddGauge("x_sum", "h");
  EXPECT_THROW(registry.AddHistogram("x", "h", {1}), std::invalid_argument);
}

TEST(RegistryTest, RejectsInvalidNames) {
  Registry registry;
  for (const char* bad : {"", "1abc", "a-b", "a b", "é"}) {
    EXPECT_THROW(registry.AddGauge(bad, "h"), std::invalid_argument) << bad;
  }
  EXPECT_NO_THROW(registry.AddGauge("ns:sub_name_2", "h"));
  EXPECT_THROW(registry.AddCounter("requests", "h"), std::invalid_argument);

  Family<Gauge>& gauges = registry.AddGauge("g", "h");
  for (const char* bad : {"", "1a", "a:b", "a-b", "__reserved"}) {
    EXPECT_THROW(gauges.Add({{bad, "v"}}), std::invalid_argument) << bad;
  }
  EXPECT_NO_THROW(gauges.Add({{"le", "v"}}));  // Only reserved for histograms.
  EXPECT_THROW(registry.AddHistogram("h", "h", {1}).Add({{"le", "1"}}), std::invalid_argument);
}

TEST(RegistryTest, ValidatesBuckets) {
  Registry registry;
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_THROW(registry.AddHistogram("a", "h", {2, 1}), std::invalid_argument);
  EXPECT_THROW(registry.AddHistogram("b", "h", {1, 1}), std::invalid_argument);
  EXPECT_THROW(registry.AddHistogram("c", "h", {std::nan(""), 1}), std::invalid_argument);
  EXPECT_THROW(registry.AddHistogram("d", "h", {-inf, 1}), std::invalid_argument);
  // A trailing +Inf is redundant but allowed; it is not printed twice.
  registry.AddHistogram("e", "h", {1, inf}).Add({}).Observe(5);
  EXPECT_EQ(registry.Serialize(),
            "# HELP e h\n# TYPE e histogram\n"
            "e_bucket{le=\"1\"} 0\ne_bucket{le=\"+Inf\"} 1\ne_sum 5\ne_count 1\n");
  // No finite buckets at all: just +Inf, sum and count.
  registry.AddHistogram("f", "h", {}).Add({}).Observe(-1);
  EXPECT_THAT(registry.Serialize(), HasSubstr("f_bucket{le=\"+Inf\"} 1\nf_sum -1\nf_count 1\n"));
}

TEST(MetricTest, CounterIgnoresNegativeAndNaN) {
  Counter counter;
  counter.Increment();
  counter.Increment(2.5);
  counter.Increment(-10);
  counter.Increment(std::nan(""));
  EXPECT_EQ(counter.Value(), 3.5);
}

TEST(MetricTest, GaugeMovesBothWays) {
  Gauge gauge;
  gauge.Set(10);
  gauge.Increment();
  gauge.Decrement(4);
  gauge.Increment(-0.5);
  EXPECT_EQ(gauge.Value(), 6.5);
}

TEST(MetricTest, HistogramBucketEdgesAreInclusive) {
  Histogram histogram({1, 2});
  histogram.Observe(1);  // le="1" includes 1.
  histogram.Observe(1.5);
  histogram.Observe(std::nan(""));  // Only in +Inf, as client_golang does.
  Histogram::Snapshot snapshot = histogram.Collect();
  EXPECT_EQ(snapshot.cumulative_counts, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(snapshot.count, 3u);
  EXPECT_TRUE(std::isnan(snapshot.sum));
}

// Updates and new series from many threads while another thread scrapes:
// nothing lost, scrapes never see a counter go backwards. Run under TSan to
// make this a real race check.
TEST(RegistryTest, ConcurrentUpdatesWhileSerializing) {
  Registry registry;
  Family<Counter>& counters = registry.AddCounter("ops_total", "h");
  Family<Histogram>& histograms = registry.AddHistogram("op_seconds", "h", {0.5});
  Counter& shared = counters.Add({{"kind", "shared"}});
  constexpr int kThreads = 4;
  constexpr int kIterations = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Family<Gauge>& gauges = registry.AddGauge("per_thread", "h");
      for (int i = 0; i < kIterations; ++i) {
        shared.Increment();
        histograms.Add({{"thread", std::to_string(t)}}).Observe(i % 2);
        if (i % 1000 == 0) gauges.Add({{"t", std::to_string(t)}, {"i", std::to_string(i)}}).Set(i);
      }
    });
  }
  double last_seen = 0;
  for (int scrape = 0; scrape < 200; ++scrape) {
    const std::string text = registry.Serialize();
    const std::string prefix = "ops_total{kind=\"shared\"} ";
    const size_t at = text.find(prefix);
    ASSERT_NE(at, std::string::npos);
    const double seen = std::strtod(text.c_str() + at + prefix.size(), nullptr);
    EXPECT_GE(seen, last_seen);
    last_seen = seen;
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(shared.Value(), kThreads * kIterations);
  const std::string text = registry.Serialize();
  EXPECT_THAT(text, HasSubstr("op_seconds_count{thread=\"3\"} 20000\n"));
  EXPECT_THAT(text, HasSubstr("op_seconds_bucket{thread=\"3\",le=\"0.5\"} 10000\n"));
}

// Prometheus' own parser and linter, when installed (Debian `prometheus`).
TEST(RegistryTest, PromtoolAcceptsOutput) {
  Registry registry;
  Populate(registry);
  registry.AddGauge("memaudit_escaped_info", "Odd \\ help\nacross lines.")
      .Add({{"value", "quote\" backslash\\ newline\n"}})
      .Set(1);
  registry.AddGauge("memaudit_special_values", "Non-finite values.").Add({{"v", "nan"}}).Set(NAN);
  registry.AddGauge("memaudit_special_values", "").Add({{"v", "inf"}}).Set(-INFINITY);
  const auto check = memaudit::testing::CheckMetricsWithPromtool(registry.Serialize());
  if (!check.has_value()) GTEST_SKIP() << "promtool not installed";
  EXPECT_EQ(check->status, 0) << check->output;
}

}  // namespace
}  // namespace memaudit::metrics
