// WorkerService: translates worker RPCs to Scheduler calls.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_WORKER_SERVICE_H_
#define MEMAUDIT_SERVICES_COORDINATOR_WORKER_SERVICE_H_

#include <string>

#include "common/identity.h"
#include "memaudit/v1/worker.grpc.pb.h"
#include "services/coordinator/scheduler.h"
#include "services/coordinator/worker_presence.h"

namespace memaudit::coordinator {

class WorkerServiceImpl final : public v1::WorkerService::Service {
 public:
  // `presence` (may be null) learns of every call that names a worker.
  WorkerServiceImpl(Authenticator* auth, Scheduler* scheduler, std::string scorer_address,
                    uint32_t heartbeat_ms, uint32_t lease_ttl_ms,
                    WorkerPresence* presence = nullptr)
      : auth_(auth),
        scheduler_(scheduler),
        scorer_address_(std::move(scorer_address)),
        heartbeat_ms_(heartbeat_ms),
        lease_ttl_ms_(lease_ttl_ms),
        presence_(presence) {}

  grpc::Status Register(grpc::ServerContext* ctx, const v1::RegisterRequest* req,
                        v1::RegisterResponse* resp) override;
  grpc::Status Lease(grpc::ServerContext* ctx, const v1::LeaseRequest* req,
                     v1::LeaseResponse* resp) override;
  grpc::Status Heartbeat(grpc::ServerContext* ctx, const v1::HeartbeatRequest* req,
                         v1::HeartbeatResponse* resp) override;
  grpc::Status Complete(grpc::ServerContext* ctx, const v1::CompleteRequest* req,
                        v1::CompleteResponse* resp) override;
  grpc::Status Fail(grpc::ServerContext* ctx, const v1::FailRequest* req,
                    v1::FailResponse* resp) override;

 private:
  void Seen(const std::string& worker_id) {
    if (presence_ != nullptr) presence_->Seen(worker_id);
  }

  Authenticator* auth_;
  Scheduler* scheduler_;
  std::string scorer_address_;
  uint32_t heartbeat_ms_;
  uint32_t lease_ttl_ms_;
  WorkerPresence* presence_;
};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_WORKER_SERVICE_H_
