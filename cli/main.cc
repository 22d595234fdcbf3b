// memaudit: the command-line client. Parses flags and dispatches to a command.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/command_line.h"
#include "cli/commands.h"
#include "common/base/version.h"
#include "common/messages/data_roots.h"

namespace {

using namespace memaudit::cli;

std::string LocalRootsDefault() {
  return absl::StrCat(absl::StrJoin(memaudit::kDefaultDataRoots, ", "),
                      " (those present) and the spec file's directory");
}

// --coordinator, the credentials and, for commands that print audits, -o.
void AddRemoteFlags(CLI::App* cmd, RemoteOptions* remote, bool with_output) {
  cmd->add_option("--coordinator", remote->coordinator,
                  "coordinator address (env MEMAUDIT_COORDINATOR)")
      ->capture_default_str();
  // Env: MEMAUDIT_TLS_CA, MEMAUDIT_TLS_CERT, MEMAUDIT_TLS_KEY, MEMAUDIT_TOKEN(_FILE).
  AddClientCredentialFlags(cmd, &remote->credentials, &remote->token_file);
  if (with_output) {
    cmd->add_option("-o,--output", remote->output, "table, json or yaml")
        ->capture_default_str()
        ->check(CLI::IsMember({"table", "json", "yaml"}));
  }
}

CLI::App* AddRunCommand(CLI::App* app, RunOptions* run) {
  CLI::App* cmd = app->add_subcommand(
      "run",
      "Run an audit end to end on this machine: starts a scorer, a coordinator and "
      "workers on loopback, shows progress, prints the results and stops everything.");
  cmd->add_option("spec", run->spec_path, "audit spec (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-w,--workers", run->workers,
                  "worker processes to start (default: 2, or 1 when two would share the cores: "
                  "resources.threads_per_task times 2 above the CPU count)")
      ->check(CLI::Range(1u, 256u));
  cmd->add_option("--dir", run->dir,
                  "directory for databases, logs and results.json "
                  "(default: memaudit-runs/<timestamp>)");
  cmd->add_option("--json", run->json_path, "also write the results JSON here");
  cmd->add_option("--lease-ttl-ms", run->lease_ttl_ms, "how long a silent worker keeps its task")
      ->capture_default_str();
  cmd->add_option("--device", run->device,
                  "where the workers train: cpu, cuda, cuda:N, or auto (CUDA when present)")
      ->capture_default_str();
  cmd->add_option("--matmul-precision", run->matmul_precision,
                  "how the workers run float32 products on CUDA: fp32 (exact), tf32 or bf16 "
                  "(faster, different results; docs/engine.md)")
      ->capture_default_str();
  cmd->add_option("--data-root", run->data_roots,
                  absl::StrCat(memaudit::kDataRootFlagHelp,
                               "; passed to the coordinator and the workers (default: ",
                               LocalRootsDefault(), ")"));
  cmd->add_flag(
      "--timings", run->timings,
      "at the end, print one line to stderr of where the time went, in seconds: "
      "\"timings: start_s=... submit_s=... first_lease_s=... tasks_s=... scoring_s=... "
      "report_s=... shutdown_s=... overhead_s=... total_s=...\" (start_s: until the scorer "
      "and coordinator serve; first_lease_s: from the start to the first task leased; "
      "tasks_s: to the last task's end; scoring_s: to the results in hand; report_s: "
      "printing and writing them; shutdown_s: stopping every process; overhead_s: "
      "first_lease_s plus results to stopped; nan: did not happen; docs/results.md)");
  return cmd;
}

CLI::App* AddValidateCommand(CLI::App* app, std::string* spec_path,
                             std::vector<std::string>* roots) {
  CLI::App* cmd =
      app->add_subcommand("validate", "Check a spec offline and explain every problem.");
  cmd->add_option("spec", *spec_path, "audit spec (YAML)")->required();
  cmd->add_option("--data-root", *roots,
                  absl::StrCat(memaudit::kDataRootFlagHelp,
                               "; check the spec's files against these (default: what `memaudit "
                               "run` allows: ",
                               LocalRootsDefault(), ")"));
  return cmd;
}

CLI::App* AddSubmitCommand(CLI::App* app, std::string* spec_path, bool* watch,
                           std::string* request_id) {
  CLI::App* cmd =
      app->add_subcommand("submit", "Submit a spec to a running coordinator; prints the audit id.");
  cmd->add_option("spec", *spec_path, "audit spec (YAML)")->required()->check(CLI::ExistingFile);
  cmd->add_flag("--watch", *watch, "follow progress until the audit ends");
  cmd->add_option(
      "--request-id", *request_id,
      "idempotency key (at most 128 printable ASCII characters, no spaces): submitting again "
      "with the same key and spec prints the audit the first submit created instead of "
      "starting another (default: a random key, used for the one automatic retry)");
  return cmd;
}

CLI::App* AddReportCommand(CLI::App* app, std::string* audit_id, ReportFiles* files) {
  CLI::App* cmd = app->add_subcommand(
      "report",
      "Print an audit's scored results; optionally write JSON, HTML and CSV. Given a "
      "results file (results.json of `memaudit run`, or --json of an earlier report) "
      "instead of an audit id, it needs no service.");
  cmd->add_option("audit", *audit_id, "audit id, or a results JSON file")->required();
  cmd->add_option("--json", files->json_path, "write the results JSON here");
  cmd->add_option("--html", files->html_path,
                  "write a self-contained HTML report (inline SVG plots) here");
  cmd->add_option("--csv", files->csv_dir,
                  "write attacks.csv, operating_points.csv and roc.csv into this directory");
  cmd->add_option("--privacy-meter", files->privacy_meter_dir,
                  "membership audits: write models/models_metadata.json and "
                  "models/memberships.npy (ML Privacy Meter's layout) into this directory");
  cmd->add_option("--export", files->export_dir,
                  "write the per-example data (scores, signals, posteriors, per-trial metrics; "
                  "docs/export.md) as <name>.npy and <name>.csv files with schema.json into "
                  "this directory");
  cmd->add_option("--npz", files->npz_path, "write the per-example data as one .npz file");
  cmd->add_option("--per-example", files->per_example_path,
                  "with a results file: the per-example archive `memaudit run` wrote (default: "
                  "per_example.pb beside the results file)");
  return cmd;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "memaudit audits how much a training recipe memorizes: it trains the models an audit\n"
      "needs, scores membership inference against them, and reports the numbers.\n\n"
      "Start here:  memaudit run examples/quickstart.yaml\n"
      "Docs:        docs/ (spec fields: docs/spec.md)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "memaudit " + memaudit::CodeVersion());

  RemoteOptions remote;
  const char* env = std::getenv("MEMAUDIT_COORDINATOR");
  remote.coordinator = env != nullptr ? env : "127.0.0.1:7400";

  RunOptions run;
  CLI::App* run_cmd = AddRunCommand(&app, &run);
  std::string spec_path;
  std::vector<std::string> validate_roots;
  CLI::App* validate_cmd = AddValidateCommand(&app, &spec_path, &validate_roots);
  bool watch = false;
  std::string request_id;
  CLI::App* submit_cmd = AddSubmitCommand(&app, &spec_path, &watch, &request_id);
  AddRemoteFlags(submit_cmd, &remote, false);

  std::string audit_id;
  CLI::App* status_cmd =
      app.add_subcommand("status", "Show one audit, or list recent audits when none is named.");
  status_cmd->add_option("audit", audit_id, "audit id");
  status_cmd->add_option("--state", remote.state_filter,
                         "list only audits in this state (queued, running, succeeded, failed, "
                         "cancelled)");
  status_cmd->add_option("--kind", remote.kind_filter, "list only audits of this kind");
  status_cmd->add_option("--name", remote.name_filter, "list only audits whose name contains this");
  status_cmd->add_option("--limit", remote.limit, "list at most this many audits")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1000u));
  AddRemoteFlags(status_cmd, &remote, true);
  CLI::App* watch_cmd = app.add_subcommand("watch", "Follow an audit's progress until it ends.");
  watch_cmd->add_option("audit", audit_id, "audit id")->required();
  AddRemoteFlags(watch_cmd, &remote, false);
  CLI::App* cancel_cmd = app.add_subcommand("cancel", "Cancel an audit; workers stop its tasks.");
  cancel_cmd->add_option("audit", audit_id, "audit id")->required();
  AddRemoteFlags(cancel_cmd, &remote, false);
  std::string worker_name;
  CLI::App* revoke_cmd = app.add_subcommand(
      "revoke-worker",
      "Administrators: stop trusting a worker identity; its observations are refused and the "
      "runs it wrote are never reused.");
  revoke_cmd->add_option("worker", worker_name, "the worker identity's name (certificate CN)")
      ->required();
  AddRemoteFlags(revoke_cmd, &remote, false);
  ReportFiles report_files;
  CLI::App* report_cmd = AddReportCommand(&app, &audit_id, &report_files);
  AddRemoteFlags(report_cmd, &remote, true);

  std::string old_audit, new_audit;
  bool fail_on_regression = false;
  CLI::App* diff_cmd = app.add_subcommand(
      "diff",
      "Compare two audits of one kind: every metric side by side with its 95% interval, the "
      "difference with an interval for it, and which changed significantly.");
  diff_cmd->add_option("old", old_audit, "audit id, or a results JSON file")->required();
  diff_cmd->add_option("new", new_audit, "audit id, or a results JSON file")->required();
  diff_cmd->add_flag("--fail-on-regression", fail_on_regression,
                     "exit 4 when a privacy metric got significantly worse");
  AddRemoteFlags(diff_cmd, &remote, true);

  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;
  if (*run_cmd) return RunCommand(run);
  if (*validate_cmd) return ValidateCommand(spec_path, validate_roots);
  if (absl::Status s = ResolveCredentials(&remote); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  if (*submit_cmd) return SubmitCommand(remote, spec_path, watch, request_id);
  if (*status_cmd) return StatusCommand(remote, audit_id);
  if (*watch_cmd) return WatchCommand(remote, audit_id);
  if (*cancel_cmd) return CancelCommand(remote, audit_id);
  if (*revoke_cmd) return RevokeWorkerCommand(remote, worker_name);
  if (*report_cmd) return ReportCommand(remote, audit_id, report_files);
  if (*diff_cmd) return DiffCommand(remote, old_audit, new_audit, fail_on_regression);
  return 2;
}
