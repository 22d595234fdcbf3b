// ScorerService: translates RPCs to Scorer calls, after checking who calls
// (common/security/identity.h) and, for Ingest, each observation's capability
// (common/security/capability.h).
#ifndef MEMAUDIT_SERVICES_SCORER_SCORER_SERVICE_H_
#define MEMAUDIT_SERVICES_SCORER_SCORER_SERVICE_H_

#include "common/rpc/call_gate.h"
#include "common/security/capability.h"
#include "common/security/identity.h"
#include "memaudit/v1/scorer.grpc.pb.h"
#include "services/scorer/scorer.h"

namespace memaudit::scorer {

// Who may call the scorer, checked before a message is read: workers Ingest,
// the coordinator everything else (and the health service both).
CallPolicy ScorerCallPolicy();

// WatchResults runs on gRPC's callback API (common/rpc/watch_reactor.h): a
// stream waiting for results holds no server thread. The other methods are
// synchronous.
class ScorerServiceImpl final
    : public v1::ScorerService::WithCallbackMethod_WatchResults<v1::ScorerService::Service> {
 public:
  // `auth` identifies each caller; `key` checks the capabilities the
  // coordinator issued with the same key.
  ScorerServiceImpl(Authenticator* auth, Scorer* scorer, CapabilityKey key)
      : auth_(auth), scorer_(scorer), key_(std::move(key)) {}

  // The coordinator (or an administrator) only.
  grpc::Status OpenAudit(grpc::ServerContext* ctx, const v1::OpenAuditRequest* req,
                         v1::OpenAuditResponse* resp) override;
  // Workers (or an administrator), every observation with its task's
  // capability: the first without one ends the stream with
  // PERMISSION_DENIED, unstored.
  grpc::Status Ingest(grpc::ServerContext* ctx, grpc::ServerReader<v1::Observation>* reader,
                      v1::IngestResponse* resp) override;
  // The coordinator (or an administrator) only.
  grpc::Status GetResults(grpc::ServerContext* ctx, const v1::GetResultsRequest* req,
                          v1::AuditResults* resp) override;
  // The coordinator (or an administrator) only: the audit's results now,
  // then each time they change, until they are complete or cannot be.
  grpc::ServerWriteReactor<v1::AuditResults>* WatchResults(
      grpc::CallbackServerContext* ctx, const v1::GetResultsRequest* req) override;
  // The coordinator (or an administrator) only. With a lease: seals it
  // when nothing is missing, then scores the audit if that completes it.
  grpc::Status CheckTask(grpc::ServerContext* ctx, const v1::CheckTaskRequest* req,
                         v1::CheckTaskResponse* resp) override;
  // The coordinator (or an administrator) only.
  grpc::Status EndLease(grpc::ServerContext* ctx, const v1::EndLeaseRequest* req,
                        v1::EndLeaseResponse* resp) override;
  grpc::Status RevokeWorker(grpc::ServerContext* ctx, const v1::RevokeWorkerRequest* req,
                            v1::RevokeWorkerResponse* resp) override;
  grpc::Status DropAudit(grpc::ServerContext* ctx, const v1::DropAuditRequest* req,
                         v1::DropAuditResponse* resp) override;
  // The coordinator (or an administrator) only: the audit's per-example
  // arrays, in pieces (common/messages/export_arrays.h).
  grpc::Status Export(grpc::ServerContext* ctx, const v1::ExportRequest* req,
                      grpc::ServerWriter<v1::ExportArray>* writer) override;

 private:
  Authenticator* auth_;
  Scorer* scorer_;
  const CapabilityKey key_;
};

}  // namespace memaudit::scorer

#endif  // MEMAUDIT_SERVICES_SCORER_SCORER_SERVICE_H_
