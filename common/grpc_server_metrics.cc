#include "common/grpc_server_metrics.h"

#include <google/protobuf/descriptor.h>

#include <chrono>

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

class MetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  MetricsInterceptor(prometheus::Family<prometheus::Counter>* handled,
                     prometheus::Family<prometheus::Histogram>* seconds, std::string method)
      : handled_(handled),
        seconds_(seconds),
        method_(std::move(method)),
        start_(std::chrono::steady_clock::now()) {}

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
    const prometheus::Labels labels = {{"method", method_}, {"code", GrpcCodeName(code)}};
    handled_->Add(labels).Increment();
    seconds_->Add(labels, LatencyBuckets())
        .Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }

  prometheus::Family<prometheus::Counter>* const handled_;
  prometheus::Family<prometheus::Histogram>* const seconds_;
  const std::string method_;
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
            "Time from an RPC's arrival to its status, by method and status code.")) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new MetricsInterceptor(handled_, seconds_,
                                  GrpcMethodLabel(info->method() ? info->method() : ""));
  }

 private:
  prometheus::Family<prometheus::Counter>* const handled_;
  prometheus::Family<prometheus::Histogram>* const seconds_;
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
