#include "services/coordinator/worker_service.h"

#include <algorithm>

#include "common/status_grpc.h"

namespace memaudit::coordinator {
namespace {
// A long-poll longer than this ties up a server thread for little gain.
constexpr uint32_t kMaxLeaseWaitMs = 30000;
}  // namespace

grpc::Status WorkerServiceImpl::Register(grpc::ServerContext*, const v1::RegisterRequest* req,
                                         v1::RegisterResponse* resp) {
  resp->set_worker_id(scheduler_->RegisterWorker(req->capabilities()));
  Seen(resp->worker_id());
  resp->set_scorer_address(scorer_address_);
  resp->set_heartbeat_interval_ms(heartbeat_ms_);
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::Lease(grpc::ServerContext*, const v1::LeaseRequest* req,
                                      v1::LeaseResponse* resp) {
  if (req->worker_id().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "worker_id: required (Register first)");
  }
  // Seen before and after the long-poll, so an idle worker never looks gone.
  Seen(req->worker_id());
  auto grant = scheduler_->Lease(req->worker_id(), std::min(req->wait_ms(), kMaxLeaseWaitMs));
  Seen(req->worker_id());
  if (!grant.ok()) return ToGrpc(grant.status());
  if (!grant->has_value()) return grpc::Status::OK;
  const TaskRecord& t = (*grant)->task;
  v1::Task* task = resp->mutable_task();
  task->set_task_id(t.task_id);
  task->set_audit_id(t.audit_id);
  task->set_role(t.role);
  task->set_index(t.index);
  task->set_attempt(t.attempts);
  task->set_steps_total(t.steps_total);
  *task->mutable_spec() = (*grant)->spec;
  resp->set_lease_id(t.lease_id);
  resp->set_lease_ttl_ms(lease_ttl_ms_);
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::Heartbeat(grpc::ServerContext*, const v1::HeartbeatRequest* req,
                                          v1::HeartbeatResponse* resp) {
  Seen(req->worker_id());
  auto verdict = scheduler_->Heartbeat(req->lease_id(), req->steps_done());
  if (!verdict.ok()) return ToGrpc(verdict.status());
  resp->set_stop(verdict->stop);
  resp->set_reason(verdict->reason);
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::Complete(grpc::ServerContext*, const v1::CompleteRequest* req,
                                         v1::CompleteResponse*) {
  Seen(req->worker_id());
  return ToGrpc(scheduler_->Complete(req->lease_id()));
}

grpc::Status WorkerServiceImpl::Fail(grpc::ServerContext*, const v1::FailRequest* req,
                                     v1::FailResponse*) {
  Seen(req->worker_id());
  switch (req->kind()) {
    case v1::INTERRUPTED:
      return ToGrpc(scheduler_->Release(req->lease_id(), req->error()));
    case v1::TASK_RETRYABLE:
      return ToGrpc(scheduler_->Fail(req->lease_id(), req->error(), /*retryable=*/true));
    case v1::TASK_FINAL:
      return ToGrpc(scheduler_->Fail(req->lease_id(), req->error(), /*retryable=*/false));
    default:  // FAILURE_KIND_UNSPECIFIED (an older worker) or a kind newer than this coordinator
      return ToGrpc(scheduler_->Fail(req->lease_id(), req->error(), req->retryable()));
  }
}

}  // namespace memaudit::coordinator
