#include "common/rpc/status_grpc.h"

#include "absl/strings/cord.h"

namespace memaudit {

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const auto code = static_cast<grpc::StatusCode>(status.code());
  if (auto details = status.GetPayload(kErrorDetailsPayload)) {
    return grpc::Status(code, std::string(status.message()), std::string(*details));
  }
  return grpc::Status(code, std::string(status.message()));
}

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  absl::Status out(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  if (!status.error_details().empty()) {
    out.SetPayload(kErrorDetailsPayload, absl::Cord(status.error_details()));
  }
  return out;
}

}  // namespace memaudit
