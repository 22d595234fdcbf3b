#include "services/coordinator/audit_service.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/base/status_macros.h"
#include "common/messages/audit_kinds.h"
#include "common/messages/event_types.h"
#include "common/messages/spec_message_bounds.h"
#include "common/messages/spec_yaml.h"
#include "common/rpc/status_grpc.h"
#include "common/rpc/watch_reactor.h"
#include "memaudit/v1/worker.grpc.pb.h"
#include "services/coordinator/page_token.h"
#include "spec/diff.h"
#include "spec/planner.h"
#include "spec/spec_validator.h"

namespace memaudit::coordinator {
namespace {

constexpr int kScorerDeadlineMs = 10000;
constexpr int kScorerExportDeadlineMs = 600000;

void SetDeadline(grpc::ClientContext* ctx, int ms) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(ms));
}

// A status whose message fits gRPC's metadata limit (it may echo a request's
// id or a spec's values).
grpc::Status Bounded(const grpc::Status& status) {
  if (status.ok()) return status;
  return grpc::Status(status.error_code(), spec::BoundErrorMessage(status.error_message()),
                      status.error_details());
}
grpc::Status Bounded(const absl::Status& status) { return Bounded(ToGrpc(status)); }

// An empty id is a malformed request, not an audit that is not there.
absl::Status CheckAuditId(const std::string& audit_id) {
  if (audit_id.empty()) return absl::InvalidArgumentError("audit_id: required");
  return absl::OkStatus();
}

// A team, or an administrator, who may call every AuditService RPC; what it
// submits is owned by its name.
absl::StatusOr<Caller> Authorize(Authenticator* auth, const grpc::ServerContextBase& ctx) {
  absl::StatusOr<Identity> who = auth->Require(ctx, {Role::kTeam});
  if (!who.ok()) return who.status();
  return Caller{who->name, who->role == Role::kAdmin, who->ToString()};
}

void SetResponse(const v1::Audit& audit, v1::SubmitResponse* resp) {
  resp->set_audit_id(audit.audit_id());
  resp->set_tasks(audit.tasks().total());
}

// One Watch stream: each poll sends the events logged since the last one
// (at most kWatchBatch, then it polls again at once), each with the audit's
// snapshot, or a "progress" snapshot when only the audit's steps moved. It
// ends once the audit is terminal and every event was sent; else it waits
// for the scheduler's next change, re-reading at least every
// kWatchRecheck.
class AuditWatch final : public WatchReactor<v1::AuditEvent> {
 public:
  static constexpr int kWatchBatch = 100;
  static constexpr absl::Duration kWatchRecheck = absl::Milliseconds(500);
  // An audit's state changes in memory when a decision is made, its events
  // reach the store when the decision is durable (group commit), a moment
  // later. A stream ends with the event that ends the audit; one that began
  // after that event (resumed past it) ends once the audit has been
  // terminal this long with nothing new.
  static constexpr absl::Duration kEndEventGrace = absl::Seconds(5);

  AuditWatch(Scheduler* scheduler, Caller caller, const v1::WatchRequest& req)
      : WatchReactor(&scheduler->changes(), kWatchRecheck),
        scheduler_(scheduler),
        caller_(std::move(caller)),
        audit_id_(req.audit_id()),
        after_(req.after_sequence()) {}

