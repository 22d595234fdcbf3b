#include "common/rpc/grpc_server_metrics.h"

#include <google/protobuf/descriptor.h>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace memaudit {
namespace {

// Long-polls (Lease, up to 30 s) and streams (Watch, an audit's lifetime)
// share the family with millisecond unary calls, hence the wide range.
const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const prometheus::Histogram::BucketBoundaries buckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
      0.5,    1,     2.5,    5,     10,   30,    60,   300, 1800};
  return buckets;
}

constexpr int kCodes = grpc::StatusCode::UNAUTHENTICATED + 1;

// One method's series, made on first use and kept: every RPC would otherwise
// build a label map and look its series up twice.
class MethodSeries {
 public:
  MethodSeries(prometheus::Family<prometheus::Counter>* handled,
               prometheus::Family<prometheus::Histogram>* seconds, std::string label)
      : handled_(handled), seconds_(seconds), label_(std::move(label)) {}

  void Record(grpc::StatusCode code, double seconds) {
    const int i = code >= 0 && code < kCodes ? code : grpc::StatusCode::UNKNOWN;
    Series* series = series_[i].load(std::memory_order_acquire);
    if (series == nullptr) series = Make(i);
    series->handled->Increment();
    series->seconds->Observe(seconds);
  }

 private:
  struct Series {
    prometheus::Counter* handled;
    prometheus::Histogram* seconds;
  };

  Series* Make(int code) {
    absl::MutexLock lock(&mu_);
    if (Series* made = series_[code].load(std::memory_order_relaxed)) return made;
    const prometheus::Labels labels = {{"method", label_}, {"code", GrpcCodeName(code)}};
    made_[code] = Series{&handled_->Add(labels), &seconds_->Add(labels, LatencyBuckets())};
    series_[code].store(&made_[code], std::memory_order_release);
    return &made_[code];
  }

  prometheus::Family<prometheus::Counter>* const handled_;
  prometheus::Family<prometheus::Histogram>* const seconds_;
  const std::string label_;
  absl::Mutex mu_;
  std::array<Series, kCodes> made_ ABSL_GUARDED_BY(mu_){};
  std::array<std::atomic<Series*>, kCodes> series_{};
};

class MetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit MetricsInterceptor(MethodSeries* series)
      : series_(series), start_(std::chrono::steady_clock::now()) {}

  ~MetricsInterceptor() override {
    // An RPC torn down without a status (the client went away first).
    if (!recorded_) Record(grpc::StatusCode::CANCELLED);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (!recorded_ &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      Record(methods->GetSendStatus().error_code());
    }
    methods->Proceed();
  }

 private:
  void Record(grpc::StatusCode code) {
    recorded_ = true;
    series_->Record(
        code, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }

  MethodSeries* const series_;
  const std::chrono::steady_clock::time_point start_;
  bool recorded_ = false;
};

class MetricsInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit MetricsInterceptorFactory(prometheus::Registry* registry)
      : handled_(&metrics::AddCounter(*registry, "memaudit_grpc_server_handled_total",
                                      "RPCs completed by the server, by method and status code.")),
        seconds_(&metrics::AddHistogram(
            *registry, "memaudit_grpc_server_handling_seconds",
            "Time from an RPC's arrival to its status, by method and status code.")),
        unknown_(handled_, seconds_, "unknown") {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new MetricsInterceptor(SeriesOf(info->method() ? info->method() : ""));
  }

 private:
  // Known methods get a cached entry each; names no service defines share
  // "unknown" and are not remembered, so a client cannot grow the cache.
  MethodSeries* SeriesOf(const std::string& method) {
    {
      absl::ReaderMutexLock lock(&mu_);
      if (auto it = by_method_.find(method); it != by_method_.end()) return it->second.get();
    }
    std::string label = GrpcMethodLabel(method);
    if (label == "unknown") return &unknown_;
    absl::MutexLock lock(&mu_);
    std::unique_ptr<MethodSeries>& series = by_method_[method];
    if (series == nullptr) {
      series = std::make_unique<MethodSeries>(handled_, seconds_, std::move(label));
    }
    return series.get();
  }

  prometheus::Family<prometheus::Counter>* const handled_;
  prometheus::Family<prometheus::Histogram>* const seconds_;
  MethodSeries unknown_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<MethodSeries>> by_method_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::string GrpcMethodLabel(const std::string& full_method) {
  // The health service is implemented inside grpc++ without a generated
  // descriptor, so it is named here.
  if (full_method == "/grpc.health.v1.Health/Check" ||
      full_method == "/grpc.health.v1.Health/Watch") {
    return full_method;
  }
  // "/pkg.Service/Method" -> "pkg.Service.Method", the descriptor's name.
  const size_t slash = full_method.rfind('/');
  if (full_method.size() < 4 || full_method[0] != '/' || slash == 0) return "unknown";
  std::string dotted = full_method.substr(1);
  dotted[slash - 1] = '.';
  if (google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(dotted) == nullptr) {
    return "unknown";
  }
  return full_method;
}

const char* GrpcCodeName(int code) {
  if (code < grpc::StatusCode::OK || code > grpc::StatusCode::UNAUTHENTICATED) return "UNKNOWN";
  switch (static_cast<grpc::StatusCode>(code)) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> GrpcServerMetrics(
    prometheus::Registry* registry) {
  return std::make_unique<MetricsInterceptorFactory>(registry);
}

}  // namespace memaudit
