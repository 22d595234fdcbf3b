// One function per `memaudit` subcommand; each returns the process exit code
// (0 ok, 1 the audit failed or was cancelled, 2 bad input, 3 unreachable).
#ifndef MEMAUDIT_CLI_COMMANDS_H_
#define MEMAUDIT_CLI_COMMANDS_H_

#include <string>

namespace memaudit::cli {

struct RunOptions {
  std::string spec_path;
  std::string dir;  // empty = memaudit-runs/<timestamp>
  std::string json_path;
  uint32_t workers = 2;
  int64_t lease_ttl_ms = 10000;
  std::string device = "cpu";  // the workers' --device
};

struct RemoteOptions {
  std::string coordinator;
  std::string output = "table";
};

int RunCommand(const RunOptions& options);
int ValidateCommand(const std::string& spec_path);
int SubmitCommand(const RemoteOptions& remote, const std::string& spec_path, bool watch);
int StatusCommand(const RemoteOptions& remote, const std::string& audit_id);
int WatchCommand(const RemoteOptions& remote, const std::string& audit_id);
int CancelCommand(const RemoteOptions& remote, const std::string& audit_id);
struct ReportFiles {
  std::string json_path;
  std::string html_path;
  std::string csv_dir;
  // Membership audits: the layout ML Privacy Meter reads (privacy_meter_export.h).
  std::string privacy_meter_dir;
};
int ReportCommand(const RemoteOptions& remote, const std::string& audit_id,
                  const ReportFiles& files);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_CLI_COMMANDS_H_
