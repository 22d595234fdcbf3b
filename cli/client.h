// The CLI's view of a coordinator: AuditService calls with deadlines and
// errors turned into absl::Status.
#ifndef MEMAUDIT_CLI_CLIENT_H_
#define MEMAUDIT_CLI_CLIENT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/security/tls.h"
#include "memaudit/v1/audit.grpc.pb.h"

namespace memaudit::cli {

// A fresh idempotency key for SubmitRequest.request_id: "r-" and 32 hex
// digits from OpenSSL's CSPRNG.
absl::StatusOr<std::string> NewRequestId();

class Client {
 public:
  // `channel` from MakeChannel (common/security/tls.h); `address` names it in errors.
  Client(std::string address, const std::shared_ptr<grpc::Channel>& channel);
  // A client of the coordinator at `address` presenting `credentials`.
  static absl::StatusOr<Client> Connect(const std::string& address,
                                        const ClientCredentials& credentials);

  // With a `request_id` (NewRequestId, or one a script chose), a Submit that
  // ends UNAVAILABLE or DEADLINE_EXCEEDED (the coordinator may have created
  // the audit before the answer was lost) is sent once more with the same
  // id: the coordinator answers the audit the first one created, if any.
  // Without one, it is sent once.
  absl::StatusOr<v1::SubmitResponse> Submit(const v1::AuditSpec& spec,
                                            const std::string& request_id = "");
  absl::StatusOr<v1::Audit> Get(const std::string& audit_id);
  absl::StatusOr<v1::ListResponse> List(uint32_t limit);
  absl::StatusOr<v1::ListResponse> List(const v1::ListRequest& req);
  absl::StatusOr<v1::Audit> Cancel(const std::string& audit_id);
  // Administrators only (docs/security.md, "Revoking a worker").
  absl::StatusOr<v1::RevokeWorkerResponse> RevokeWorker(const std::string& worker);
  absl::StatusOr<v1::AuditResults> Report(const std::string& audit_id);
  // The audit's per-example arrays (docs/export.md), put back together from
  // their pieces (common/messages/export_arrays.h checks each before it allocates).
  absl::StatusOr<std::vector<v1::ExportArray>> Export(const std::string& audit_id);
  // Streams events until the audit ends; `on_event` returning false stops early.
  absl::Status Watch(const std::string& audit_id,
                     const std::function<bool(const v1::AuditEvent&)>& on_event);

  const std::string& address() const { return address_; }

 private:
  std::string address_;
  std::unique_ptr<v1::AuditService::Stub> stub_;
};

}  // namespace memaudit::cli

#endif  // MEMAUDIT_CLI_CLIENT_H_
