#include "services/coordinator/worker_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/base/status_macros.h"
#include "common/messages/task_fit.h"
#include "common/rpc/status_grpc.h"
#include "common/training/numerics.h"

namespace memaudit::coordinator {
namespace {
// A long-poll longer than this ties up a server thread for little gain.
constexpr uint32_t kMaxLeaseWaitMs = 30000;
// How long Complete waits for the scorer's answer.
constexpr int kScorerDeadlineMs = 5000;
// Longer ids are no id this coordinator made.
constexpr size_t kMaxIdBytes = 1024;
// HeartbeatRequest.more: a worker runs at most one task per thread.
constexpr size_t kMaxLeasesPerHeartbeat = kMaxWorkerThreads;

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
  const std::string number = absl::StrCat(lease.number);
  const std::string mac = key.Sign(kLeasePurpose, {lease.lease_id, lease.audit_id, lease.task.role,
                                                   index, number, identity.ToString()});
  return absl::StrJoin({lease.lease_id, mac, number, index, lease.task.role, lease.audit_id}, ".");
}

absl::StatusOr<LeaseBinding> UnbindLease(const CapabilityKey& key, const std::string& lease_id,
                                         const Identity& identity) {
  if (lease_id.size() > kMaxIdBytes) return NotGranted(identity);
  // The audit id comes last and may hold anything; the other parts no '.'.
  const std::vector<std::string> parts = absl::StrSplit(lease_id, absl::MaxSplits('.', 5));
  LeaseBinding lease;
  if (parts.size() != 6 || !absl::SimpleAtoi(parts[2], &lease.number) ||
      !absl::SimpleAtoi(parts[3], &lease.task.index)) {
    return NotGranted(identity);
  }
  lease.lease_id = parts[0];
  lease.task.role = parts[4];
  lease.audit_id = parts[5];
  if (!key.Verify(parts[1], kLeasePurpose,
                  {lease.lease_id, lease.audit_id, lease.task.role, parts[3], parts[2],
                   identity.ToString()})) {
    return NotGranted(identity);
  }
  return lease;
}

namespace {

// What the scorer's answer to CheckTask means for a task whose worker says
// it is complete.
struct ScorerVerdict {
  absl::Status answer;     // OK: complete the task; else what Complete answers
  bool fail_task = false;  // the task fails (with `answer`'s message) ...
  bool retryable = false;  // ... and is re-queued if attempts remain
};

ScorerVerdict JudgeScorerAnswer(const LeaseBinding& lease, const grpc::Status& status,
                                v1::CheckTaskResponse resp) {
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
    // The scorer never heard of the audit: it holds nothing of the task.
    resp.set_missing_count(1);
    resp.add_missing(absl::StrCat("the scorer does not know audit ", lease.audit_id));
  } else if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
    // The scorer's plan has no such task: coordinator and scorer disagree
    // about the audit, which no retry mends.
    return {absl::FailedPreconditionError(
                absl::StrCat("the scorer refuses the task: ", status.error_message())),
            true, false};
  } else if (!status.ok()) {
    return {absl::UnavailableError(
        absl::StrCat("the scorer could not confirm the task's observations (",
                     status.error_message(), "); send Complete again"))};
  }
  if (!resp.audit_error().empty()) {
    return {absl::FailedPreconditionError(
                absl::StrCat("the scorer cannot score the audit: ", resp.audit_error())),
            true, false};
  }
  if (resp.missing_count() > 0) {
    // Retryable: the task runs again and sends them; the attempt is spent,
    // so a worker that never sends them cannot keep the audit going forever.
    return {
        absl::FailedPreconditionError(absl::StrCat(
            "completed without its observations at the scorer: ", resp.missing_count(),
            " missing (", absl::StrJoin(resp.missing(), "; "),
            resp.missing_count() > static_cast<uint32_t>(resp.missing_size()) ? "; ..." : "", ")")),
        true, true};
  }
  return {};
}

// Finishes `reactor` with `status` (a Scheduler::Done).
Scheduler::Done FinishWith(grpc::ServerUnaryReactor* reactor) {
  return [reactor](const absl::Status& status) { reactor->Finish(ToGrpc(status)); };
}

}  // namespace

// A Lease call: answered by the scheduler when a task is granted (durably),
// when the wait ends, or when the client goes away (OnCancel).
class WorkerServiceImpl::LeaseCall final : public grpc::ServerUnaryReactor {
 public:
  LeaseCall(WorkerServiceImpl* service, const grpc::CallbackServerContext* ctx, Identity caller,
            std::string worker_id, v1::LeaseResponse* resp)
      : service_(service),
        ctx_(ctx),
        caller_(std::move(caller)),
        worker_id_(std::move(worker_id)),
        resp_(resp) {}

