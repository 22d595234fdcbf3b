// ScorerService: translates RPCs to Scorer calls.
#ifndef MEMAUDIT_SERVICES_SCORER_SCORER_SERVICE_H_
#define MEMAUDIT_SERVICES_SCORER_SCORER_SERVICE_H_

#include "common/identity.h"
#include "memaudit/v1/scorer.grpc.pb.h"
#include "services/scorer/scorer.h"

namespace memaudit::scorer {

class ScorerServiceImpl final : public v1::ScorerService::Service {
 public:
  // `auth` identifies each caller (common/identity.h).
  ScorerServiceImpl(Authenticator* auth, Scorer* scorer) : auth_(auth), scorer_(scorer) {}

  grpc::Status OpenAudit(grpc::ServerContext* ctx, const v1::OpenAuditRequest* req,
                         v1::OpenAuditResponse* resp) override;
  grpc::Status Ingest(grpc::ServerContext* ctx, grpc::ServerReader<v1::Observation>* reader,
                      v1::IngestResponse* resp) override;
  grpc::Status GetResults(grpc::ServerContext* ctx, const v1::GetResultsRequest* req,
                          v1::AuditResults* resp) override;
  grpc::Status WatchResults(grpc::ServerContext* ctx, const v1::GetResultsRequest* req,
                            grpc::ServerWriter<v1::AuditResults>* writer) override;

 private:
  Authenticator* auth_;
  Scorer* scorer_;
};

}  // namespace memaudit::scorer

#endif  // MEMAUDIT_SERVICES_SCORER_SCORER_SERVICE_H_
