#include "cli/commands.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "audits/membership/cli_privacy_meter_export.h"
#include "cli/archived_results.h"
#include "cli/client.h"
#include "cli/csv_export.h"
#include "cli/diff.h"
#include "cli/embedded_cluster.h"
#include "cli/export_files.h"
#include "cli/gates.h"
#include "cli/html_report.h"
#include "cli/render.h"
#include "cli/run_timings.h"
#include "common/base/process.h"
#include "common/base/status_macros.h"
#include "common/messages/audit_kinds.h"
#include "common/messages/event_types.h"
#include "common/messages/export_arrays.h"
#include "common/messages/spec_yaml.h"
#include "common/training/device_name.h"
#include "spec/spec_validator.h"

namespace memaudit::cli {
namespace {

constexpr int kOk = 0;
constexpr int kAuditUnsuccessful = 1;
constexpr int kBadInput = 2;
constexpr int kUnreachable = 3;

// Writes whichever of the report files were asked for.
absl::Status WriteReportFiles(const v1::Audit& audit, const v1::AuditResults& results,
                              const ReportFiles& files) {
  if (!files.json_path.empty()) {
    MEMAUDIT_RETURN_IF_ERROR(WriteFile(files.json_path, ToJson(results)));
  }
  if (!files.html_path.empty()) {
    MEMAUDIT_RETURN_IF_ERROR(WriteFile(files.html_path, HtmlReport(audit, results)));
  }
  if (!files.csv_dir.empty()) {
    MEMAUDIT_RETURN_IF_ERROR(WriteResultsCsv(results, files.csv_dir));
  }
  if (!files.privacy_meter_dir.empty()) {
    return WritePrivacyMeterExport(audit, results, files.privacy_meter_dir);
  }
  return absl::OkStatus();
}

// Writes the per-example arrays where `files` asks.
absl::Status WriteExportFiles(const v1::AuditResults& results,
                              const std::vector<v1::ExportArray>& arrays,
                              const ReportFiles& files) {
  const std::string kind = AuditKindName(results.kind());
  if (!files.export_dir.empty()) {
    MEMAUDIT_RETURN_IF_ERROR(
        WriteExportDirectory(files.export_dir, results.audit_id(), kind, arrays));
  }
  if (!files.npz_path.empty()) return WriteNpz(files.npz_path, arrays);
  return absl::OkStatus();
}

// The archive beside a results file, or the one `files` names.
std::string PerExamplePath(const std::string& results_path, const ReportFiles& files) {
  if (!files.per_example_path.empty()) return files.per_example_path;
  const size_t slash = results_path.rfind('/');
  return slash == std::string::npos
             ? kPerExampleFile
             : absl::StrCat(results_path.substr(0, slash + 1), kPerExampleFile);
}

int ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kFailedPrecondition:
      return kBadInput;
    default:
      return kUnreachable;
  }
}

int PrintError(const absl::Status& status) {
  std::fprintf(stderr, "error: %s\n", std::string(status.message()).c_str());
  if (status.code() == absl::StatusCode::kInvalidArgument) {
    std::fprintf(stderr,
                 "hint: `memaudit validate SPEC` lists every problem; docs/spec.md "
                 "describes each field\n");
  }
  return ExitCodeFor(status);
}

std::string DefaultRunDir() {
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
  return absl::StrCat("memaudit-runs/", stamp, "-", getpid());
}

// Follows an audit to its end with a progress display, showing `observe`
// each event too (if set); returns its last state. The watch is left as soon
// as the audit's last event arrives: the server would end the stream only at
// its next look (up to its re-check interval later).
absl::StatusOr<v1::Audit> Follow(Client* client, const std::string& audit_id,
                                 const std::function<void(const v1::AuditEvent&)>& observe = {}) {
  ProgressPrinter progress(stderr);
  absl::Status watched = client->Watch(audit_id, [&](const v1::AuditEvent& event) {
    progress.Update(event);
    if (observe) observe(event);
    return !EndsTheAudit(event.type());  // nothing the CLI waits for comes after
  });
  progress.Finish();
  if (!watched.ok()) return watched;
  return client->Get(audit_id);
}

int ReportOutcome(const v1::Audit& audit) {
  if (audit.state() == v1::SUCCEEDED) return kOk;
  std::fprintf(stderr, "audit %s %s%s%s\n", audit.audit_id().c_str(),
               StateName(audit.state()).c_str(), audit.error().empty() ? "" : ": ",
               audit.error().c_str());
  return kAuditUnsuccessful;
}