 private:
  Step Poll() override {
    Step step;
    step.seen = scheduler_->version();
    auto events = scheduler_->EventsAfter(audit_id_, after_, kWatchBatch);
    if (!events.ok()) return Step::End(Bounded(events.status()));
    auto audit = scheduler_->Get(audit_id_, caller_);
    if (!audit.ok()) return Step::End(Bounded(audit.status()));
    audit->clear_spec();
    // A failed write ends the stream, so what is queued counts as sent.
    for (const EventRecord& e : *events) {
      v1::AuditEvent& out = step.writes.emplace_back();
      out.set_sequence(e.sequence);
      out.set_audit_id(e.audit_id);
      out.set_unix_ms(e.unix_ms);
      out.set_type(e.type);
      out.set_task_id(e.task_id);
      out.set_message(e.message);
      *out.mutable_audit() = *audit;
      after_ = e.sequence;
      ended_ = ended_ || EndsTheAudit(e.type);
    }
    if (events->empty() && audit->steps_done() != last_steps_) {
      // Progress without a logged event: a snapshot carrying the last sequence.
      v1::AuditEvent& progress = step.writes.emplace_back();
      progress.set_sequence(after_);
      progress.set_audit_id(audit_id_);
      progress.set_type(v1::PROGRESS);
      *progress.mutable_audit() = *audit;
    }
    last_steps_ = audit->steps_done();
    if (events->size() == kWatchBatch) {
      step.then = Step::Then::kPollAgain;
    } else if (ended_) {
      step.then = Step::Then::kFinish;
    } else if (IsTerminal(audit->state()) && events->empty()) {
      // Terminal in memory, its last event perhaps not yet in the store.
      const absl::Time now = absl::Now();
      if (terminal_since_ == absl::InfiniteFuture()) terminal_since_ = now;
      if (now - terminal_since_ >= kEndEventGrace) step.then = Step::Then::kFinish;
    }
    return step;
  }

  Scheduler* const scheduler_;
  const Caller caller_;
  const std::string audit_id_;
  uint64_t after_;
  uint64_t last_steps_ = ~uint64_t{0};
  bool ended_ = false;  // the event that ends the audit was written
  absl::Time terminal_since_ = absl::InfiniteFuture();
};

}  // namespace

CallPolicy CoordinatorCallPolicy() {
  CallPolicy policy;
  AllowService(v1::AuditService::service_full_name(), {Role::kTeam}, &policy);
  AllowMethod(v1::AuditService::service_full_name(), "RevokeWorker", {}, &policy);
  AllowService(v1::WorkerService::service_full_name(), {Role::kWorker}, &policy);
  AllowHealth(&policy);
  return policy;
}

absl::StatusOr<Scheduler::AuditQuery> ListQuery(const v1::ListRequest& req,
                                                const CapabilityKey& key,
                                                absl::string_view caller) {
  Scheduler::AuditQuery query;
  query.limit = req.limit() == 0 ? kDefaultListLimit : req.limit();
  if (query.limit > kMaxListLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit: must be at most ", kMaxListLimit, " (got ", req.limit(), ")"));
  }
  if (!req.page_token().empty()) {
    // The submit-order number the next page starts below, sealed for the
    // caller (page_token.h).
    MEMAUDIT_ASSIGN_OR_RETURN(const uint64_t before,
                              DecodePageToken(key, caller, req.page_token()));
    query.before = static_cast<size_t>(before);
  }
  if (!v1::AuditState_IsValid(req.state())) {
    return absl::InvalidArgumentError(absl::StrCat("state: no such state (got ", req.state(), ")"));
  }
  query.state = req.state();
  if (!v1::AuditKind_IsValid(req.kind())) {
    return absl::InvalidArgumentError(absl::StrCat("kind: no such kind (got ", req.kind(), ")"));
  }
  query.kind = AuditKindName(req.kind());  // "" = any
  if (req.name_contains().size() > kMaxNameFilterBytes) {
    return absl::InvalidArgumentError(absl::StrCat("name_contains: at most ", kMaxNameFilterBytes,
                                                   " bytes (got ", req.name_contains().size(),
                                                   ")"));
  }
  query.name_contains = req.name_contains();
  if (!v1::AuditView_IsValid(req.view())) {
    return absl::InvalidArgumentError(absl::StrCat("view: no such view (got ", req.view(), ")"));
  }
  query.with_spec = req.view() == v1::AUDIT_VIEW_FULL;
  return query;
}

