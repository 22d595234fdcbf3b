// AuditService: translates client RPCs to Scheduler calls. Spec checks and
// the scorer hand-off happen here; the logic lives in the Scheduler.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_AUDIT_SERVICE_H_
#define MEMAUDIT_SERVICES_COORDINATOR_AUDIT_SERVICE_H_

#include <memory>
#include <string>

#include "common/messages/data_roots.h"
#include "common/rpc/call_gate.h"
#include "common/security/capability.h"
#include "common/security/identity.h"
#include "memaudit/v1/audit.grpc.pb.h"
#include "memaudit/v1/scorer.grpc.pb.h"
#include "services/coordinator/revoked_workers.h"
#include "services/coordinator/scheduler.h"

namespace memaudit::coordinator {

// Who may call the coordinator's methods, checked before a message is read:
// teams the AuditService (RevokeWorker administrators only), workers the
// WorkerService, each of them the health service.
CallPolicy CoordinatorCallPolicy();

// SubmitRequest.request_id: at most this many bytes.
inline constexpr size_t kMaxRequestIdBytes = 128;
// OK for "" (no idempotency key) and for up to kMaxRequestIdBytes printable
// ASCII characters other than space; else INVALID_ARGUMENT naming request_id.
absl::Status CheckRequestId(const std::string& request_id);

// ValidateRequest.source_name: at most this many bytes (a path).
inline constexpr size_t kMaxSourceNameBytes = 4096;
// The spec a ValidateRequest carries: its message, or its YAML read as
// `memaudit submit` reads a spec file (ParseSpecYaml, named after
// source_name); INVALID_ARGUMENT naming the field for neither, a YAML over
// kMaxSpecBytes or a source_name over kMaxSourceNameBytes (checked before
// anything is parsed), else the reader's error.
absl::StatusOr<v1::AuditSpec> SpecToValidate(const v1::ValidateRequest& req);

// ListRequest's bounds: audits per page (0 asks for the default) and the
// name filter's length.
inline constexpr size_t kDefaultListLimit = 100;
inline constexpr size_t kMaxListLimit = 1000;
inline constexpr size_t kMaxNameFilterBytes = 256;
// The scheduler's query a ListRequest from `caller` asks for (page tokens
// sealed under `key` for that caller, page_token.h); INVALID_ARGUMENT naming
// the field for a limit, page token, state, kind, name filter or view out of
// bounds.
absl::StatusOr<Scheduler::AuditQuery> ListQuery(const v1::ListRequest& req,
                                                const CapabilityKey& key, absl::string_view caller);

// Every RPC first identifies its caller (UNAUTHENTICATED, PERMISSION_DENIED
// for a role other than team or admin) before any work. A team sees only the
// audits it submitted: another team's audit answers NOT_FOUND exactly as an
// id that does not exist. An administrator sees every audit; its own
// submissions are owned by its name.
//
// Watch runs on gRPC's callback API (common/rpc/watch_reactor.h): a stream waiting for
// the audit to change holds no server thread. The other methods are
// synchronous.
class AuditServiceImpl final
    : public v1::AuditService::WithCallbackMethod_Watch<v1::AuditService::Service> {
 public:
  // `auth` identifies each caller (common/security/identity.h). Submit refuses a spec
  // naming a file outside `data_roots` (data_roots.h). A Submit with a
  // request_id its owner sent before answers that request's audit; quotas
  // are the scheduler's (SchedulerOptions::quotas).
  // `key` seals List's page tokens; `revoked` (may be null: RevokeWorker
  // is then refused) records the worker identities RevokeWorker revokes.
  AuditServiceImpl(Authenticator* auth, Scheduler* scheduler,
                   std::shared_ptr<v1::ScorerService::StubInterface> scorer, DataRoots data_roots,
                   CapabilityKey key = CapabilityKey::Insecure(), RevokedWorkers* revoked = nullptr)
      : auth_(auth),
        scheduler_(scheduler),
        scorer_(std::move(scorer)),
        data_roots_(std::move(data_roots)),
        key_(std::move(key)),
        revoked_(revoked) {}

  grpc::Status Submit(grpc::ServerContext* ctx, const v1::SubmitRequest* req,
                      v1::SubmitResponse* resp) override;
  // Submit's checks of the spec (bounds, data roots, files read, values)
  // and its plan, with nothing stored and the scorer not asked.
  grpc::Status Validate(grpc::ServerContext* ctx, const v1::ValidateRequest* req,
                        v1::ValidateResponse* resp) override;
  grpc::Status Get(grpc::ServerContext* ctx, const v1::GetRequest* req, v1::Audit* resp) override;
  grpc::Status List(grpc::ServerContext* ctx, const v1::ListRequest* req,
                    v1::ListResponse* resp) override;
  // The audit's events after req.after_sequence, then each new one as it is
  // logged (and a "progress" snapshot when only its steps moved), to the end
  // of the audit.
  grpc::ServerWriteReactor<v1::AuditEvent>* Watch(grpc::CallbackServerContext* ctx,
                                                  const v1::WatchRequest* req) override;
  grpc::Status Cancel(grpc::ServerContext* ctx, const v1::CancelRequest* req,
                      v1::Audit* resp) override;
  grpc::Status GetReport(grpc::ServerContext* ctx, const v1::GetReportRequest* req,
                         v1::AuditResults* resp) override;
  // Two complete audits of one kind compared metric by metric (spec/diff.h):
  // each side an audit the caller may read, or archived results whose spec
  // is checked first. The field of a bad side is named.
  grpc::Status Diff(grpc::ServerContext* ctx, const v1::DiffRequest* req,
                    v1::DiffResponse* resp) override;
  // The scorer's export of the audit, piece by piece as it arrives.
  grpc::Status Export(grpc::ServerContext* ctx, const v1::ExportRequest* req,
                      grpc::ServerWriter<v1::ExportArray>* writer) override;
  // Administrators only: the scorer refuses the worker's observations and
  // purges its runs from reuse, then this coordinator refuses its calls.
  grpc::Status RevokeWorker(grpc::ServerContext* ctx, const v1::RevokeWorkerRequest* req,
                            v1::RevokeWorkerResponse* resp) override;

 private:
  // Asks the scorer to forget an audit it was told of but that is not to
  // run (a refused Submit's), or with `keep` to never reuse a cancelled
  // one's runs while its results stay readable.
  void DropAtScorer(const std::string& audit_id, bool keep = false);
  // The results of an audit `caller` may read, from the scorer, with the
  // numeric class the coordinator decided.
  grpc::Status ResultsOf(const Caller& caller, const std::string& audit_id, v1::AuditResults* resp);

  Authenticator* auth_;
  Scheduler* scheduler_;
  std::shared_ptr<v1::ScorerService::StubInterface> scorer_;
  const DataRoots data_roots_;
  const CapabilityKey key_;
  RevokedWorkers* const revoked_;
};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_AUDIT_SERVICE_H_
