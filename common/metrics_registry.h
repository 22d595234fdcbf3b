// A small Prometheus metrics registry with prometheus-cpp's API shape.
//
// prometheus-cpp is not packaged on Debian 12, so memaudit carries this
// minimal replacement (DESIGN.md §5). Code written against it should port to
// prometheus-cpp with little more than an include change.
//
// Usage:
//   Registry registry;
//   Counter& rpcs = registry.AddCounter("memaudit_rpcs_total", "RPCs served.")
//                       .Add({{"method", "Score"}});
//   rpcs.Increment();
//   std::string text = registry.Serialize();  // text exposition format 0.0.4
//
// Thread safety: every class here is safe to use from many threads at once;
// metrics are updated from gRPC threads while an HTTP thread scrapes.
//
// Errors: invalid metric names, label names or histogram buckets are
// programming errors. They are reported by throwing std::invalid_argument at
// registration time (Registry::Add*, Family::Add) rather than crashing the
// process or silently rewriting the name, so a test exercising the code path
// catches them before deployment.
//
// Lifetime: references returned by Registry::Add* and Family::Add stay valid
// for the registry's lifetime, except that Family::Remove destroys the
// removed series; callers must drop their reference to it first.

#ifndef MEMAUDIT_COMMON_METRICS_REGISTRY_H_
#define MEMAUDIT_COMMON_METRICS_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace memaudit::metrics {

using Labels = std::map<std::string, std::string>;

// A value that can go up and down.
class Gauge {
 public:
  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void Set(double value);
  void Increment(double delta = 1);
  void Decrement(double delta = 1);
  double Value() const;

 private:
  std::atomic<double> value_{0};
};

// A monotonically increasing value. Increments by a negative (or NaN) delta
// are ignored, because a decreasing counter would read as a process restart
// to Prometheus' rate().
class Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  void Increment(double delta = 1);
  double Value() const;

 private:
  std::atomic<double> value_{0};
};

// Observations counted into cumulative buckets, exposed as `<name>_bucket`
// (with an `le` label, ending in le="+Inf"), `<name>_sum` and `<name>_count`.
class Histogram {
 public:
  // A snapshot taken under one lock, so the buckets, sum and count agree.
  struct Snapshot {
    std::vector<uint64_t> cumulative_counts;  // One per bound, then +Inf.
    double sum = 0;
    uint64_t count = 0;
  };

  // `bounds` are the finite upper bounds, strictly increasing; a trailing
  // +Inf is accepted and dropped because the +Inf bucket is always present.
  // Throws std::invalid_argument otherwise.
  explicit Histogram(std::vector<double> bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void Observe(double value);
  Snapshot Collect() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  const std::vector<double> bounds_;
  mutable absl::Mutex mu_;
  std::vector<uint64_t> counts_ ABSL_GUARDED_BY(mu_);  // Per bucket, not cumulative.
  double sum_ ABSL_GUARDED_BY(mu_) = 0;
};

namespace detail {

enum class MetricType { kCounter, kGauge, kHistogram };

// Checked once per family/series creation; all throw std::invalid_argument.
void ValidateMetricName(const std::string& name);
void ValidateLabelNames(const Labels& labels, MetricType type);
std::vector<double> ValidateBuckets(std::vector<double> bounds);

// Exposition helpers, shared by Family<T>::AppendTo.
void AppendHeader(const std::string& name, const std::string& help, MetricType type,
                  std::string* out);
void AppendSeries(const std::string& name, const Labels& labels, const Gauge& gauge,
                  std::string* out);
void AppendSeries(const std::string& name, const Labels& labels, const Counter& counter,
                  std::string* out);
void AppendSeries(const std::string& name, const Labels& labels, const Histogram& histogram,
                  std::string* out);

// Type-erased family, so the registry can hold all kinds in one sorted map.
class FamilyBase {
 public:
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const { return name_; }
  MetricType type() const { return type_; }
  const std::vector<double>& buckets() const { return buckets_; }

