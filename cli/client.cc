#include "cli/client.h"

#include <grpcpp/grpcpp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/messages/export_arrays.h"
#include "common/rpc/status_grpc.h"

namespace memaudit::cli {
namespace {

constexpr int kCallDeadlineMs = 30000;
// An export recomputes every score on the scorer: allow minutes.
constexpr int kExportDeadlineMs = 600000;
// Before the one resend of a Submit whose answer was lost.
constexpr int kSubmitRetryDelayMs = 1000;
// How long a dropped Watch is resumed for without news.
constexpr int kWatchReconnectSeconds = 30;

// Adds where the call went to UNAVAILABLE, the error a newcomer meets first.
absl::Status Explain(const grpc::Status& status, const std::string& address) {
  absl::Status s = FromGrpc(status);
  if (s.code() == absl::StatusCode::kUnavailable ||
      s.code() == absl::StatusCode::kDeadlineExceeded) {
    return absl::Status(s.code(),
                        absl::StrCat("coordinator at ", address, " is not reachable (", s.message(),
                                     "); start one or pass --coordinator HOST:PORT"));
  }
  return s;
}

template <typename Request, typename Response, typename Method>
absl::StatusOr<Response> Call(v1::AuditService::Stub* stub, Method method, const Request& request,
                              const std::string& address) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(kCallDeadlineMs));
  Response response;
  grpc::Status status = (stub->*method)(&ctx, request, &response);
  if (!status.ok()) return Explain(status, address);
  return response;
}

bool LostAnswer(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

}  // namespace

absl::StatusOr<std::string> NewRequestId() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    return absl::InternalError("no random bytes from OpenSSL for a request id");
  }
  return absl::StrCat("r-", absl::BytesToHexString(
                                absl::string_view(reinterpret_cast<char*>(bytes), sizeof(bytes))));
}

Client::Client(std::string address, const std::shared_ptr<grpc::Channel>& channel)
    : address_(std::move(address)), stub_(v1::AuditService::NewStub(channel)) {}

absl::StatusOr<Client> Client::Connect(const std::string& address,
                                       const ClientCredentials& credentials) {
  // MakeChannel also lifts gRPC's 4 MiB receive limit to what the servers
  // send (an audit with its results).
  auto channel = MakeChannel(address, credentials);
  if (!channel.ok()) return channel.status();
  return Client(address, *std::move(channel));
}

absl::StatusOr<v1::SubmitResponse> Client::Submit(const v1::AuditSpec& spec,
                                                  const std::string& request_id) {
  v1::SubmitRequest req;
  *req.mutable_spec() = spec;
  req.set_request_id(request_id);
  auto submitted = Call<v1::SubmitRequest, v1::SubmitResponse>(
      stub_.get(), &v1::AuditService::Stub::Submit, req, address_);
  if (submitted.ok() || request_id.empty() || !LostAnswer(submitted.status())) return submitted;
  std::this_thread::sleep_for(std::chrono::milliseconds(kSubmitRetryDelayMs));
  return Call<v1::SubmitRequest, v1::SubmitResponse>(stub_.get(), &v1::AuditService::Stub::Submit,
                                                     req, address_);
}

absl::StatusOr<v1::Audit> Client::Get(const std::string& audit_id) {
  v1::GetRequest req;
  req.set_audit_id(audit_id);
  return Call<v1::GetRequest, v1::Audit>(stub_.get(), &v1::AuditService::Stub::Get, req, address_);
}

absl::StatusOr<v1::ListResponse> Client::List(uint32_t limit) {
  v1::ListRequest req;
  req.set_limit(limit);
  return List(req);
}

absl::StatusOr<v1::ListResponse> Client::List(const v1::ListRequest& req) {
  return Call<v1::ListRequest, v1::ListResponse>(stub_.get(), &v1::AuditService::Stub::List, req,
                                                 address_);
}

absl::StatusOr<v1::Audit> Client::Cancel(const std::string& audit_id) {
  v1::CancelRequest req;
  req.set_audit_id(audit_id);
  return Call<v1::CancelRequest, v1::Audit>(stub_.get(), &v1::AuditService::Stub::Cancel, req,
                                            address_);
}

absl::StatusOr<v1::RevokeWorkerResponse> Client::RevokeWorker(const std::string& worker) {
  v1::RevokeWorkerRequest req;
  req.set_worker(worker);
  return Call<v1::RevokeWorkerRequest, v1::RevokeWorkerResponse>(
      stub_.get(), &v1::AuditService::Stub::RevokeWorker, req, address_);
}

absl::StatusOr<v1::AuditResults> Client::Report(const std::string& audit_id) {
  v1::GetReportRequest req;
  req.set_audit_id(audit_id);
  return Call<v1::GetReportRequest, v1::AuditResults>(
      stub_.get(), &v1::AuditService::Stub::GetReport, req, address_);
}

absl::StatusOr<std::vector<v1::ExportArray>> Client::Export(const std::string& audit_id) {
  v1::ExportRequest req;
  req.set_audit_id(audit_id);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(kExportDeadlineMs));
  std::unique_ptr<grpc::ClientReader<v1::ExportArray>> reader = stub_->Export(&ctx, req);
  ExportAssembler assembler;
  v1::ExportArray piece;
  absl::Status bad;
  while (reader->Read(&piece)) {
    bad = assembler.Add(piece);
    if (!bad.ok()) {
      ctx.TryCancel();
      break;
    }
  }
  grpc::Status status = reader->Finish();
  if (!bad.ok()) return bad;
  if (!status.ok()) return Explain(status, address_);
  return std::move(assembler).Finish();
}

absl::Status Client::Watch(const std::string& audit_id,
                           const std::function<bool(const v1::AuditEvent&)>& on_event) {
  uint64_t after = 0;
  // A watch that drops (a coordinator restarting ends it with UNAVAILABLE)
  // resumes from the last sequence: again after 0.1 s, backing off to 1 s,
  // for up to kWatchReconnectSeconds without an event.
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(kWatchReconnectSeconds);
  auto backoff = std::chrono::milliseconds(100);
  while (true) {
    grpc::ClientContext ctx;
    v1::WatchRequest req;
    req.set_audit_id(audit_id);
    req.set_after_sequence(after);
    auto reader = stub_->Watch(&ctx, req);
    v1::AuditEvent event;
    while (reader->Read(&event)) {
      after = event.sequence();
      give_up = std::chrono::steady_clock::now() + std::chrono::seconds(kWatchReconnectSeconds);
      backoff = std::chrono::milliseconds(100);
      if (!on_event(event)) {
        ctx.TryCancel();
        reader->Finish();
        return absl::OkStatus();
      }
    }
    grpc::Status status = reader->Finish();
    if (status.ok()) return absl::OkStatus();
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return Explain(status, address_);
    if (std::chrono::steady_clock::now() + backoff >= give_up) break;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
  return absl::UnavailableError(absl::StrCat("lost the coordinator at ", address_));
}

}  // namespace memaudit::cli
