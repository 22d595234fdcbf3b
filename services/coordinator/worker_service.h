// WorkerService: translates worker RPCs to Scheduler calls, after checking
// who calls. Every call needs the worker role (an administrator passes). The
// ids it hands out are bound to the caller without any state to lose in a
// restart: a worker id carries an HMAC (the capability key,
// common/security/capability.h) over the scheduler's id and the identity that
// registered it; a lease id one over the scheduler's lease, its task and the
// identity that leased it. Lease, Heartbeat, Complete and Fail from another
// identity, or with an id this coordinator's key did not sign, answer
// PERMISSION_DENIED.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_WORKER_SERVICE_H_
#define MEMAUDIT_SERVICES_COORDINATOR_WORKER_SERVICE_H_

#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "common/security/capability.h"
#include "common/security/identity.h"
#include "memaudit/v1/scorer.grpc.pb.h"
#include "memaudit/v1/worker.grpc.pb.h"
#include "services/coordinator/revoked_workers.h"
#include "services/coordinator/scheduler.h"
#include "services/coordinator/worker_presence.h"

namespace memaudit::coordinator {

// A worker id as the worker sees it: the scheduler's id bound to `identity`.
std::string BindWorkerId(const CapabilityKey& key, const std::string& scheduler_id,
                         const Identity& identity);
// The scheduler's id in `worker_id`; PERMISSION_DENIED unless `identity`
// registered it (with this key).
absl::StatusOr<std::string> UnbindWorkerId(const CapabilityKey& key, const std::string& worker_id,
                                           const Identity& identity);

// What a lease id as the worker sees it stands for.
struct LeaseBinding {
  std::string lease_id;  // the scheduler's
  std::string audit_id;
  TaskRef task;
  uint32_t number = 0;  // LeaseNumber: which lease of the task this is
};
// "<lease>.<hmac>.<number>.<index>.<role>.<audit_id>": the scheduler's lease,
// its number and its task, bound to `identity`.
std::string BindLease(const CapabilityKey& key, const LeaseBinding& lease,
                      const Identity& identity);
// PERMISSION_DENIED unless `identity` was granted `lease_id` (with this key).
absl::StatusOr<LeaseBinding> UnbindLease(const CapabilityKey& key, const std::string& lease_id,
                                         const Identity& identity);

// Served with gRPC's callback API: a Lease long-poll waiting for work, and a
// Complete waiting for the scorer or for its decision to reach disk, hold no
// thread meanwhile (Scheduler's asynchronous forms answer them).
class WorkerServiceImpl final : public v1::WorkerService::CallbackService {
 public:
  // `key` signs ids and task capabilities (the scorer holds the same key);
  // Complete asks `scorer` whether it holds the task's observations.
  // `presence` (may be null) learns of every call that names a worker;
  // `revoked` (may be null) names the identities refused.
  WorkerServiceImpl(Authenticator* auth, Scheduler* scheduler, std::string scorer_address,
                    uint32_t heartbeat_ms, uint32_t lease_ttl_ms, CapabilityKey key,
                    std::shared_ptr<v1::ScorerService::StubInterface> scorer,
                    WorkerPresence* presence = nullptr, const RevokedWorkers* revoked = nullptr)
      : auth_(auth),
        scheduler_(scheduler),
        scorer_address_(std::move(scorer_address)),
        heartbeat_ms_(heartbeat_ms),
        lease_ttl_ms_(lease_ttl_ms),
        key_(std::move(key)),
        scorer_(std::move(scorer)),
        presence_(presence),
        revoked_(revoked) {}

  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* ctx,
                                     const v1::RegisterRequest* req,
                                     v1::RegisterResponse* resp) override;
  // Waits up to wait_ms (at most 30 s) for a task; a client that goes away
  // meanwhile gives its place up.
  grpc::ServerUnaryReactor* Lease(grpc::CallbackServerContext* ctx, const v1::LeaseRequest* req,
                                  v1::LeaseResponse* resp) override;
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* ctx,
                                      const v1::HeartbeatRequest* req,
                                      v1::HeartbeatResponse* resp) override;
  // Counts the task only once the scorer holds every observation of it:
  // missing ones make the task a retryable failure (re-queued, the attempt
  // spent) and the answer FAILED_PRECONDITION naming them; an audit the
  // scorer cannot score fails with the scorer's reason (FAILED_PRECONDITION);
  // a scorer out of reach answers UNAVAILABLE and the lease stays (the
  // worker sends Complete again).
  grpc::ServerUnaryReactor* Complete(grpc::CallbackServerContext* ctx,
                                     const v1::CompleteRequest* req,
                                     v1::CompleteResponse* resp) override;
  grpc::ServerUnaryReactor* Fail(grpc::CallbackServerContext* ctx, const v1::FailRequest* req,
                                 v1::FailResponse* resp) override;
  // Releases every lease the caller's worker holds ("worker … left").
  grpc::ServerUnaryReactor* Leave(grpc::CallbackServerContext* ctx, const v1::LeaveRequest* req,
                                  v1::LeaveResponse* resp) override;

 private:
  class LeaseCall;

  // The caller, when a worker (or an administrator) not revoked.
  absl::StatusOr<Identity> Worker(const grpc::CallbackServerContext& ctx);
  absl::Status DoRegister(const grpc::CallbackServerContext& ctx, const v1::RegisterRequest& req,
                          v1::RegisterResponse* resp);
  absl::Status DoHeartbeat(const grpc::CallbackServerContext& ctx, const v1::HeartbeatRequest& req,
                           v1::HeartbeatResponse* resp);
  // The caller (worker role) and the scheduler's lease of `lease_id`, which
  // must have been granted to that caller; marks the worker seen.
  absl::StatusOr<LeaseBinding> CallerLease(const grpc::CallbackServerContext& ctx,
                                           const std::string& worker_id,
                                           const std::string& lease_id);
  // Asks the scorer whether it holds every observation of the lease's task
  // and answers `reactor`: the task completed, or failed as the scorer's
  // answer says (see Complete).
  void CompleteAfterScorer(const LeaseBinding& lease, const std::string& environment,
                           grpc::ServerUnaryReactor* reactor);
  // Tells the scorer that `lease` ended without its Complete (its
  // observations are dropped, nothing more is stored under it), then runs
  // `then` whatever the scorer answered: a scorer out of reach costs the
  // guarantee nothing, as the task's next lease supersedes this one there.
  void EndLeaseAtScorer(const LeaseBinding& lease, absl::AnyInvocable<void() &&> then);
  void Seen(const std::string& worker_id) {
    if (presence_ != nullptr) presence_->Seen(worker_id);
  }

  Authenticator* auth_;
  Scheduler* scheduler_;
  std::string scorer_address_;
  uint32_t heartbeat_ms_;
  uint32_t lease_ttl_ms_;
  const CapabilityKey key_;
  std::shared_ptr<v1::ScorerService::StubInterface> scorer_;
  WorkerPresence* presence_;
  const RevokedWorkers* revoked_;
};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_WORKER_SERVICE_H_