  // Asks the scheduler; `this` may be finished (not deleted: gRPC deletes
  // only after the handler returns) by the time this returns.
  void Start(uint32_t wait_ms, const std::optional<WorkerOffer>& offer) {
    wait_ = service_->scheduler_->Lease(
        worker_id_, static_cast<int>(wait_ms), offer,
        [this](absl::StatusOr<std::optional<LeaseGrant>> grant) { Answer(std::move(grant)); });
  }

  void OnCancel() override { service_->scheduler_->CancelLeaseWait(wait_); }
  void OnDone() override {
    // A task granted as the worker cancelled the call (it is shutting down,
    // or gone) never reached it: hand it back now rather than a TTL later.
    if (!granted_lease_.empty() && ctx_->IsCancelled()) {
      service_->scheduler_->Release(
          granted_lease_,
          absl::StrCat(
              "worker ", worker_id_,
              " cancelled its Lease call before the grant arrived (shutting down or gone)"),
          [](const absl::Status&) {});
    }
    delete this;
  }

 private:
  void Answer(absl::StatusOr<std::optional<LeaseGrant>> grant) {
    // Seen at both ends of the long-poll, so an idle worker never looks gone.
    service_->Seen(worker_id_);
    if (!grant.ok()) return Finish(ToGrpc(grant.status()));
    if (grant->has_value() && service_->revoked_ != nullptr) {
      // Revoked while this call waited: the task goes straight back.
      if (absl::Status revoked = service_->revoked_->Check(caller_); !revoked.ok()) {
        service_->scheduler_->Release((*grant)->task.lease_id, std::string(revoked.message()),
                                      [](const absl::Status&) {});
        return Finish(ToGrpc(revoked));
      }
    }
    if (grant->has_value()) {
      const TaskRecord& t = (*grant)->task;
      v1::Task* task = resp_->mutable_task();
      task->set_task_id(t.task_id);
      task->set_audit_id(t.audit_id);
      task->set_role(t.role);
      task->set_index(t.index);
      task->set_attempt(t.attempts);
      task->set_steps_total(t.steps_total);
      *task->mutable_spec() = std::move((*grant)->spec);
      const TaskRef ref{t.role, t.index};
      const uint32_t number = LeaseNumber(t);
      resp_->set_lease_id(
          BindLease(service_->key_, {t.lease_id, t.audit_id, ref, number}, caller_));
      resp_->set_lease_ttl_ms(service_->lease_ttl_ms_);
      resp_->set_capability(
          TaskCapability(service_->key_, t.audit_id, ref, {number, caller_.ToString()}));
      granted_lease_ = t.lease_id;
    }
    Finish(grpc::Status::OK);
  }

  WorkerServiceImpl* service_;
  const grpc::CallbackServerContext* ctx_;
  const Identity caller_;
  const std::string worker_id_;  // the scheduler's
  v1::LeaseResponse* resp_;
  std::string granted_lease_;  // the scheduler's lease id, once a task is granted
  uint64_t wait_ = 0;          // set before the handler returns, so before OnCancel
};

absl::StatusOr<Identity> WorkerServiceImpl::Worker(const grpc::CallbackServerContext& ctx) {
  MEMAUDIT_ASSIGN_OR_RETURN(Identity caller, auth_->Require(ctx, {Role::kWorker}));
  if (revoked_ != nullptr) MEMAUDIT_RETURN_IF_ERROR(revoked_->Check(caller));
  return caller;
}

absl::Status WorkerServiceImpl::DoRegister(const grpc::CallbackServerContext& ctx,
                                           const v1::RegisterRequest& req,
                                           v1::RegisterResponse* resp) {
  MEMAUDIT_ASSIGN_OR_RETURN(const Identity caller, Worker(ctx));
  if (std::string problem = CapabilityProblem(req.capabilities(), req.capabilities());
      !problem.empty()) {
    return absl::InvalidArgumentError(problem);
  }
  const std::string id = scheduler_->RegisterWorker(req.capabilities());
  Seen(id);
  resp->set_worker_id(BindWorkerId(key_, id, caller));
  resp->set_scorer_address(scorer_address_);
  resp->set_heartbeat_interval_ms(heartbeat_ms_);
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* WorkerServiceImpl::Register(grpc::CallbackServerContext* ctx,
                                                      const v1::RegisterRequest* req,
                                                      v1::RegisterResponse* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpc(DoRegister(*ctx, *req, resp)));
  return reactor;
}

