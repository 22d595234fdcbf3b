#include "services/coordinator/worker_service.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_grpc.h"
#include "common/status_macros.h"
#include "common/task_fit.h"

namespace memaudit::coordinator {
namespace {
// A long-poll longer than this ties up a server thread for little gain.
constexpr uint32_t kMaxLeaseWaitMs = 30000;
// How long Complete waits for the scorer's answer.
constexpr int kScorerDeadlineMs = 5000;
// Longer ids are no id this coordinator made.
constexpr size_t kMaxIdBytes = 1024;

constexpr char kWorkerIdPurpose[] = "memaudit worker id v1";
constexpr char kLeasePurpose[] = "memaudit lease v1";

absl::Status NotGranted(const Identity& identity) {
  return absl::PermissionDeniedError(
      absl::StrCat("lease_id: not a lease this coordinator granted to ", identity.ToString(),
                   " (a lease is good only for the identity that leased it)"));
}

}  // namespace

std::string BindWorkerId(const CapabilityKey& key, const std::string& scheduler_id,
                         const Identity& identity) {
  return absl::StrCat(scheduler_id, ".",
                      key.Sign(kWorkerIdPurpose, {scheduler_id, identity.ToString()}));
}

absl::StatusOr<std::string> UnbindWorkerId(const CapabilityKey& key, const std::string& worker_id,
                                           const Identity& identity) {
  const size_t dot = worker_id.find('.');
  if (worker_id.size() <= kMaxIdBytes && dot != std::string::npos) {
    std::string scheduler_id = worker_id.substr(0, dot);
    if (key.Verify(absl::string_view(worker_id).substr(dot + 1), kWorkerIdPurpose,
                   {scheduler_id, identity.ToString()})) {
      return scheduler_id;
    }
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "worker_id: not registered by ", identity.ToString(), " (Register first, as yourself)"));
}

std::string BindLease(const CapabilityKey& key, const LeaseBinding& lease,
                      const Identity& identity) {
  const std::string index = absl::StrCat(lease.task.index);
  const std::string mac = key.Sign(
      kLeasePurpose, {lease.lease_id, lease.audit_id, lease.task.role, index, identity.ToString()});
  return absl::StrJoin({lease.lease_id, mac, index, lease.task.role, lease.audit_id}, ".");
}

absl::StatusOr<LeaseBinding> UnbindLease(const CapabilityKey& key, const std::string& lease_id,
                                         const Identity& identity) {
  if (lease_id.size() > kMaxIdBytes) return NotGranted(identity);
  // The audit id comes last and may hold anything; the other parts no '.'.
  const std::vector<std::string> parts = absl::StrSplit(lease_id, absl::MaxSplits('.', 4));
  LeaseBinding lease;
  if (parts.size() != 5 || !absl::SimpleAtoi(parts[2], &lease.task.index)) {
    return NotGranted(identity);
  }
  lease.lease_id = parts[0];
  lease.task.role = parts[3];
  lease.audit_id = parts[4];
  if (!key.Verify(
          parts[1], kLeasePurpose,
          {lease.lease_id, lease.audit_id, lease.task.role, parts[2], identity.ToString()})) {
    return NotGranted(identity);
  }
  return lease;
}

grpc::Status WorkerServiceImpl::Register(grpc::ServerContext* ctx, const v1::RegisterRequest* req,
                                         v1::RegisterResponse* resp) {
  auto caller = auth_->Require(*ctx, {Role::kWorker});
  if (!caller.ok()) return ToGrpc(caller.status());
  if (std::string problem = CapabilityProblem(req->capabilities(), req->capabilities());
      !problem.empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, problem);
  }
  const std::string id = scheduler_->RegisterWorker(req->capabilities());
  Seen(id);
  resp->set_worker_id(BindWorkerId(key_, id, *caller));
  resp->set_scorer_address(scorer_address_);
  resp->set_heartbeat_interval_ms(heartbeat_ms_);
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::Lease(grpc::ServerContext* ctx, const v1::LeaseRequest* req,
                                      v1::LeaseResponse* resp) {
  auto caller = auth_->Require(*ctx, {Role::kWorker});
  if (!caller.ok()) return ToGrpc(caller.status());
  if (req->worker_id().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "worker_id: required (Register first)");
  }
  auto id = UnbindWorkerId(key_, req->worker_id(), *caller);
  if (!id.ok()) return ToGrpc(id.status());
  // Seen before and after the long-poll, so an idle worker never looks gone.
  Seen(*id);
  std::optional<WorkerOffer> offer;
  if (req->has_capabilities()) {
    const v1::WorkerCapabilities free = req->has_free() ? req->free() : req->capabilities();
    if (std::string problem = CapabilityProblem(req->capabilities(), free); !problem.empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, problem);
    }
    offer = WorkerOffer{req->capabilities(), free};
  }
  auto grant = scheduler_->Lease(*id, std::min(req->wait_ms(), kMaxLeaseWaitMs), offer);
  Seen(*id);
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
  const TaskRef ref{t.role, t.index};
  resp->set_lease_id(BindLease(key_, {t.lease_id, t.audit_id, ref}, *caller));
  resp->set_lease_ttl_ms(lease_ttl_ms_);
  resp->set_capability(TaskCapability(key_, t.audit_id, ref));
  return grpc::Status::OK;
}