absl::StatusOr<v1::AuditSpec> SpecToValidate(const v1::ValidateRequest& req) {
  switch (req.source_case()) {
    case v1::ValidateRequest::kSpec:
      return req.spec();
    case v1::ValidateRequest::kYaml:
      break;
    case v1::ValidateRequest::SOURCE_NOT_SET:
      return absl::InvalidArgumentError("spec or yaml: required");
  }
  if (req.yaml().size() > kMaxSpecBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "yaml: at most ", kMaxSpecBytes, " bytes, as a spec file (got ", req.yaml().size(), ")"));
  }
  if (req.source_name().size() > kMaxSourceNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat("source_name: at most ", kMaxSourceNameBytes,
                                                   " bytes (got ", req.source_name().size(), ")"));
  }
  return ParseSpecYaml(req.yaml(), req.source_name().empty() ? "<yaml>" : req.source_name());
}

absl::Status CheckRequestId(const std::string& request_id) {
  bool printable = true;
  for (char c : request_id) printable = printable && c > ' ' && c < 0x7f;
  if (request_id.size() <= kMaxRequestIdBytes && printable) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("request_id: must be at most ", kMaxRequestIdBytes,
                                                 " printable ASCII characters without spaces (got ",
                                                 QuoteValue(request_id), ")"));
}

grpc::Status AuditServiceImpl::Submit(grpc::ServerContext* ctx, const v1::SubmitRequest* req,
                                      v1::SubmitResponse* resp) {
  absl::StatusOr<Caller> caller = Authorize(auth_, *ctx);
  if (!caller.ok()) return Bounded(caller.status());
  if (absl::Status s = CheckRequestId(req->request_id()); !s.ok()) return Bounded(s);
  if (!req->has_spec()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "spec: required");
  }
  // Bounded like a YAML spec, and nothing this build does not know is kept:
  // checked before the spec is copied, stored or sent anywhere.
  if (absl::Status s = CheckSpecMessage(req->spec()); !s.ok()) return Bounded(s);
  Submission submission;
  submission.caller = *caller;
  submission.request_id = req->request_id();
  submission.spec_bytes = req->spec().ByteSizeLong();
  submission.spec = req->spec();
  if (absl::Status s = spec::PrepareSpec(&submission.spec, data_roots_); !s.ok()) return Bounded(s);

  // A resend answers what the first request did; quotas refuse before the
  // scorer hears of the audit.
  absl::StatusOr<std::optional<v1::Audit>> earlier = scheduler_->Admit(submission);
  if (!earlier.ok()) return Bounded(earlier.status());
  if (earlier->has_value()) {
    SetResponse(**earlier, resp);
    return grpc::Status::OK;
  }
  const v1::AuditSpec& spec = submission.spec;
  submission.audit_id = NewAuditId();
  const std::string& audit_id = submission.audit_id;
  // The scorer learns the plan first, so no observation can arrive for an
  // audit it does not know. Registering twice is harmless.
  v1::OpenAuditRequest open;
  open.set_audit_id(audit_id);
  *open.mutable_spec() = spec;
  // Content-keyed reuse stays within the owning team (scorer --cross-team-reuse).
  open.set_team(submission.caller.name);
  v1::OpenAuditResponse opened;
  grpc::ClientContext scorer_ctx;
  SetDeadline(&scorer_ctx, kScorerDeadlineMs);
  grpc::Status scorer_status = scorer_->OpenAudit(&scorer_ctx, open, &opened);
  if (!scorer_status.ok()) {
    return Bounded(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                absl::StrCat("scorer did not accept the audit: ",
                                             scorer_status.error_message(), " (retry later)")));
  }
  for (const v1::ReusedRun& r : opened.reused()) {
    submission.reused[r.run()] = r.from_audit_id();
  }
  // A concurrent resend may have won: then this is its audit, and the plan
  // opened for this one is dropped, as is a refused one's: a refused Submit
  // leaves nothing behind.
  auto audit = scheduler_->Submit(submission);
  if (!audit.ok() || audit->audit_id() != audit_id) DropAtScorer(audit_id);
  if (!audit.ok()) return Bounded(audit.status());
  SetResponse(*audit, resp);
  return grpc::Status::OK;
}

