#include "common/rpc/call_gate.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/rpc/grpc_server_metrics.h"
#include "common/rpc/status_grpc.h"
#include "google/protobuf/descriptor.h"

namespace memaudit {
namespace {

constexpr char kHealthService[] = "/grpc.health.v1.Health/";

// The service's descriptor; a name no linked proto defines is a bug here.
const google::protobuf::ServiceDescriptor& ServiceNamed(const std::string& service) {
  const google::protobuf::ServiceDescriptor* found =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service);
  if (found == nullptr) {
    spdlog::critical("call policy: no service {} is linked", service);
    std::abort();
  }
  return *found;
}

}  // namespace

void AllowService(const std::string& service, std::initializer_list<Role> roles,
                  CallPolicy* policy) {
  const google::protobuf::ServiceDescriptor& s = ServiceNamed(service);
  for (int i = 0; i < s.method_count(); ++i) {
    (*policy)[absl::StrCat("/", service, "/", s.method(i)->name())] = std::vector<Role>(roles);
  }
}

void AllowMethod(const std::string& service, const std::string& method,
                 std::initializer_list<Role> roles, CallPolicy* policy) {
  if (ServiceNamed(service).FindMethodByName(method) == nullptr) {
    spdlog::critical("call policy: service {} has no method {}", service, method);
    std::abort();
  }
  (*policy)[absl::StrCat("/", service, "/", method)] = std::vector<Role>(roles);
}

void AllowHealth(CallPolicy* policy) {
  std::vector<Role> any;
  for (const auto& [method, roles] : *policy) {
    for (Role r : roles) {
      if (std::find(any.begin(), any.end(), r) == any.end()) any.push_back(r);
    }
  }
  for (const char* method : {"Check", "Watch"})
    (*policy)[absl::StrCat(kHealthService, method)] = any;
}

CallGate::CallGate(Authenticator* auth, CallPolicy policy, prometheus::Registry* registry)
    : auth_(auth), policy_(std::move(policy)) {
  if (registry != nullptr) {
    refused_ = &metrics::AddCounter(*registry, "memaudit_grpc_server_refused_total",
                                    "Calls refused before their message was read: no or unknown "
                                    "credentials, or a role the method does not admit.");
  }
}

grpc::Status CallGate::Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                               OutputMetadata*, OutputMetadata*) {
  grpc::Status verdict = Judge(auth_metadata, context);
  if (!verdict.ok() && refused_ != nullptr) {
    refused_->Add({{"code", GrpcCodeName(verdict.error_code())}}).Increment();
  }
  return verdict;
}

grpc::Status CallGate::Judge(const InputMetadata& auth_metadata, grpc::AuthContext* context) {
  absl::StatusOr<Identity> caller = auth_->IdentifyFrom(auth_metadata, context);
  if (!caller.ok()) return ToGrpc(caller.status());
  auto path = auth_metadata.find(":path");
  const std::string method =
      path == auth_metadata.end() ? "" : std::string(path->second.data(), path->second.size());
  const auto allowed = policy_.find(method);
  if (allowed == policy_.end()) {
    // Methods the server does not serve would get UNIMPLEMENTED after the
    // message was read; a caller gets nothing from naming one.
    if (caller->role == Role::kAdmin) return grpc::Status::OK;
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat("method \"", method.substr(0, 128), "\" is not served here"));
  }
  return ToGrpc(Authenticator::Admit(*caller, allowed->second));
}

}  // namespace memaudit
