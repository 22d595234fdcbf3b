// The first check of every call, made on its metadata before gRPC reads its
// message: who calls (a bearer token or a client certificate, identity.h)
// and whether that role may call the method. An anonymous caller, or a team
// calling a worker's method, is refused before a byte of its payload is
// buffered or parsed, so a large message costs the server nothing. The
// services still check the role again where they use the caller's identity.
#ifndef MEMAUDIT_COMMON_RPC_CALL_GATE_H_
#define MEMAUDIT_COMMON_RPC_CALL_GATE_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/auth_metadata_processor.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/metrics/metrics.h"
#include "common/security/identity.h"

namespace memaudit {

// Full method name ("/memaudit.v1.AuditService/Submit") -> the roles that
// may call it (an administrator may call every method).
using CallPolicy = absl::flat_hash_map<std::string, std::vector<Role>>;

// Every method of the service named `service` ("memaudit.v1.AuditService",
// linked into this binary) for `roles`, added to `policy`.
void AllowService(const std::string& service, std::initializer_list<Role> roles,
                  CallPolicy* policy);
// One method of `service` for `roles` only (replacing what AllowService set).
void AllowMethod(const std::string& service, const std::string& method,
                 std::initializer_list<Role> roles, CallPolicy* policy);
// The health service for every role `policy` admits anywhere.
void AllowHealth(CallPolicy* policy);

class CallGate final : public grpc::AuthMetadataProcessor {
 public:
  // Refusals are counted in `registry` (may be null) as
  // memaudit_grpc_server_refused_total{code}.
  CallGate(Authenticator* auth, CallPolicy policy, prometheus::Registry* registry = nullptr);

  // Cheap (a hash and a lookup): runs on gRPC's thread, no pool hop.
  bool IsBlocking() const override { return false; }

  // UNAUTHENTICATED without credentials, PERMISSION_DENIED for a role the
  // method does not admit or a method the server does not serve.
  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

 private:
  grpc::Status Judge(const InputMetadata& auth_metadata, grpc::AuthContext* context);

  Authenticator* const auth_;
  const CallPolicy policy_;
  prometheus::Family<prometheus::Counter>* refused_ = nullptr;
};

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_RPC_CALL_GATE_H_
