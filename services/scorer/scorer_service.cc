#include "services/scorer/scorer_service.h"

#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/messages/export_arrays.h"
#include "common/messages/spec_message_bounds.h"
#include "common/rpc/status_grpc.h"
#include "common/rpc/watch_reactor.h"
#include "spec/spec_validator.h"

namespace memaudit::scorer {
namespace {

// CheckTask lists at most this many missing observations.
constexpr size_t kMaxMissingListed = 20;

// Ids the coordinator makes are 34 bytes; a longer one names no audit.
constexpr size_t kMaxAuditIdBytes = 128;

absl::Status CheckTaskName(const std::string& audit_id, const std::string& role) {
  if (audit_id.empty() || audit_id.size() > kMaxAuditIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("audit_id: 1 to ", kMaxAuditIdBytes, " bytes (got ", audit_id.size(), ")"));
  }
  if (role.size() > kMaxAuditIdBytes) {
    return absl::InvalidArgumentError(absl::StrCat("role: at most ", kMaxAuditIdBytes, " bytes"));
  }
  return absl::OkStatus();
}

// One WatchResults stream: the audit's results whenever they differ from
// what it sent last, until they are complete or cannot be (an error); it
// waits for the scorer's next change of results, re-reading at least every
// kResultsRecheck.
class ResultsWatch final : public WatchReactor<v1::AuditResults> {
 public:
  static constexpr absl::Duration kResultsRecheck = absl::Seconds(1);

  ResultsWatch(Scorer* scorer, std::string audit_id)
      : WatchReactor(&scorer->results_changes(), kResultsRecheck),
        scorer_(scorer),
        audit_id_(std::move(audit_id)) {}

 private:
  Step Poll() override {
    Step step;
    step.seen = scorer_->results_version();
    auto results = scorer_->GetResults(audit_id_);
    if (!results.ok()) return Step::End(ToGrpc(results.status()));
    // Complete, or never to be: an audit that cannot be scored ends here too.
    if (results->complete() || !results->error().empty()) step.then = Step::Then::kFinish;
    std::string bytes = results->SerializeAsString();
    // A failed write ends the stream, so what is queued counts as sent.
    if (bytes != last_sent_) {
      step.writes.push_back(*std::move(results));
      last_sent_ = std::move(bytes);
    }
    return step;
  }

  Scorer* const scorer_;
  const std::string audit_id_;
  std::string last_sent_;
};

}  // namespace

CallPolicy ScorerCallPolicy() {
  CallPolicy policy;
  AllowService(v1::ScorerService::service_full_name(), {Role::kCoordinator}, &policy);
  AllowMethod(v1::ScorerService::service_full_name(), "Ingest", {Role::kWorker}, &policy);
  AllowHealth(&policy);
  return policy;
}

grpc::Status ScorerServiceImpl::OpenAudit(grpc::ServerContext* ctx, const v1::OpenAuditRequest* req,
                                          v1::OpenAuditResponse* resp) {
  if (auto caller = auth_->Require(*ctx, {Role::kCoordinator}); !caller.ok()) {
    return ToGrpc(caller.status());
  }
  // The coordinator sends specs it has defaulted and validated; anyone else who
  // reaches this port is held to the same rules (limits and cost included)
  // before the scorer stores or plans anything for the audit.
  if (absl::Status s = CheckSpecMessage(req->spec()); !s.ok()) return ToGrpc(s);
  if (absl::Status s = spec::ValidateSpec(req->spec()); !s.ok()) return ToGrpc(s);
  if (absl::Status s = scorer_->OpenAudit(req->audit_id(), req->spec(), req->team()); !s.ok()) {
    return ToGrpc(s);
  }
  auto reused = scorer_->ReuseStoredRuns(req->audit_id());
  if (!reused.ok()) return ToGrpc(reused.status());
  for (v1::ReusedRun& r : *reused) *resp->add_reused() = std::move(r);
  return grpc::Status::OK;
}

grpc::Status ScorerServiceImpl::Ingest(grpc::ServerContext* ctx,
                                       grpc::ServerReader<v1::Observation>* reader,
                                       v1::IngestResponse* resp) {
  auto caller = auth_->Require(*ctx, {Role::kWorker});
  if (!caller.ok()) return ToGrpc(caller.status());
  const std::string writer = caller->ToString();
  v1::Observation observation;
  std::set<std::string> touched;
  grpc::Status outcome = grpc::Status::OK;
  // Each observation is persisted as it arrives: a stream cut short keeps
  // what it delivered, and the sender's retry only adds what is missing.
  // Its capability is checked first: nothing is stored without the one its
  // task's current lease gave this caller.
  while (outcome.ok() && reader->Read(&observation)) {
    auto task = scorer_->TaskOf(observation);
    if (!task.ok()) {
      outcome = ToGrpc(task.status());
      continue;
    }
    const std::optional<uint32_t> lease =
        VerifyTaskCapability(key_, observation.audit_id(), *task, writer, observation.capability());
    if (!lease.has_value()) {
      outcome = grpc::Status(
          grpc::StatusCode::PERMISSION_DENIED,
          absl::StrCat("observation.capability: not a capability of task ", task->ToString(),
                       " of audit ", observation.audit_id().substr(0, 128), " for ", writer,
                       " (it comes with the task's lease, for the identity that leased it)"));
    } else if (auto stored = scorer_->Ingest(observation, {task->ToString(), *lease, writer});
               !stored.ok()) {
      outcome = ToGrpc(stored.status());
    } else {
      if (*stored) {
        resp->set_accepted(resp->accepted() + 1);
      } else {
        resp->set_duplicates(resp->duplicates() + 1);
      }
      touched.insert(observation.audit_id());
    }
  }
  // A streaming kind publishes what was stored, however the stream ended;
  // the others are scored when their last lease is sealed (CheckTask). An
  // audit whose values cannot be scored is marked failed by
  // ScoreIfComplete; what fails here is the store, worth a retry.
  for (const std::string& audit_id : touched) {
    if (!scorer_->Streams(audit_id)) continue;
    if (absl::Status s = scorer_->ScoreIfComplete(audit_id); !s.ok() && outcome.ok()) {
      outcome = ToGrpc(s);
    }
  }
  return outcome;
}

