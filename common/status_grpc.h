// absl::Status codes equal gRPC codes one for one; these convert across the
// boundary without losing the message.
#ifndef MEMAUDIT_COMMON_STATUS_GRPC_H_
#define MEMAUDIT_COMMON_STATUS_GRPC_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace memaudit {

// The absl::Status payload that travels as a gRPC status's error details
// (the `grpc-status-details-bin` trailer: a serialized google.rpc.Status,
// memaudit.v1.ErrorStatus).
inline constexpr char kErrorDetailsPayload[] = "type.googleapis.com/google.rpc.Status";

grpc::Status ToGrpc(const absl::Status& status);
absl::Status FromGrpc(const grpc::Status& status);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_STATUS_GRPC_H_
