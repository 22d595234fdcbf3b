#include "common/rpc/malformed_request.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace memaudit {
namespace {

using grpc::experimental::InterceptionHookPoints;
using grpc::experimental::ServerRpcInfo;

class MalformedRequest final : public grpc::experimental::Interceptor {
 public:
  explicit MalformedRequest(ServerRpcInfo* info)
      : info_(info),
        // Only these have their request parsed by grpc++ before the handler.
        parsed_by_grpc_(info->type() == ServerRpcInfo::Type::UNARY ||
                        info->type() == ServerRpcInfo::Type::SERVER_STREAMING) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (parsed_by_grpc_ && !request_seen_ &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE)) {
      request_seen_ = true;
      malformed_ = methods->GetRecvMessage() == nullptr;
    }
    if (malformed_ &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::StatusCode code = methods->GetSendStatus().error_code();
      if (code == grpc::StatusCode::INTERNAL || code == grpc::StatusCode::UNIMPLEMENTED) {
        // A registered method's name (unknown ones are bidi streams, never
        // here), so the message stays bounded.
        methods->ModifySendStatus(grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            absl::StrCat("request: not a valid ", info_->method() ? info_->method() : "",
                         " message (malformed protobuf, or invalid UTF-8 in a string field)")));
      }
    }
    methods->Proceed();
  }

 private:
  ServerRpcInfo* const info_;
  const bool parsed_by_grpc_;
  bool request_seen_ = false;
  bool malformed_ = false;
};

class MalformedRequestFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(ServerRpcInfo* info) override {
    return new MalformedRequest(info);
  }
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MalformedRequestInterceptor() {
  return std::make_unique<MalformedRequestFactory>();
}

}  // namespace memaudit
