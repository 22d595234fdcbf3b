// Counts and times every RPC a gRPC server handles, by method and status
// code, as a server interceptor, so no service adapter has to remember to.
//
//   memaudit_grpc_server_handled_total{method,code}       counter
//   memaudit_grpc_server_handling_seconds{method,code}    histogram
//
// `method` is the full name ("/memaudit.v1.WorkerService/Lease"); `code` is
// the canonical name ("OK", "NOT_FOUND", ...). Both sets are bounded: a
// method that no compiled-in service defines is reported as "unknown", so a
// client cannot grow the label set by calling made-up names.
#ifndef MEMAUDIT_COMMON_RPC_GRPC_SERVER_METRICS_H_
#define MEMAUDIT_COMMON_RPC_GRPC_SERVER_METRICS_H_

#include <grpcpp/support/server_interceptor.h>

#include <memory>
#include <string>

#include "common/metrics/metrics.h"

namespace memaudit {

// Install with ServerBuilder::experimental().SetInterceptorCreators.
// `registry` must outlive the server.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> GrpcServerMetrics(
    prometheus::Registry* registry);

// The label value for a full method name (see above); exposed for tests.
std::string GrpcMethodLabel(const std::string& full_method);

// "OK", "CANCELLED", ... for a status code's number; "UNKNOWN" for a number
// that names no code (an int, since such a number is no grpc::StatusCode).
const char* GrpcCodeName(int code);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_RPC_GRPC_SERVER_METRICS_H_
