// The absl::Status payload that carries a refusal's structured details
// (memaudit.v1.ErrorStatus, serialized in a google.rpc.Status): set by the
// spec layer, sent by common/rpc/status_grpc.h as the gRPC status's error
// details (the `grpc-status-details-bin` trailer) and read back from it.
#ifndef MEMAUDIT_COMMON_BASE_ERROR_DETAILS_H_
#define MEMAUDIT_COMMON_BASE_ERROR_DETAILS_H_

namespace memaudit {

inline constexpr char kErrorDetailsPayload[] = "type.googleapis.com/google.rpc.Status";

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_BASE_ERROR_DETAILS_H_