grpc::ServerUnaryReactor* WorkerServiceImpl::Lease(grpc::CallbackServerContext* ctx,
                                                   const v1::LeaseRequest* req,
                                                   v1::LeaseResponse* resp) {
  auto refuse = [ctx](const absl::Status& status) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(ToGrpc(status));
    return reactor;
  };
  auto caller = Worker(*ctx);
  if (!caller.ok()) return refuse(caller.status());
  if (req->worker_id().empty()) {
    return refuse(absl::InvalidArgumentError("worker_id: required (Register first)"));
  }
  auto id = UnbindWorkerId(key_, req->worker_id(), *caller);
  if (!id.ok()) return refuse(id.status());
  Seen(*id);
  std::optional<WorkerOffer> offer;
  if (req->has_capabilities()) {
    const v1::WorkerCapabilities free = req->has_free() ? req->free() : req->capabilities();
    if (std::string problem = CapabilityProblem(req->capabilities(), free); !problem.empty()) {
      return refuse(absl::InvalidArgumentError(problem));
    }
    offer = WorkerOffer{req->capabilities(), free};
  }
  auto* call = new LeaseCall(this, ctx, *std::move(caller), *id, resp);
  call->Start(std::min(req->wait_ms(), kMaxLeaseWaitMs), offer);
  return call;
}

absl::StatusOr<LeaseBinding> WorkerServiceImpl::CallerLease(const grpc::CallbackServerContext& ctx,
                                                            const std::string& worker_id,
                                                            const std::string& lease_id) {
  MEMAUDIT_ASSIGN_OR_RETURN(const Identity caller, Worker(ctx));
  // The worker id only says who is alive (presence); when sent, it must be
  // the caller's too.
  if (!worker_id.empty()) {
    MEMAUDIT_ASSIGN_OR_RETURN(const std::string id, UnbindWorkerId(key_, worker_id, caller));
    Seen(id);
  }
  return UnbindLease(key_, lease_id, caller);
}

absl::Status WorkerServiceImpl::DoHeartbeat(const grpc::CallbackServerContext& ctx,
                                            const v1::HeartbeatRequest& req,
                                            v1::HeartbeatResponse* resp) {
  if (req.more_size() > static_cast<int>(kMaxLeasesPerHeartbeat)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "more: ", req.more_size(), " leases in one heartbeat; at most ", kMaxLeasesPerHeartbeat));
  }
  MEMAUDIT_ASSIGN_OR_RETURN(const LeaseBinding lease,
                            CallerLease(ctx, req.worker_id(), req.lease_id()));
  // Every lease must be the caller's, checked before any is renewed.
  std::vector<std::string> more;
  more.reserve(req.more_size());
  if (req.more_size() > 0) {
    MEMAUDIT_ASSIGN_OR_RETURN(const Identity caller, Worker(ctx));
    for (const v1::LeaseBeat& beat : req.more()) {
      MEMAUDIT_ASSIGN_OR_RETURN(const LeaseBinding other,
                                UnbindLease(key_, beat.lease_id(), caller));
      more.push_back(other.lease_id);
    }
  }
  MEMAUDIT_ASSIGN_OR_RETURN(const HeartbeatVerdict verdict,
                            scheduler_->Heartbeat(lease.lease_id, req.steps_done()));
  resp->set_stop(verdict.stop);
  resp->set_reason(verdict.reason);
  for (int i = 0; i < req.more_size(); ++i) {
    MEMAUDIT_ASSIGN_OR_RETURN(const HeartbeatVerdict other,
                              scheduler_->Heartbeat(more[i], req.more(i).steps_done()));
    v1::LeaseVerdict* out = resp->add_more();
    out->set_stop(other.stop);
    out->set_reason(other.reason);
  }
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* WorkerServiceImpl::Heartbeat(grpc::CallbackServerContext* ctx,
                                                       const v1::HeartbeatRequest* req,
                                                       v1::HeartbeatResponse* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpc(DoHeartbeat(*ctx, *req, resp)));
  return reactor;
}

void WorkerServiceImpl::CompleteAfterScorer(const LeaseBinding& lease,
                                            const std::string& environment,
                                            grpc::ServerUnaryReactor* reactor) {
  struct Check {
    grpc::ClientContext ctx;
    v1::CheckTaskRequest req;
    v1::CheckTaskResponse resp;
  };
  auto check = std::make_shared<Check>();
  check->req.set_audit_id(lease.audit_id);
  check->req.set_role(lease.task.role);
  check->req.set_index(lease.task.index);
  check->req.set_lease(lease.number);
  check->ctx.set_deadline(std::chrono::system_clock::now() +
                          std::chrono::milliseconds(kScorerDeadlineMs));
  scorer_->async()->CheckTask(
      &check->ctx, &check->req, &check->resp,
      [this, check, lease, environment, reactor](const grpc::Status& status) {
        ScorerVerdict verdict = JudgeScorerAnswer(lease, status, std::move(check->resp));
        if (verdict.answer.ok()) {
          return scheduler_->Complete(lease.lease_id, environment, FinishWith(reactor));
        }
        if (!verdict.fail_task) return reactor->Finish(ToGrpc(verdict.answer));
        scheduler_->Fail(lease.lease_id, std::string(verdict.answer.message()), verdict.retryable,
                         [reactor, answer = verdict.answer](const absl::Status& written) {
                           reactor->Finish(ToGrpc(written.ok() ? answer : written));
                         });
      });
}

