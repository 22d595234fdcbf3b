#include "common/metrics_registry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace memaudit::metrics {
namespace {

// C++17 std::atomic<double> has no fetch_add; a CAS loop is the portable way.
void AtomicAdd(std::atomic<double>& target, double delta) {
  double current = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(current, current + delta, std::memory_order_relaxed)) {
  }
}

bool IsNameStart(char c, bool allow_colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
}

bool IsNameChar(char c, bool allow_colon) {
  return IsNameStart(c, allow_colon) || (c >= '0' && c <= '9');
}

// Metric names: [a-zA-Z_:][a-zA-Z0-9_:]*; label names: the same without ':'.
bool IsValidName(const std::string& name, bool allow_colon) {
  if (name.empty() || !IsNameStart(name[0], allow_colon)) return false;
  return std::all_of(name.begin(), name.end(),
                     [allow_colon](char c) { return IsNameChar(c, allow_colon); });
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Integers print exactly without exponent (counters read "42", not "4.2e+01");
// anything else uses the shortest text that round-trips.
std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53
  if (value == std::trunc(value) && std::fabs(value) <= kMaxExactInteger) {
    return std::to_string(static_cast<int64_t>(value));
  }
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

// Label values escape backslash, double quote and newline; HELP text only
// backslash and newline (exposition format 0.0.4).
void AppendEscaped(const std::string& text, bool escape_quote, std::string* out) {
  for (char c : text) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '"' && escape_quote) {
      out->append("\\\"");
    } else {
      out->push_back(c);
    }
  }
}

// Appends `name{labels[,extra_name="extra_value"]} value\n`.
void AppendSample(const std::string& name, const Labels& labels, const char* extra_name,
                  const std::string& extra_value, double value, std::string* out) {
  out->append(name);
  if (!labels.empty() || extra_name != nullptr) {
    out->push_back('{');
    bool first = true;
    auto append_label = [&](const std::string& label, const std::string& label_value) {
      if (!first) out->push_back(',');
      first = false;
      out->append(label).append("=\"");
      AppendEscaped(label_value, /*escape_quote=*/true, out);
      out->push_back('"');
    };
    for (const auto& [label, label_value] : labels) append_label(label, label_value);
    if (extra_name != nullptr) append_label(extra_name, extra_value);
    out->push_back('}');
  }
  out->push_back(' ');
  out->append(FormatValue(value));
  out->push_back('\n');
}

const char* TypeName(detail::MetricType type) {
  switch (type) {
    case detail::MetricType::kCounter:
      return "counter";
    case detail::MetricType::kGauge:
      return "gauge";
    case detail::MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

std::vector<std::string> SampleNames(const std::string& name, detail::MetricType type) {
  if (type != detail::MetricType::kHistogram) return {name};
  return {name, name + "_bucket", name + "_sum", name + "_count"};
}

}  // namespace

void Gauge::Set(double value) { value_.store(value, std::memory_order_relaxed); }
void Gauge::Increment(double delta) { AtomicAdd(value_, delta); }
void Gauge::Decrement(double delta) { AtomicAdd(value_, -delta); }
double Gauge::Value() const { return value_.load(std::memory_order_relaxed); }

void Counter::Increment(double delta) {
  if (!(delta >= 0)) return;  // Also rejects NaN.
  AtomicAdd(value_, delta);
}
double Counter::Value() const { return value_.load(std::memory_order_relaxed); }

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(detail::ValidateBuckets(std::move(bounds))), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  // Buckets are "less than or equal", so the first bound >= value. NaN fails
  // every comparison; Prometheus clients count it only in +Inf.
  size_t bucket = bounds_.size();
  if (!std::isnan(value)) {
    bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  }
  absl::MutexLock lock(&mu_);
  ++counts_[bucket];
  sum_ += value;
}

Histogram::Snapshot Histogram::Collect() const {
  Snapshot snapshot;
  absl::MutexLock lock(&mu_);
  snapshot.cumulative_counts.reserve(counts_.size());
  for (uint64_t count : counts_) {
    snapshot.count += count;
    snapshot.cumulative_counts.push_back(snapshot.count);
  }
  snapshot.sum = sum_;
  return snapshot;
}