grpc::Status AuditServiceImpl::Validate(grpc::ServerContext* ctx, const v1::ValidateRequest* req,
                                        v1::ValidateResponse* resp) {
  absl::StatusOr<Caller> caller = Authorize(auth_, *ctx);
  if (!caller.ok()) return Bounded(caller.status());
  absl::StatusOr<v1::AuditSpec> spec = SpecToValidate(*req);
  if (!spec.ok()) return Bounded(spec.status());
  // Submit's checks, in Submit's order, on a copy: the spec is answered as
  // read, without the defaults and file facts PrepareSpec fills in.
  if (absl::Status s = CheckSpecMessage(*spec); !s.ok()) return Bounded(s);
  v1::AuditSpec prepared = *spec;
  if (absl::Status s = spec::PrepareSpec(&prepared, data_roots_); !s.ok()) return Bounded(s);
  absl::StatusOr<spec::Plan> plan = spec::PlanAudit(prepared);
  if (!plan.ok()) return Bounded(plan.status());
  uint64_t steps = 0;
  for (const spec::PlannedTask& task : plan->tasks) steps += task.steps_total;
  *resp->mutable_spec() = *std::move(spec);
  resp->set_tasks(static_cast<uint32_t>(plan->tasks.size()));
  resp->set_steps(steps);
  return grpc::Status::OK;
}

void AuditServiceImpl::DropAtScorer(const std::string& audit_id, bool keep) {
  v1::DropAuditRequest drop;
  drop.set_audit_id(audit_id);
  drop.set_keep(keep);
  v1::DropAuditResponse dropped;
  grpc::ClientContext ctx;
  SetDeadline(&ctx, kScorerDeadlineMs);
  // Best effort: an audit the coordinator never stored gets no observation,
  // and one the scorer keeps is no source of reuse.
  if (grpc::Status s = scorer_->DropAudit(&ctx, drop, &dropped); !s.ok()) {
    spdlog::warn("scorer kept the plan of audit {}: {}", audit_id, s.error_message());
  }
}

grpc::Status AuditServiceImpl::RevokeWorker(grpc::ServerContext* ctx,
                                            const v1::RevokeWorkerRequest* req,
                                            v1::RevokeWorkerResponse* resp) {
  absl::StatusOr<Identity> caller = auth_->Require(*ctx, {});
  if (!caller.ok()) return Bounded(caller.status());
  if (!IsValidName(req->worker())) {
    return Bounded(absl::InvalidArgumentError(
        "worker: a worker identity's name (1 to 64 of letters, digits, . _ -)"));
  }
  if (revoked_ == nullptr) {
    return Bounded(absl::FailedPreconditionError("this coordinator keeps no revoked workers"));
  }
  // The scorer first: once it answers, nothing the worker sends is stored.
  grpc::ClientContext scorer_ctx;
  SetDeadline(&scorer_ctx, kScorerDeadlineMs);
  if (grpc::Status s = scorer_->RevokeWorker(&scorer_ctx, *req, resp); !s.ok()) {
    return Bounded(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                absl::StrCat("the scorer did not take the revocation: ",
                                             s.error_message(), " (nothing changed; retry)")));
  }
  if (absl::Status s = revoked_->Add(req->worker()); !s.ok()) return Bounded(s);
  spdlog::warn("{} revoked worker {}: {} run(s) purged from reuse", caller->ToString(),
               req->worker(), resp->purged_runs());
  return grpc::Status::OK;
}