// A succeeded audit with gates: their lines, and the exit status of their
// verdicts (cli/gates.h); otherwise ReportOutcome's.
int GatedOutcome(Client* client, const v1::Audit& audit) {
  if (int code = ReportOutcome(audit); code != kOk) return code;
  if (audit.spec().gates_size() == 0) return kOk;
  auto results = client->Report(audit.audit_id());
  if (!results.ok()) return PrintError(results.status());
  std::printf("%s", GateLines(*results).c_str());
  return GateExitCode(*results);
}

}  // namespace

absl::StatusOr<DataRoots> LocalDataRoots(const std::vector<std::string>& given,
                                         const std::string& spec_path) {
  std::vector<std::string> roots = given;
  if (given.empty()) {
    roots = DataRoots::Defaults().roots();
    // Not for a pipe (/dev/stdin), whose directory holds no data.
    std::error_code error;
    if (std::filesystem::is_regular_file(spec_path, error)) {
      roots.push_back(std::filesystem::absolute(spec_path, error).parent_path().string());
    }
  }
  absl::StatusOr<DataRoots> resolved = DataRoots::Create(roots);
  if (!resolved.ok()) {
    return absl::Status(resolved.status().code(),
                        absl::StrCat("--data-root: ", resolved.status().message()));
  }
  return resolved;
}

int ValidateCommand(const std::string& spec_path, const std::vector<std::string>& data_roots) {
  // Unknown keys are listed with every other problem, not one at a time.
  std::vector<UnknownSpecField> unknown;
  auto spec = LoadSpecFile(spec_path, &unknown);
  if (!spec.ok()) return PrintError(spec.status());
  auto roots = LocalDataRoots(data_roots, spec_path);
  if (!roots.ok()) return PrintError(roots.status());
  std::vector<spec::SpecProblem> found = spec::PrepareSpecProblems(&*spec, *roots);
  std::vector<spec::SpecProblem> problems;
  problems.reserve(unknown.size() + found.size());
  for (UnknownSpecField& u : unknown) problems.push_back({std::move(u.field), std::move(u.rule)});
  for (spec::SpecProblem& p : found) problems.push_back(std::move(p));
  if (problems.empty()) {
    std::printf("%s: valid %s audit\n", spec_path.c_str(), spec::KindName(*spec).c_str());
    return kOk;
  }
  std::fprintf(stderr, "%s: %zu problem(s)\n", spec_path.c_str(), problems.size());
  for (const auto& p : problems)
    std::fprintf(stderr, "  %s: %s\n", p.field.c_str(), p.rule.c_str());
  return kBadInput;
}

namespace {

// Watches `memaudit run`'s workers: should every one exit while the audit
// runs (no usable device, no engine module, a crash), no task could run and
// the audit would wait for ever, so it says why, stops the services and
// ends the process. The destructor stops the cluster and joins the watch.
class WorkerWatch {
 public:
  // After the cluster's last AddWorker.
  explicit WorkerWatch(EmbeddedCluster* cluster)
      : cluster_(cluster), thread_([this] { Watch(); }) {}
  ~WorkerWatch() {
    cluster_->Stop();
    thread_.join();
  }
  WorkerWatch(const WorkerWatch&) = delete;
  WorkerWatch& operator=(const WorkerWatch&) = delete;

  // Workers that exit once the results are in lose nothing.
  void ResultsIn() { results_in_ = true; }
  // The run's own failure: PrintError's, unless the watch is reporting lost
  // workers, whose stopping of the services is what failed here; then the
  // watch ends the process and this waits for it.
  int Fail(const absl::Status& status) {
    if (lost_) {
      while (true) pause();
    }
    return PrintError(status);
  }

 private:
  void Watch() {
    const absl::Status lost = cluster_->AwaitWorkersLost();
    if (lost.ok() || results_in_) return;
    lost_ = true;
    std::fprintf(stderr, "\nerror: %s\n", std::string(lost.message()).c_str());
    cluster_->Stop();
    std::_Exit(ExitCodeFor(lost));
  }

  EmbeddedCluster* cluster_;
  std::atomic<bool> results_in_{false}, lost_{false};
  std::thread thread_;  // last: started once the rest is
};

}  // namespace

uint32_t DefaultWorkers(uint32_t threads_per_task, const std::string& device, uint32_t cores) {
  constexpr uint32_t kWorkers = 2;
  if (device != "cpu") return kWorkers;
  return std::clamp<uint32_t>(cores / std::max(1u, threads_per_task), 1, kWorkers);
}

