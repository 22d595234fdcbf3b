// AuditService: translates client RPCs to Scheduler calls. Spec checks and
// the scorer hand-off happen here; the logic lives in the Scheduler.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_AUDIT_SERVICE_H_
#define MEMAUDIT_SERVICES_COORDINATOR_AUDIT_SERVICE_H_

#include <memory>

#include "common/data_roots.h"
#include "common/identity.h"
#include "memaudit/v1/audit.grpc.pb.h"
#include "memaudit/v1/scorer.grpc.pb.h"
#include "services/coordinator/scheduler.h"

namespace memaudit::coordinator {

class AuditServiceImpl final : public v1::AuditService::Service {
 public:
  // `auth` identifies each caller (common/identity.h). Submit refuses a spec
  // naming a file outside `data_roots` (data_roots.h).
  AuditServiceImpl(Authenticator* auth, Scheduler* scheduler,
                   std::shared_ptr<v1::ScorerService::StubInterface> scorer, DataRoots data_roots)
      : auth_(auth),
        scheduler_(scheduler),
        scorer_(std::move(scorer)),
        data_roots_(std::move(data_roots)) {}

  grpc::Status Submit(grpc::ServerContext* ctx, const v1::SubmitRequest* req,
                      v1::SubmitResponse* resp) override;
  grpc::Status Get(grpc::ServerContext* ctx, const v1::GetRequest* req, v1::Audit* resp) override;
  grpc::Status List(grpc::ServerContext* ctx, const v1::ListRequest* req,
                    v1::ListResponse* resp) override;
  grpc::Status Watch(grpc::ServerContext* ctx, const v1::WatchRequest* req,
                     grpc::ServerWriter<v1::AuditEvent>* writer) override;
  grpc::Status Cancel(grpc::ServerContext* ctx, const v1::CancelRequest* req,
                      v1::Audit* resp) override;
  grpc::Status GetReport(grpc::ServerContext* ctx, const v1::GetReportRequest* req,
                         v1::AuditResults* resp) override;

 private:
  Authenticator* auth_;
  Scheduler* scheduler_;
  std::shared_ptr<v1::ScorerService::StubInterface> scorer_;
  const DataRoots data_roots_;
};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_AUDIT_SERVICE_H_