grpc::Status AuditServiceImpl::Get(grpc::ServerContext* ctx, const v1::GetRequest* req,
                                   v1::Audit* resp) {
  absl::StatusOr<Caller> caller = Authorize(auth_, *ctx);
  if (!caller.ok()) return Bounded(caller.status());
  if (absl::Status s = CheckAuditId(req->audit_id()); !s.ok()) return Bounded(s);
  auto audit = scheduler_->Get(req->audit_id(), *caller);
  if (!audit.ok()) return Bounded(audit.status());
  *resp = std::move(*audit);
  return grpc::Status::OK;
}

grpc::Status AuditServiceImpl::List(grpc::ServerContext* ctx, const v1::ListRequest* req,
                                    v1::ListResponse* resp) {
  absl::StatusOr<Caller> caller = Authorize(auth_, *ctx);
  if (!caller.ok()) return Bounded(caller.status());
  absl::StatusOr<Scheduler::AuditQuery> query = ListQuery(*req, key_, caller->description);
  if (!query.ok()) return Bounded(query.status());
  Scheduler::AuditPage page = scheduler_->Query(*query, *caller);
  for (v1::Audit& a : page.audits) *resp->add_audits() = std::move(a);
  if (page.next_before) {
    resp->set_next_page_token(EncodePageToken(key_, caller->description, *page.next_before));
  }
  return grpc::Status::OK;
}

grpc::ServerWriteReactor<v1::AuditEvent>* AuditServiceImpl::Watch(grpc::CallbackServerContext* ctx,
                                                                  const v1::WatchRequest* req) {
  absl::StatusOr<Caller> caller = Authorize(auth_, *ctx);
  if (!caller.ok()) return new FinishedWriteReactor<v1::AuditEvent>(Bounded(caller.status()));
  if (absl::Status s = CheckAuditId(req->audit_id()); !s.ok()) {
    return new FinishedWriteReactor<v1::AuditEvent>(Bounded(s));
  }
  // The owner never changes: checked once, before the first event.
  auto first = scheduler_->Get(req->audit_id(), *caller);
  if (!first.ok()) return new FinishedWriteReactor<v1::AuditEvent>(Bounded(first.status()));
  auto* watch = new AuditWatch(scheduler_, *std::move(caller), *req);
  watch->Start();
  return watch;
}

grpc::Status AuditServiceImpl::Cancel(grpc::ServerContext* ctx, const v1::CancelRequest* req,
                                      v1::Audit* resp) {
  absl::StatusOr<Caller> caller = Authorize(auth_, *ctx);
  if (!caller.ok()) return Bounded(caller.status());
  if (absl::Status s = CheckAuditId(req->audit_id()); !s.ok()) return Bounded(s);
  auto audit = scheduler_->Cancel(req->audit_id(), *caller);
  if (!audit.ok()) return Bounded(audit.status());
  // A cancelled audit's runs are no source of reuse.
  if (audit->state() == v1::CANCELLED) DropAtScorer(audit->audit_id(), /*keep=*/true);
  *resp = std::move(*audit);
  return grpc::Status::OK;
}

grpc::Status AuditServiceImpl::GetReport(grpc::ServerContext* ctx, const v1::GetReportRequest* req,
                                         v1::AuditResults* resp) {
  absl::StatusOr<Caller> caller = Authorize(auth_, *ctx);
  if (!caller.ok()) return Bounded(caller.status());
  return Bounded(ResultsOf(*caller, req->audit_id(), resp));
}

grpc::Status AuditServiceImpl::ResultsOf(const Caller& caller, const std::string& audit_id,
                                         v1::AuditResults* resp) {
  if (absl::Status s = CheckAuditId(audit_id); !s.ok()) return ToGrpc(s);
  auto audit = scheduler_->Get(audit_id, caller);
  if (!audit.ok()) return ToGrpc(audit.status());
  v1::GetResultsRequest get;
  get.set_audit_id(audit_id);
  grpc::ClientContext scorer_ctx;
  SetDeadline(&scorer_ctx, kScorerDeadlineMs);
  grpc::Status got = scorer_->GetResults(&scorer_ctx, get, resp);
  // The numeric class a native audit ran in is decided here, at its first
  // lease, after the scorer was told the spec.
  // So are the environments that trained it, as its tasks complete.
  if (got.ok() && resp->has_spec()) {
    v1::Resources* resources = resp->mutable_spec()->mutable_resources();
    resources->set_numeric_class(audit->spec().resources().numeric_class());
    *resources->mutable_numeric_environments() = audit->spec().resources().numeric_environments();
  }
  return got;
}

