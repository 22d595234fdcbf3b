#include "services/scorer/scorer_service.h"

#include <set>

#include "common/status_grpc.h"
#include "services/coordinator/spec_validator.h"

namespace memaudit::scorer {

grpc::Status ScorerServiceImpl::OpenAudit(grpc::ServerContext*, const v1::OpenAuditRequest* req,
                                          v1::OpenAuditResponse* resp) {
  // The coordinator sends specs it has defaulted and validated; anyone else who
  // reaches this port is held to the same rules (limits and cost included)
  // before the scorer stores or plans anything for the audit.
  if (absl::Status s = coordinator::ValidateSpec(req->spec()); !s.ok()) return ToGrpc(s);
  if (absl::Status s = scorer_->OpenAudit(req->audit_id(), req->spec()); !s.ok()) return ToGrpc(s);
  auto reused = scorer_->ReuseStoredRuns(req->audit_id());
  if (!reused.ok()) return ToGrpc(reused.status());
  for (v1::ReusedRun& r : *reused) *resp->add_reused() = std::move(r);
  return grpc::Status::OK;
}

grpc::Status ScorerServiceImpl::Ingest(grpc::ServerContext*,
                                       grpc::ServerReader<v1::Observation>* reader,
                                       v1::IngestResponse* resp) {
  v1::Observation observation;
  std::set<std::string> touched;
  // Each observation is persisted as it arrives: a stream cut short keeps
  // what it delivered, and the sender's retry only adds what is missing.
  while (reader->Read(&observation)) {
    auto stored = scorer_->Ingest(observation);
    if (!stored.ok()) return ToGrpc(stored.status());
    if (*stored) {
      resp->set_accepted(resp->accepted() + 1);
    } else {
      resp->set_duplicates(resp->duplicates() + 1);
    }
    touched.insert(observation.audit_id());
  }
  for (const std::string& audit_id : touched) {
    if (absl::Status s = scorer_->ScoreIfComplete(audit_id); !s.ok()) return ToGrpc(s);
  }
  return grpc::Status::OK;
}

grpc::Status ScorerServiceImpl::GetResults(grpc::ServerContext*, const v1::GetResultsRequest* req,
                                           v1::AuditResults* resp) {
  auto results = scorer_->GetResults(req->audit_id());
  if (!results.ok()) return ToGrpc(results.status());
  *resp = std::move(*results);
  return grpc::Status::OK;
}

}  // namespace memaudit::scorer

namespace memaudit::scorer {

grpc::Status ScorerServiceImpl::WatchResults(grpc::ServerContext* ctx,
                                             const v1::GetResultsRequest* req,
                                             grpc::ServerWriter<v1::AuditResults>* writer) {
  std::string last_sent;
  while (!ctx->IsCancelled()) {
    const uint64_t version = scorer_->results_version();
    auto results = scorer_->GetResults(req->audit_id());
    if (!results.ok()) return ToGrpc(results.status());
    std::string bytes = results->SerializeAsString();
    if (bytes != last_sent) {
      if (!writer->Write(*results)) return grpc::Status::OK;
      last_sent = std::move(bytes);
    }
    if (results->complete()) return grpc::Status::OK;
    scorer_->WaitForResults(version, 1000);
  }
  return grpc::Status::OK;
}

}  // namespace memaudit::scorer
