// One function per `memaudit` subcommand; each returns the process exit code
// (0 ok, 1 the audit failed or was cancelled, 2 bad input, 3 unreachable).
#ifndef MEMAUDIT_CLI_COMMANDS_H_
#define MEMAUDIT_CLI_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/messages/data_roots.h"
#include "common/security/tls.h"

namespace memaudit::cli {

struct RunOptions {
  std::string spec_path;
  std::string dir;  // empty = memaudit-runs/<timestamp>
  std::string json_path;
  // 0: two, or fewer on a CPU where two would share cores (DefaultWorkers).
  uint32_t workers = 0;
  int64_t lease_ttl_ms = 10000;
  std::string device = "cpu";             // the workers' --device
  std::string matmul_precision = "fp32";  // the workers' --matmul-precision
  // --data-root: the directories whose files the spec may name, passed to the
  // coordinator and the workers; empty = LocalDataRoots' defaults.
  std::vector<std::string> data_roots;
  // Print one "timings: ..." line (cli/run_timings.h) to stderr at the end.
  bool timings = false;
};

// How many workers `memaudit run` starts when -w is not given: 2, but on the
// CPU no more than the cores hold at threads_per_task threads each. More
// would share cores, and LibTorch's OpenMP threads spin while they wait:
// forgetting-inject at threads_per_task 2 on 2 cores took 18.9 s with 2
// workers against 2.6 s with 1.
uint32_t DefaultWorkers(uint32_t threads_per_task, const std::string& device, uint32_t cores);

struct RemoteOptions {
  std::string coordinator;
  std::string output = "table";
  // `memaudit status` without an audit: the listing's filters (ListRequest).
  std::string state_filter;
  std::string kind_filter;
  std::string name_filter;
  uint32_t limit = 100;
  // TLS flags and the bearer token (ResolveCredentials fills what they
  // leave open from the environment).
  ClientCredentials credentials;
  std::string token_file;
};

// Fills `remote`'s credentials from MEMAUDIT_TLS_CERT, MEMAUDIT_TLS_KEY,
// MEMAUDIT_TLS_CA, MEMAUDIT_INSECURE and MEMAUDIT_TOKEN (the token itself)
// or MEMAUDIT_TOKEN_FILE where the flags left them empty, then reads the
// token file. INVALID_ARGUMENT naming the flag when unusable.
absl::Status ResolveCredentials(RemoteOptions* remote);

// The data roots of `memaudit run` and `validate`: `given` (--data-root), or
// when none is given the Debian dataset and corpus directories present
// (DataRoots::Defaults) and the directory holding the spec file: a user
// running an audit on their own machine audits their own files.
absl::StatusOr<DataRoots> LocalDataRoots(const std::vector<std::string>& given,
                                         const std::string& spec_path);

int RunCommand(const RunOptions& options);
// Checks the spec's files against LocalDataRoots(data_roots, spec_path).
int ValidateCommand(const std::string& spec_path, const std::vector<std::string>& data_roots);
// `request_id`: SubmitRequest.request_id; empty = a fresh one (NewRequestId).
// Either way a Submit whose answer is lost is sent once more with it.
int SubmitCommand(const RemoteOptions& remote, const std::string& spec_path, bool watch,
                  const std::string& request_id = "");
int StatusCommand(const RemoteOptions& remote, const std::string& audit_id);
int WatchCommand(const RemoteOptions& remote, const std::string& audit_id);
int CancelCommand(const RemoteOptions& remote, const std::string& audit_id);
// Administrators: `memaudit revoke-worker NAME`.
int RevokeWorkerCommand(const RemoteOptions& remote, const std::string& worker);
struct ReportFiles {
  std::string json_path;
  std::string html_path;
  std::string csv_dir;
  // Membership audits: the layout ML Privacy Meter reads
  // (audits/membership/cli_privacy_meter_export.h).
  std::string privacy_meter_dir;
  // The per-example arrays (docs/export.md): .npy and CSV files in a
  // directory, or one .npz.
  std::string export_dir;
  std::string npz_path;
  // Reporting a results file: the per-example archive `memaudit run` wrote
  // beside it (default: per_example.pb in the results file's directory).
  std::string per_example_path;
  bool WantsExport() const { return !export_dir.empty() || !npz_path.empty(); }
};
// The file `memaudit run` archives an audit's per-example arrays in, beside
// results.json.
inline constexpr char kPerExampleFile[] = "per_example.pb";
int ReportCommand(const RemoteOptions& remote, const std::string& audit_id,
                  const ReportFiles& files);

// What `diff --fail-on-regression` exits with when a metric got significantly
// worse (as a failed gate: cli/gates.h).
inline constexpr int kExitRegression = 4;

// `memaudit diff OLD NEW`: each an audit id or an archived results.json
// (cli/diff.h).
int DiffCommand(const RemoteOptions& remote, const std::string& old_audit,
                const std::string& new_audit, bool fail_on_regression);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_CLI_COMMANDS_H_
