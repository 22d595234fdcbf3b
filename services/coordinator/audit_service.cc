#include "services/coordinator/audit_service.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/status_grpc.h"
#include "services/coordinator/spec_validator.h"

namespace memaudit::coordinator {
namespace {

constexpr int kScorerDeadlineMs = 10000;

void SetDeadline(grpc::ClientContext* ctx, int ms) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(ms));
}

// A status whose message fits gRPC's metadata limit (it may echo a request's
// id or a spec's values).
grpc::Status Bounded(const grpc::Status& status) {
  if (status.ok()) return status;
  return grpc::Status(status.error_code(), BoundErrorMessage(status.error_message()));
}
grpc::Status Bounded(const absl::Status& status) { return Bounded(ToGrpc(status)); }

}  // namespace

grpc::Status AuditServiceImpl::Submit(grpc::ServerContext*, const v1::SubmitRequest* req,
                                      v1::SubmitResponse* resp) {
  if (!req->has_spec()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "spec: required");
  }
  v1::AuditSpec spec = req->spec();
  ApplyDefaults(&spec);
  if (absl::Status s = ValidateSpec(spec, data_roots_); !s.ok()) return Bounded(s);

  const std::string audit_id = NewAuditId();
  // The scorer learns the plan first, so no observation can arrive for an
  // audit it does not know. Registering twice is harmless.
  v1::OpenAuditRequest open;
  open.set_audit_id(audit_id);
  *open.mutable_spec() = spec;
  v1::OpenAuditResponse opened;
  grpc::ClientContext ctx;
  SetDeadline(&ctx, kScorerDeadlineMs);
  grpc::Status scorer_status = scorer_->OpenAudit(&ctx, open, &opened);
  if (!scorer_status.ok()) {
    return Bounded(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                absl::StrCat("scorer did not accept the audit: ",
                                             scorer_status.error_message(), " (retry later)")));
  }
  std::map<uint32_t, std::string> reused;
  for (const v1::ReusedRun& r : opened.reused()) reused[r.run()] = r.from_audit_id();
  auto audit = scheduler_->Submit(audit_id, spec, reused);
  if (!audit.ok()) return Bounded(audit.status());
  resp->set_audit_id(audit_id);
  resp->set_tasks(audit->tasks().total());
  return grpc::Status::OK;
}

grpc::Status AuditServiceImpl::Get(grpc::ServerContext*, const v1::GetRequest* req,
                                   v1::Audit* resp) {
  auto audit = scheduler_->Get(req->audit_id());
  if (!audit.ok()) return Bounded(audit.status());
  *resp = std::move(*audit);
  return grpc::Status::OK;
}

grpc::Status AuditServiceImpl::List(grpc::ServerContext*, const v1::ListRequest* req,
                                    v1::ListResponse* resp) {
  for (v1::Audit& a : scheduler_->List(req->limit() == 0 ? 100 : req->limit())) {
    *resp->add_audits() = std::move(a);
  }
  return grpc::Status::OK;
}

grpc::Status AuditServiceImpl::Watch(grpc::ServerContext* ctx, const v1::WatchRequest* req,
                                     grpc::ServerWriter<v1::AuditEvent>* writer) {
  auto first = scheduler_->Get(req->audit_id());
  if (!first.ok()) return Bounded(first.status());
  uint64_t after = req->after_sequence();
  uint64_t last_steps = ~uint64_t{0};
  while (!ctx->IsCancelled()) {
    const uint64_t version = scheduler_->version();
    auto events = scheduler_->EventsAfter(req->audit_id(), after, 100);
    if (!events.ok()) return Bounded(events.status());
    auto audit = scheduler_->Get(req->audit_id());
    if (!audit.ok()) return Bounded(audit.status());
    for (const EventRecord& e : *events) {
      v1::AuditEvent out;
      out.set_sequence(e.sequence);
      out.set_audit_id(e.audit_id);
      out.set_unix_ms(e.unix_ms);
      out.set_type(e.type);
      out.set_task_id(e.task_id);
      out.set_message(e.message);
      *out.mutable_audit() = *audit;
      out.mutable_audit()->clear_spec();
      if (!writer->Write(out)) return grpc::Status::OK;
      after = e.sequence;
    }
    if (events->empty() && audit->steps_done() != last_steps) {
      // Progress without a logged event: a snapshot carrying the last sequence.
      v1::AuditEvent progress;
      progress.set_sequence(after);
      progress.set_audit_id(req->audit_id());
      progress.set_type("progress");
      *progress.mutable_audit() = *audit;
      progress.mutable_audit()->clear_spec();
      if (!writer->Write(progress)) return grpc::Status::OK;
    }
    last_steps = audit->steps_done();
    if (events->size() == 100) continue;
    if (IsTerminal(audit->state()) && events->empty()) return grpc::Status::OK;
    scheduler_->WaitForChange(version, 500);
  }
  return grpc::Status::OK;
}

grpc::Status AuditServiceImpl::Cancel(grpc::ServerContext*, const v1::CancelRequest* req,
                                      v1::Audit* resp) {
  auto audit = scheduler_->Cancel(req->audit_id());
  if (!audit.ok()) return Bounded(audit.status());
  *resp = std::move(*audit);
  return grpc::Status::OK;
}

grpc::Status AuditServiceImpl::GetReport(grpc::ServerContext*, const v1::GetReportRequest* req,
                                         v1::AuditResults* resp) {
  auto audit = scheduler_->Get(req->audit_id());
  if (!audit.ok()) return Bounded(audit.status());
  v1::GetResultsRequest get;
  get.set_audit_id(req->audit_id());
  grpc::ClientContext ctx;
  SetDeadline(&ctx, kScorerDeadlineMs);
  return Bounded(scorer_->GetResults(&ctx, get, resp));
}

}  // namespace memaudit::coordinator