namespace {

// -w, or DefaultWorkers for this spec on this machine.
uint32_t WorkersToStart(const RunOptions& options, const v1::AuditSpec& spec) {
  if (options.workers > 0) return options.workers;
  return DefaultWorkers(spec.resources().threads_per_task(), options.device,
                        std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

int RunCommand(const RunOptions& options) {
  RunTimings timings;
  timings.start = absl::Now();
  auto spec = LoadSpecFile(options.spec_path);
  if (!spec.ok()) return PrintError(spec.status());
  auto roots = LocalDataRoots(options.data_roots, options.spec_path);
  if (!roots.ok()) return PrintError(roots.status());
  // Check offline first: a bad spec should not cost a cluster start.
  if (absl::Status s = spec::PrepareSpec(&*spec, *roots); !s.ok()) return PrintError(s);

  for (const absl::Status& s :
       {CheckDeviceName(options.device),
        CheckMatmulPrecision(options.matmul_precision, options.device),
        CheckDeviceServesSpec(options.device, spec->resources().gpus_per_task())}) {
    if (!s.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
      return ExitCodeFor(s);
    }
  }

  ClusterOptions cluster_options;
  cluster_options.device = options.device;
  cluster_options.matmul_precision = options.matmul_precision;
  cluster_options.dir = options.dir.empty() ? DefaultRunDir() : options.dir;
  const uint32_t workers = WorkersToStart(options, *spec);
  cluster_options.workers = workers;
  cluster_options.lease_ttl_ms = options.lease_ttl_ms;
  cluster_options.data_roots = roots->roots();
  // Each worker offers what one task of this spec needs, in the numerics it
  // asks for, or the audit would wait for a worker that can never come.
  cluster_options.worker_args = {
      "--threads", absl::StrCat(std::max<uint32_t>(1, spec->resources().threads_per_task())),
      "--numerics", spec->resources().numerics()};
  std::fprintf(stderr, "starting scorer, coordinator and %u worker(s) in %s\n", workers,
               cluster_options.dir.c_str());
  // Ctrl-C or a kill stops the local services too, instead of orphaning them.
  BlockShutdownSignals();
  auto cluster = EmbeddedCluster::Start(cluster_options);
  if (!cluster.ok()) return PrintError(cluster.status());
  timings.ready = absl::Now();
  EmbeddedCluster* running = cluster->get();
  std::thread([running] {
    const int signal = WaitForShutdownSignal();
    std::fprintf(stderr, "\nsignal %d: stopping the local services\n", signal);
    running->Stop();
    std::_Exit(128 + signal);
  }).detach();
  WorkerWatch watch(running);
  auto connected =
      Client::Connect((*cluster)->coordinator_address(), (*cluster)->client_credentials());
  if (!connected.ok()) return watch.Fail(connected.status());
  auto client = std::make_unique<Client>(*std::move(connected));
  auto request_id = NewRequestId();
  if (!request_id.ok()) return watch.Fail(request_id.status());
  auto submitted = client->Submit(*spec, *request_id);
  if (!submitted.ok()) return watch.Fail(submitted.status());
  timings.submitted = absl::Now();
  std::fprintf(stderr, "audit %s: %u tasks\n", submitted->audit_id().c_str(), submitted->tasks());
  auto audit = Follow(client.get(), submitted->audit_id(),
                      [&timings](const v1::AuditEvent& event) { timings.Observe(event); });
  if (!audit.ok()) return watch.Fail(audit.status());
  if (int code = ReportOutcome(*audit); code != kOk) return code;

  // Scored before the audit's end was logged (Complete waits for the scorer).
  auto results = client->Report(submitted->audit_id());
  if (!results.ok()) return watch.Fail(results.status());
  watch.ResultsIn();
  timings.results = absl::Now();
  std::printf("%s", ResultsTable(*results).c_str());
  ReportFiles files;
  files.json_path = cluster_options.dir + "/results.json";
  files.html_path = cluster_options.dir + "/report.html";
  if (absl::Status s = WriteReportFiles(*audit, *results, files); !s.ok()) return PrintError(s);
  // The per-example arrays, so `memaudit report results.json --export` needs
  // no service later. The results stand without them: a failure only warns.
  const std::string per_example = cluster_options.dir + "/" + kPerExampleFile;
  auto arrays = client->Export(submitted->audit_id());
  absl::Status archived = arrays.ok() ? WriteExportFile(per_example, *arrays) : arrays.status();
  if (!archived.ok()) {
    std::fprintf(stderr, "warning: per-example data not archived: %s\n",
                 std::string(archived.message()).c_str());
  }
  if (!options.json_path.empty()) {
    if (absl::Status s = WriteFile(options.json_path, ToJson(*results)); !s.ok()) {
      return PrintError(s);
    }
  }
  std::fprintf(stderr, "results written to %s, report to %s\n",
               options.json_path.empty() ? files.json_path.c_str() : options.json_path.c_str(),
               files.html_path.c_str());
  std::fflush(stdout);
  timings.report = absl::Now();
  // Our connection goes first: a gRPC server's shutdown waits for its
  // clients to close their connections (or for its deadline, 2 s), and this
  // process, with no call in flight, would never read the server's GOAWAY.
  client.reset();
  (*cluster)->Stop();
  timings.stopped = absl::Now();
  if (options.timings) std::fprintf(stderr, "%s\n", timings.Line().c_str());
  return GateExitCode(*results);
}

absl::Status ResolveCredentials(RemoteOptions* remote) {
  ApplyTlsEnvironment(&remote->credentials.tls);
  if (remote->token_file.empty()) {
    if (const char* token = std::getenv("MEMAUDIT_TOKEN"); token != nullptr && token[0] != 0) {
      remote->credentials.token = token;
      return absl::OkStatus();
    }
    if (const char* file = std::getenv("MEMAUDIT_TOKEN_FILE")) remote->token_file = file;
  }
  return LoadClientToken(remote->token_file, &remote->credentials);
}

int SubmitCommand(const RemoteOptions& remote, const std::string& spec_path, bool watch,
                  const std::string& request_id) {
  auto spec = LoadSpecFile(spec_path);
  if (!spec.ok()) return PrintError(spec.status());
  std::string id = request_id;
  if (id.empty()) {
    auto fresh = NewRequestId();
    if (!fresh.ok()) return PrintError(fresh.status());
    id = *std::move(fresh);
  }
  auto connected = Client::Connect(remote.coordinator, remote.credentials);
  if (!connected.ok()) return PrintError(connected.status());
  Client& client = *connected;
  auto submitted = client.Submit(*spec, id);
  if (!submitted.ok()) return PrintError(submitted.status());
  std::printf("%s\n", submitted->audit_id().c_str());
  std::fflush(stdout);
  if (!watch) return kOk;
  auto audit = Follow(&client, submitted->audit_id());
  if (!audit.ok()) return PrintError(audit.status());
  return GatedOutcome(&client, *audit);
}

int StatusCommand(const RemoteOptions& remote, const std::string& audit_id) {
  auto format = ParseOutputFormat(remote.output);
  if (!format.ok()) return PrintError(format.status());
  auto connected = Client::Connect(remote.coordinator, remote.credentials);
  if (!connected.ok()) return PrintError(connected.status());
  Client& client = *connected;
  std::vector<v1::Audit> audits;
  if (audit_id.empty()) {
    v1::ListRequest req;
    req.set_limit(remote.limit);
    if (!remote.kind_filter.empty()) {
      const v1::AuditKind kind = ApiKind(AuditKindByName(remote.kind_filter));
      if (kind == v1::AUDIT_KIND_UNSPECIFIED) {
        return PrintError(absl::InvalidArgumentError(
            absl::StrCat("--kind: no such kind \"", remote.kind_filter, "\"")));
      }
      req.set_kind(kind);
    }
    req.set_name_contains(remote.name_filter);
    if (!remote.state_filter.empty()) {
      v1::AuditState state = v1::AUDIT_STATE_UNSPECIFIED;
      if (!v1::AuditState_Parse(absl::AsciiStrToUpper(remote.state_filter), &state)) {
        return PrintError(absl::InvalidArgumentError(
            absl::StrCat("--state: queued, running, succeeded, failed or cancelled (got \"",
                         remote.state_filter, "\")")));
      }
      req.set_state(state);
    }
    // The table shows no spec: only JSON and YAML ask for it.
    req.set_view(*format == OutputFormat::kTable ? v1::AUDIT_VIEW_SUMMARY : v1::AUDIT_VIEW_FULL);
    auto list = client.List(req);
    if (!list.ok()) return PrintError(list.status());
    audits.assign(list->audits().begin(), list->audits().end());
  } else {
    auto audit = client.Get(audit_id);
    if (!audit.ok()) return PrintError(audit.status());
    audits.push_back(*audit);
  }
  if (*format == OutputFormat::kTable) {
    for (v1::Audit& a : audits) a.clear_spec();
  }
  std::printf("%s", RenderAudits(audits, *format).c_str());
  return kOk;
}

int WatchCommand(const RemoteOptions& remote, const std::string& audit_id) {
  auto connected = Client::Connect(remote.coordinator, remote.credentials);
  if (!connected.ok()) return PrintError(connected.status());
  Client& client = *connected;
  auto audit = Follow(&client, audit_id);
  if (!audit.ok()) return PrintError(audit.status());
  return GatedOutcome(&client, *audit);
}

int CancelCommand(const RemoteOptions& remote, const std::string& audit_id) {
  auto connected = Client::Connect(remote.coordinator, remote.credentials);
  if (!connected.ok()) return PrintError(connected.status());
  Client& client = *connected;
  auto audit = client.Cancel(audit_id);
  if (!audit.ok()) return PrintError(audit.status());
  std::printf("audit %s: %s\n", audit_id.c_str(), StateName(audit->state()).c_str());
  return kOk;
}

int RevokeWorkerCommand(const RemoteOptions& remote, const std::string& worker) {
  auto connected = Client::Connect(remote.coordinator, remote.credentials);
  if (!connected.ok()) return PrintError(connected.status());
  auto revoked = connected->RevokeWorker(worker);
  if (!revoked.ok()) return PrintError(revoked.status());
  std::printf(
      "worker %s revoked: its observations are refused, %u run(s) it wrote purged from "
      "reuse\n",
      worker.c_str(), revoked->purged_runs());
  return kOk;
}

int ReportCommand(const RemoteOptions& remote, const std::string& audit_id,
                  const ReportFiles& files) {
  auto format = ParseOutputFormat(remote.output);
  if (!format.ok()) return PrintError(format.status());
  if (NamesAResultsFile(audit_id)) {
    // An archived results document: everything the report needs is in it.
    auto results = ReadResultsFile(audit_id);
    if (!results.ok()) return PrintError(results.status());
    std::printf("%s", RenderResults(*results, *format).c_str());
    const absl::Status written = WriteReportFiles(AuditOfResults(*results), *results, files);
    if (!written.ok()) return PrintError(written);
    if (!files.WantsExport()) return GateExitCode(*results);
    const std::string archive = PerExamplePath(audit_id, files);
    auto arrays = ReadExportFile(archive);
    if (!arrays.ok()) return PrintError(arrays.status());
    if (!arrays->empty() && arrays->front().audit_id() != results->audit_id()) {
      return PrintError(absl::InvalidArgumentError(absl::StrCat(
          archive, ": the per-example data of audit ", arrays->front().audit_id(), ", not of ",
          results->audit_id(), " (", audit_id, "); name the right one with --per-example")));
    }
    const absl::Status exported = WriteExportFiles(*results, *arrays, files);
    return exported.ok() ? GateExitCode(*results) : PrintError(exported);
  }
  auto connected = Client::Connect(remote.coordinator, remote.credentials);
  if (!connected.ok()) return PrintError(connected.status());
  Client& client = *connected;
  auto audit = client.Get(audit_id);
  if (!audit.ok()) return PrintError(audit.status());
  auto results = client.Report(audit_id);
  if (!results.ok()) return PrintError(results.status());
  std::printf("%s", RenderResults(*results, *format).c_str());
  if (absl::Status s = WriteReportFiles(*audit, *results, files); !s.ok()) return PrintError(s);
  if (!files.WantsExport()) return GateExitCode(*results);
  auto arrays = client.Export(audit_id);
  if (!arrays.ok()) return PrintError(arrays.status());
  if (absl::Status s = WriteExportFiles(*results, *arrays, files); !s.ok()) return PrintError(s);
  return GateExitCode(*results);
}

int DiffCommand(const RemoteOptions& remote, const std::string& old_audit,
                const std::string& new_audit, bool fail_on_regression) {
  std::unique_ptr<Client> client;
  // An archived results file, or an audit id read from the coordinator.
  auto load = [&](const std::string& which) -> absl::StatusOr<v1::AuditResults> {
    if (NamesAResultsFile(which)) return ReadResultsFile(which);
    if (client == nullptr) {
      auto connected = Client::Connect(remote.coordinator, remote.credentials);
      if (!connected.ok()) return connected.status();
      client = std::make_unique<Client>(*std::move(connected));
    }
    return client->Report(which);
  };
  auto old_results = load(old_audit);
  if (!old_results.ok()) return PrintError(old_results.status());
  auto new_results = load(new_audit);
  if (!new_results.ok()) return PrintError(new_results.status());
  auto changes = spec::DiffResults(*old_results, *new_results);
  if (!changes.ok()) return PrintError(changes.status());
  std::printf("%s", DiffTable(*changes, old_audit, new_audit).c_str());
  if (!fail_on_regression) return kOk;
  for (const spec::MetricChange& c : *changes) {
    if (c.worse) return kExitRegression;
  }
  return kOk;
}

}  // namespace memaudit::cli