absl::StatusOr<LeaseBinding> WorkerServiceImpl::CallerLease(const grpc::ServerContext& ctx,
                                                            const std::string& worker_id,
                                                            const std::string& lease_id) {
  MEMAUDIT_ASSIGN_OR_RETURN(const Identity caller, auth_->Require(ctx, {Role::kWorker}));
  // The worker id only says who is alive (presence); when sent, it must be
  // the caller's too.
  if (!worker_id.empty()) {
    MEMAUDIT_ASSIGN_OR_RETURN(const std::string id, UnbindWorkerId(key_, worker_id, caller));
    Seen(id);
  }
  return UnbindLease(key_, lease_id, caller);
}

grpc::Status WorkerServiceImpl::Heartbeat(grpc::ServerContext* ctx, const v1::HeartbeatRequest* req,
                                          v1::HeartbeatResponse* resp) {
  auto lease = CallerLease(*ctx, req->worker_id(), req->lease_id());
  if (!lease.ok()) return ToGrpc(lease.status());
  auto verdict = scheduler_->Heartbeat(lease->lease_id, req->steps_done());
  if (!verdict.ok()) return ToGrpc(verdict.status());
  resp->set_stop(verdict->stop);
  resp->set_reason(verdict->reason);
  return grpc::Status::OK;
}

absl::Status WorkerServiceImpl::ConfirmWithScorer(const LeaseBinding& lease) {
  v1::CheckTaskRequest req;
  req.set_audit_id(lease.audit_id);
  req.set_role(lease.task.role);
  req.set_index(lease.task.index);
  v1::CheckTaskResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(kScorerDeadlineMs));
  const grpc::Status status = scorer_->CheckTask(&ctx, req, &resp);
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
    // The scorer never heard of the audit: it holds nothing of the task.
    resp.set_missing_count(1);
    resp.add_missing(absl::StrCat("the scorer does not know audit ", lease.audit_id));
  } else if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
    // The scorer's plan has no such task: coordinator and scorer disagree
    // about the audit, which no retry mends.
    const std::string reason =
        absl::StrCat("the scorer refuses the task: ", status.error_message());
    MEMAUDIT_RETURN_IF_ERROR(scheduler_->Fail(lease.lease_id, reason, /*retryable=*/false));
    return absl::FailedPreconditionError(reason);
  } else if (!status.ok()) {
    return absl::UnavailableError(
        absl::StrCat("the scorer could not confirm the task's observations (",
                     status.error_message(), "); send Complete again"));
  }
  if (!resp.audit_error().empty()) {
    const std::string reason =
        absl::StrCat("the scorer cannot score the audit: ", resp.audit_error());
    MEMAUDIT_RETURN_IF_ERROR(scheduler_->Fail(lease.lease_id, reason, /*retryable=*/false));
    return absl::FailedPreconditionError(reason);
  }
  if (resp.missing_count() > 0) {
    const std::string reason = absl::StrCat(
        "completed without its observations at the scorer: ", resp.missing_count(), " missing (",
        absl::StrJoin(resp.missing(), "; "),
        resp.missing_count() > static_cast<uint32_t>(resp.missing_size()) ? "; ..." : "", ")");
    // Retryable: the task runs again and sends them; the attempt is spent,
    // so a worker that never sends them cannot keep the audit going forever.
    MEMAUDIT_RETURN_IF_ERROR(scheduler_->Fail(lease.lease_id, reason, /*retryable=*/true));
    return absl::FailedPreconditionError(reason);
  }
  return absl::OkStatus();
}

grpc::Status WorkerServiceImpl::Complete(grpc::ServerContext* ctx, const v1::CompleteRequest* req,
                                         v1::CompleteResponse*) {
  auto lease = CallerLease(*ctx, req->worker_id(), req->lease_id());
  if (!lease.ok()) return ToGrpc(lease.status());
  if (absl::Status s = ConfirmWithScorer(*lease); !s.ok()) return ToGrpc(s);
  return ToGrpc(scheduler_->Complete(lease->lease_id));
}

grpc::Status WorkerServiceImpl::Fail(grpc::ServerContext* ctx, const v1::FailRequest* req,
                                     v1::FailResponse*) {
  auto lease = CallerLease(*ctx, req->worker_id(), req->lease_id());
  if (!lease.ok()) return ToGrpc(lease.status());
  const std::string& id = lease->lease_id;
  switch (req->kind()) {
    case v1::INTERRUPTED:
      return ToGrpc(scheduler_->Release(id, req->error()));
    case v1::TASK_RETRYABLE:
      return ToGrpc(scheduler_->Fail(id, req->error(), /*retryable=*/true));
    case v1::TASK_FINAL:
      return ToGrpc(scheduler_->Fail(id, req->error(), /*retryable=*/false));
    default:  // FAILURE_KIND_UNSPECIFIED (an older worker) or a kind newer than this coordinator
      return ToGrpc(scheduler_->Fail(id, req->error(), req->retryable()));
  }
}

}  // namespace memaudit::coordinator