grpc::Status AuditServiceImpl::Diff(grpc::ServerContext* ctx, const v1::DiffRequest* req,
                                    v1::DiffResponse* resp) {
  absl::StatusOr<Caller> caller = Authorize(auth_, *ctx);
  if (!caller.ok()) return Bounded(caller.status());
  v1::AuditResults sides[2];
  const std::pair<const v1::DiffSide*, const char*> requested[2] = {
      {&req->old_audit(), "old_audit"}, {&req->new_audit(), "new_audit"}};
  for (int i = 0; i < 2; ++i) {
    const auto& [side, field] = requested[i];
    if (side->has_results()) {
      // Archived results come from the caller: their spec is checked as a
      // submitted one is before any metric is read from it.
      sides[i] = side->results();
      if (absl::Status s = CheckSpecMessage(sides[i].spec()); !s.ok()) {
        return Bounded(
            absl::InvalidArgumentError(absl::StrCat(field, ".results.spec: ", s.message())));
      }
      // The environments that trained it are the record's, not the request's.
      v1::AuditSpec checked = sides[i].spec();
      checked.mutable_resources()->clear_numeric_environments();
      const std::vector<spec::SpecProblem> problems = spec::FindProblems(checked);
      if (!problems.empty()) {
        return Bounded(absl::InvalidArgumentError(
            absl::StrCat(field, ".results.spec.", problems[0].field, ": ", problems[0].rule)));
      }
    } else if (side->side_case() == v1::DiffSide::kAuditId) {
      if (grpc::Status s = ResultsOf(*caller, side->audit_id(), &sides[i]); !s.ok()) {
        return Bounded(grpc::Status(s.error_code(), absl::StrCat(field, ": ", s.error_message())));
      }
    } else {
      return Bounded(absl::InvalidArgumentError(absl::StrCat(field, ": set audit_id or results")));
    }
  }
  absl::StatusOr<std::vector<spec::MetricChange>> changes = spec::DiffResults(sides[0], sides[1]);
  if (!changes.ok()) return Bounded(changes.status());
  *resp = spec::DiffProto(*changes);
  return grpc::Status::OK;
}

grpc::Status AuditServiceImpl::Export(grpc::ServerContext* ctx, const v1::ExportRequest* req,
                                      grpc::ServerWriter<v1::ExportArray>* writer) {
  absl::StatusOr<Caller> caller = Authorize(auth_, *ctx);
  if (!caller.ok()) return Bounded(caller.status());
  if (absl::Status s = CheckAuditId(req->audit_id()); !s.ok()) return Bounded(s);
  auto audit = scheduler_->Get(req->audit_id(), *caller);
  if (!audit.ok()) return Bounded(audit.status());
  grpc::ClientContext scorer_ctx;
  // An export recomputes every score from the stored signals: minutes for
  // the largest audits, not the seconds a results read takes.
  SetDeadline(&scorer_ctx, kScorerExportDeadlineMs);
  std::unique_ptr<grpc::ClientReaderInterface<v1::ExportArray>> reader =
      scorer_->Export(&scorer_ctx, *req);
  v1::ExportArray piece;
  while (reader->Read(&piece)) {
    if (!writer->Write(piece)) {
      scorer_ctx.TryCancel();
      break;
    }
  }
  return Bounded(reader->Finish());
}

}  // namespace memaudit::coordinator