grpc::Status ScorerServiceImpl::GetResults(grpc::ServerContext* ctx,
                                           const v1::GetResultsRequest* req,
                                           v1::AuditResults* resp) {
  if (auto caller = auth_->Require(*ctx, {Role::kCoordinator}); !caller.ok()) {
    return ToGrpc(caller.status());
  }
  auto results = scorer_->GetResults(req->audit_id());
  if (!results.ok()) return ToGrpc(results.status());
  *resp = std::move(*results);
  return grpc::Status::OK;
}

grpc::Status ScorerServiceImpl::CheckTask(grpc::ServerContext* ctx, const v1::CheckTaskRequest* req,
                                          v1::CheckTaskResponse* resp) {
  if (auto caller = auth_->Require(*ctx, {Role::kCoordinator}); !caller.ok()) {
    return ToGrpc(caller.status());
  }
  auto check =
      scorer_->CheckTask(req->audit_id(), TaskRef{req->role(), req->index()}, req->lease());
  if (!check.ok()) return ToGrpc(check.status());
  resp->set_missing_count(static_cast<uint32_t>(check->missing.size()));
  for (size_t i = 0; i < check->missing.size() && i < kMaxMissingListed; ++i) {
    resp->add_missing(check->missing[i].ToString());
  }
  resp->set_audit_error(check->audit_error);
  return grpc::Status::OK;
}

grpc::Status ScorerServiceImpl::EndLease(grpc::ServerContext* ctx, const v1::EndLeaseRequest* req,
                                         v1::EndLeaseResponse* resp) {
  if (auto caller = auth_->Require(*ctx, {Role::kCoordinator}); !caller.ok()) {
    return ToGrpc(caller.status());
  }
  if (absl::Status s = CheckTaskName(req->audit_id(), req->role()); !s.ok()) return ToGrpc(s);
  auto dropped =
      scorer_->EndLease(req->audit_id(), TaskRef{req->role(), req->index()}, req->lease());
  if (!dropped.ok()) return ToGrpc(dropped.status());
  resp->set_dropped(static_cast<uint32_t>(*dropped));
  return grpc::Status::OK;
}

grpc::Status ScorerServiceImpl::RevokeWorker(grpc::ServerContext* ctx,
                                             const v1::RevokeWorkerRequest* req,
                                             v1::RevokeWorkerResponse* resp) {
  if (auto caller = auth_->Require(*ctx, {Role::kCoordinator}); !caller.ok()) {
    return ToGrpc(caller.status());
  }
  if (!IsValidName(req->worker())) {
    return ToGrpc(absl::InvalidArgumentError(
        "worker: a worker identity's name (1 to 64 of letters, digits, . _ -)"));
  }
  auto runs = scorer_->RevokeWorker(req->worker());
  if (!runs.ok()) return ToGrpc(runs.status());
  resp->set_purged_runs(static_cast<uint32_t>(*runs));
  return grpc::Status::OK;
}

grpc::Status ScorerServiceImpl::DropAudit(grpc::ServerContext* ctx, const v1::DropAuditRequest* req,
                                          v1::DropAuditResponse* resp) {
  if (auto caller = auth_->Require(*ctx, {Role::kCoordinator}); !caller.ok()) {
    return ToGrpc(caller.status());
  }
  if (absl::Status s = CheckTaskName(req->audit_id(), ""); !s.ok()) return ToGrpc(s);
  auto dropped = scorer_->DropAudit(req->audit_id(), req->keep());
  if (!dropped.ok()) return ToGrpc(dropped.status());
  resp->set_dropped(*dropped);
  return grpc::Status::OK;
}

grpc::Status ScorerServiceImpl::Export(grpc::ServerContext* ctx, const v1::ExportRequest* req,
                                       grpc::ServerWriter<v1::ExportArray>* writer) {
  if (auto caller = auth_->Require(*ctx, {Role::kCoordinator}); !caller.ok()) {
    return ToGrpc(caller.status());
  }
  auto arrays = scorer_->Export(req->audit_id());
  if (!arrays.ok()) return ToGrpc(arrays.status());
  for (const v1::ExportArray& array : *arrays) {
    for (const v1::ExportArray& piece : SplitExportArray(array)) {
      if (!writer->Write(piece))
        return grpc::Status(grpc::StatusCode::CANCELLED, "export: the reader went away");
    }
  }
  return grpc::Status::OK;
}

grpc::ServerWriteReactor<v1::AuditResults>* ScorerServiceImpl::WatchResults(
    grpc::CallbackServerContext* ctx, const v1::GetResultsRequest* req) {
  if (auto caller = auth_->Require(*ctx, {Role::kCoordinator}); !caller.ok()) {
    return new FinishedWriteReactor<v1::AuditResults>(ToGrpc(caller.status()));
  }
  auto* watch = new ResultsWatch(scorer_, req->audit_id());
  watch->Start();
  return watch;
}

}  // namespace memaudit::scorer