namespace detail {

void ValidateMetricName(const std::string& name) {
  if (!IsValidName(name, /*allow_colon=*/true)) {
    throw std::invalid_argument("invalid Prometheus metric name: '" + name + "'");
  }
}

void ValidateLabelNames(const Labels& labels, MetricType type) {
  for (const auto& [label, value] : labels) {
    if (!IsValidName(label, /*allow_colon=*/false)) {
      throw std::invalid_argument("invalid Prometheus label name: '" + label + "'");
    }
    if (label.rfind("__", 0) == 0) {
      throw std::invalid_argument("label names starting with '__' are reserved: '" + label + "'");
    }
    if (type == MetricType::kHistogram && label == "le") {
      throw std::invalid_argument("label 'le' is reserved for histogram buckets");
    }
  }
}

std::vector<double> ValidateBuckets(std::vector<double> bounds) {
  if (!bounds.empty() && std::isinf(bounds.back()) && bounds.back() > 0) bounds.pop_back();
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) {
      throw std::invalid_argument("histogram bucket bounds must be finite (+Inf is implicit)");
    }
    if (i > 0 && !(bounds[i - 1] < bounds[i])) {
      throw std::invalid_argument("histogram bucket bounds must be strictly increasing");
    }
  }
  return bounds;
}

void AppendHeader(const std::string& name, const std::string& help, MetricType type,
                  std::string* out) {
  out->append("# HELP ").append(name).push_back(' ');
  AppendEscaped(help, /*escape_quote=*/false, out);
  out->append("\n# TYPE ").append(name).push_back(' ');
  out->append(TypeName(type)).push_back('\n');
}

void AppendSeries(const std::string& name, const Labels& labels, const Gauge& gauge,
                  std::string* out) {
  AppendSample(name, labels, nullptr, "", gauge.Value(), out);
}

void AppendSeries(const std::string& name, const Labels& labels, const Counter& counter,
                  std::string* out) {
  AppendSample(name, labels, nullptr, "", counter.Value(), out);
}

void AppendSeries(const std::string& name, const Labels& labels, const Histogram& histogram,
                  std::string* out) {
  const Histogram::Snapshot snapshot = histogram.Collect();
  const std::vector<double>& bounds = histogram.bounds();
  const std::string bucket_name = name + "_bucket";
  for (size_t i = 0; i < bounds.size(); ++i) {
    AppendSample(bucket_name, labels, "le", FormatValue(bounds[i]),
                 static_cast<double>(snapshot.cumulative_counts[i]), out);
  }
  AppendSample(bucket_name, labels, "le", "+Inf", static_cast<double>(snapshot.count), out);
  AppendSample(name + "_sum", labels, nullptr, "", snapshot.sum, out);
  AppendSample(name + "_count", labels, nullptr, "", static_cast<double>(snapshot.count), out);
}

}  // namespace detail

Family<Gauge>& Registry::AddGauge(const std::string& name, const std::string& help) {
  return GetOrAdd<Gauge>(name, help, detail::MetricType::kGauge, {});
}

Family<Counter>& Registry::AddCounter(const std::string& name, const std::string& help) {
  if (!EndsWith(name, "_total")) {
    throw std::invalid_argument("counter name must end in _total: '" + name + "'");
  }
  return GetOrAdd<Counter>(name, help, detail::MetricType::kCounter, {});
}

Family<Histogram>& Registry::AddHistogram(const std::string& name, const std::string& help,
                                          std::vector<double> buckets) {
  return GetOrAdd<Histogram>(name, help, detail::MetricType::kHistogram,
                             detail::ValidateBuckets(std::move(buckets)));
}

template <class T>
Family<T>& Registry::GetOrAdd(const std::string& name, const std::string& help,
                              detail::MetricType type, std::vector<double> buckets) {
  detail::ValidateMetricName(name);
  absl::MutexLock lock(&mu_);
  // Callers often re-Add on every update, so the common path allocates nothing.
  auto existing = families_.find(name);
  if (existing != families_.end()) {
    if (existing->second->type() != type) {
      throw std::invalid_argument("metric '" + name + "' is already registered as a " +
                                  TypeName(existing->second->type()));
    }
    if (existing->second->buckets() != buckets) {
      throw std::invalid_argument("histogram '" + name +
                                  "' is already registered with different buckets");
    }
    return static_cast<Family<T>&>(*existing->second);
  }
  const std::vector<std::string> sample_names = SampleNames(name, type);
  for (const std::string& sample : sample_names) {
    auto owner = sample_names_.find(sample);
    if (owner != sample_names_.end()) {
      throw std::invalid_argument("metric '" + name + "' collides with sample name '" + sample +
                                  "' of metric '" + owner->second + "'");
    }
  }
  for (const std::string& sample : sample_names) sample_names_.emplace(sample, name);
  auto* family = new Family<T>(name, help, type, std::move(buckets));
  families_.emplace(name, std::unique_ptr<detail::FamilyBase>(family));
  return *family;
}

std::string Registry::Serialize() const {
  std::string out;
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& [name, family] : families_) family->AppendTo(&out);
  return out;
}

}  // namespace memaudit::metrics
