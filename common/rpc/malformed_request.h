// Answers a request gRPC could not parse with INVALID_ARGUMENT and a message
// saying so, as a server interceptor. Without it, grpc++ (1.51) answers such
// a request, garbage bytes or a proto3 string field holding invalid UTF-8,
// with a status that blames the server and says nothing:
//
//   synchronous handlers  INTERNAL, message "" (GenericDeserialize: the
//                         message's InitializationErrorString(), empty for
//                         proto3)
//   callback handlers     UNIMPLEMENTED, message "" (the handler is replaced
//                         by an UnimplementedUnaryReactor)
//
// How a parse failure is recognised: for unary and server-streaming methods,
// grpc++ reads and parses the request before the handler runs and hands the
// interceptors POST_RECV_MESSAGE with a null message when parsing failed;
// the handler then never runs, so the status sent after it is grpc's own.
// Only that status is rewritten, and only when it is INTERNAL or
// UNIMPLEMENTED: a handler's own INTERNAL never follows a null request, and
// RESOURCE_EXHAUSTED (no thread free; its handler also yields no request) is
// left as it is. A call that sends no request message at all is answered
// the same way as one that sends garbage. Client- and bidi-streaming
// requests are read by the handler, where a parse failure looks like the end
// of the stream: not covered. malformed_request_test.cc pins all of this
// against the installed gRPC.
//
//   request: not a valid /memaudit.v1.WorkerService/Lease message (malformed
//   protobuf, or invalid UTF-8 in a string field)
#ifndef MEMAUDIT_COMMON_RPC_MALFORMED_REQUEST_H_
#define MEMAUDIT_COMMON_RPC_MALFORMED_REQUEST_H_

#include <grpcpp/support/server_interceptor.h>

#include <memory>

namespace memaudit {

// Install with ServerBuilder::experimental().SetInterceptorCreators, ahead of
// GrpcServerMetrics: statuses pass the interceptors in the order installed,
// so the metrics then count the rewritten code.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MalformedRequestInterceptor();

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_RPC_MALFORMED_REQUEST_H_
