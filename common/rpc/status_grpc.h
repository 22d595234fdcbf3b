// absl::Status codes equal gRPC codes one for one; these convert across the
// boundary without losing the message or the details (kErrorDetailsPayload).
#ifndef MEMAUDIT_COMMON_RPC_STATUS_GRPC_H_
#define MEMAUDIT_COMMON_RPC_STATUS_GRPC_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "common/base/error_details.h"

namespace memaudit {

grpc::Status ToGrpc(const absl::Status& status);
absl::Status FromGrpc(const grpc::Status& status);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_RPC_STATUS_GRPC_H_