grpc::ServerUnaryReactor* WorkerServiceImpl::Complete(grpc::CallbackServerContext* ctx,
                                                      const v1::CompleteRequest* req,
                                                      v1::CompleteResponse*) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  auto lease = CallerLease(*ctx, req->worker_id(), req->lease_id());
  if (!lease.ok()) {
    reactor->Finish(ToGrpc(lease.status()));
  } else if (std::string problem = NumericEnvironmentProblem(req->numeric_environment());
             !problem.empty()) {
    reactor->Finish(
        ToGrpc(absl::InvalidArgumentError(absl::StrCat("numeric_environment: ", problem))));
  } else {
    CompleteAfterScorer(*lease, req->numeric_environment(), reactor);
  }
  return reactor;
}

grpc::ServerUnaryReactor* WorkerServiceImpl::Fail(grpc::CallbackServerContext* ctx,
                                                  const v1::FailRequest* req, v1::FailResponse*) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  auto lease = CallerLease(*ctx, req->worker_id(), req->lease_id());
  if (!lease.ok()) {
    reactor->Finish(ToGrpc(lease.status()));
    return reactor;
  }
  // The scorer hears first, so nothing more is stored under the lease by
  // the time its holder learns it is given back.
  EndLeaseAtScorer(*lease, [this, reactor, id = lease->lease_id, kind = req->kind(),
                            error = req->error(), retryable = req->retryable()]() mutable {
    switch (kind) {
      case v1::INTERRUPTED:
        scheduler_->Release(id, error, FinishWith(reactor));
        break;
      case v1::TASK_RETRYABLE:
        scheduler_->Fail(id, error, /*retryable=*/true, FinishWith(reactor));
        break;
      case v1::TASK_FINAL:
        scheduler_->Fail(id, error, /*retryable=*/false, FinishWith(reactor));
        break;
      default:  // FAILURE_KIND_UNSPECIFIED (an older worker) or a kind newer than this
        scheduler_->Fail(id, error, retryable, FinishWith(reactor));
    }
  });
  return reactor;
}

void WorkerServiceImpl::EndLeaseAtScorer(const LeaseBinding& lease,
                                         absl::AnyInvocable<void() &&> then) {
  struct End {
    grpc::ClientContext ctx;
    v1::EndLeaseRequest req;
    v1::EndLeaseResponse resp;
    absl::AnyInvocable<void() &&> then;
  };
  auto end = std::make_shared<End>();
  end->req.set_audit_id(lease.audit_id);
  end->req.set_role(lease.task.role);
  end->req.set_index(lease.task.index);
  end->req.set_lease(lease.number);
  end->then = std::move(then);
  end->ctx.set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(kScorerDeadlineMs));
  scorer_->async()->EndLease(&end->ctx, &end->req, &end->resp, [end](const grpc::Status& status) {
    if (!status.ok()) {
      spdlog::warn("scorer did not take the end of lease {} of {} {}: {}", end->req.lease(),
                   end->req.audit_id(), end->req.role(), status.error_message());
    }
    std::move(end->then)();
  });
}

grpc::ServerUnaryReactor* WorkerServiceImpl::Leave(grpc::CallbackServerContext* ctx,
                                                   const v1::LeaveRequest* req,
                                                   v1::LeaveResponse* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  auto caller = Worker(*ctx);
  if (!caller.ok()) {
    reactor->Finish(ToGrpc(caller.status()));
    return reactor;
  }
  auto id = UnbindWorkerId(key_, req->worker_id(), *caller);
  if (!id.ok()) {
    reactor->Finish(ToGrpc(id.status()));
    return reactor;
  }
  auto released = std::make_shared<uint32_t>(0);
  scheduler_->ReleaseAll(*id, absl::StrCat("worker ", *id, " left (shutting down)"), released.get(),
                         [reactor, resp, released](const absl::Status& written) {
                           resp->set_released(*released);
                           reactor->Finish(ToGrpc(written));
                         });
  return reactor;
}

}  // namespace memaudit::coordinator