  // Appends HELP, TYPE and one line per sample; nothing for an empty family
  // (as client_golang does), so unused families do not clutter scrapes.
  virtual void AppendTo(std::string* out) const = 0;

 protected:
  FamilyBase(std::string name, std::string help, MetricType type, std::vector<double> buckets)
      : name_(std::move(name)), help_(std::move(help)), type_(type), buckets_(std::move(buckets)) {}

  const std::string name_;
  const std::string help_;
  const MetricType type_;
  const std::vector<double> buckets_;  // Histogram bounds; empty for other types.
};

}  // namespace detail

// All series of one metric, one per distinct label set.
template <class T>
class Family final : public detail::FamilyBase {
 public:
  // Returns the series for `labels`, creating it on first use; the same
  // label set always yields the same object. Throws std::invalid_argument
  // for invalid label names (and for "le" on histograms).
  T& Add(const Labels& labels) {
    {
      absl::ReaderMutexLock lock(&mu_);
      auto it = metrics_.find(labels);
      if (it != metrics_.end()) return *it->second;
    }
    detail::ValidateLabelNames(labels, type_);
    absl::MutexLock lock(&mu_);
    std::unique_ptr<T>& slot = metrics_[labels];
    if (slot == nullptr) {
      if constexpr (std::is_same_v<T, Histogram>) {
        slot = std::make_unique<Histogram>(buckets_);
      } else {
        slot = std::make_unique<T>();
      }
    }
    return *slot;
  }

  // Drops the series for `labels` (no-op if absent). Invalidates references
  // to it.
  void Remove(const Labels& labels) {
    absl::MutexLock lock(&mu_);
    metrics_.erase(labels);
  }

  void AppendTo(std::string* out) const override {
    absl::ReaderMutexLock lock(&mu_);
    if (metrics_.empty()) return;
    detail::AppendHeader(name_, help_, type_, out);
    for (const auto& [labels, metric] : metrics_) {
      detail::AppendSeries(name_, labels, *metric, out);
    }
  }

 private:
  friend class Registry;

  Family(std::string name, std::string help, detail::MetricType type,
         std::vector<double> buckets = {})
      : FamilyBase(std::move(name), std::move(help), type, std::move(buckets)) {}

  mutable absl::Mutex mu_;
  // std::map keeps series sorted by labels, so output is deterministic.
  std::map<Labels, std::unique_ptr<T>> metrics_ ABSL_GUARDED_BY(mu_);
};

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Each Add* returns the existing family when one of the same name and type
  // exists (its original help text is kept). Throws std::invalid_argument for
  // an invalid name, a name taken by a family of another type, or a name
  // whose samples would collide with another family's (e.g. a gauge
  // "x_count" next to a histogram "x").
  Family<Gauge>& AddGauge(const std::string& name, const std::string& help);
  // `name` must end in "_total".
  Family<Counter>& AddCounter(const std::string& name, const std::string& help);
  // `buckets`: see Histogram. Re-adding with different buckets throws.
  Family<Histogram>& AddHistogram(const std::string& name, const std::string& help,
                                  std::vector<double> buckets);

  // Prometheus text exposition format 0.0.4, families sorted by name.
  std::string Serialize() const;

 private:
  // Returns the family called `name`, creating it if absent. Throws on a
  // type/bucket mismatch or a sample-name collision. Defined in the .cc.
  template <class T>
  Family<T>& GetOrAdd(const std::string& name, const std::string& help, detail::MetricType type,
                      std::vector<double> buckets) ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<detail::FamilyBase>> families_ ABSL_GUARDED_BY(mu_);
  // Every sample name in use (e.g. x_bucket, x_sum, x_count for histogram x)
  // mapped to its family's name, to reject collisions.
  std::map<std::string, std::string> sample_names_ ABSL_GUARDED_BY(mu_);
};

}  // namespace memaudit::metrics

#endif  // MEMAUDIT_COMMON_METRICS_REGISTRY_H_
