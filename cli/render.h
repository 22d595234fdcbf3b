// How the CLI shows things: result tables, audit listings (table, JSON or
// YAML) and a live progress line.
#ifndef MEMAUDIT_CLI_RENDER_H_
#define MEMAUDIT_CLI_RENDER_H_

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "memaudit/v1/audit.pb.h"
#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

enum class OutputFormat { kTable, kJson, kYaml };
absl::StatusOr<OutputFormat> ParseOutputFormat(const std::string& name);

// Any message as JSON with proto field names and defaults spelled out.
std::string ToJson(const google::protobuf::Message& message);
std::string JsonToYaml(const std::string& json);

// Escapes & < > " for HTML text and attribute values.
std::string HtmlEscape(absl::string_view text);
// Writes `text` to `path` (truncating); PERMISSION_DENIED "cannot write PATH".
absl::Status WriteFile(const std::string& path, const std::string& text);

std::string ResultsTable(const v1::AuditResults& results);
// How the audit's models computed (resources.numerics, common/training/numerics.h).
std::string NumericsLine(const v1::Resources& resources);
std::string RenderResults(const v1::AuditResults& results, OutputFormat format);
std::string RenderAudits(const std::vector<v1::Audit>& audits, OutputFormat format);
std::string StateName(v1::AuditState state);
// A canary's insertion count as tables and plots print it: "control" for a
// never-inserted canary, else "x<repeats>".
std::string InsertedLabel(uint32_t repeats);

// Draws "[####....] 12/16 tasks  2,301/3,000 steps  41 steps/s  ETA 0:17" in
// place on a terminal; on anything else prints only task-level events.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::FILE* out);
  void Update(const v1::AuditEvent& event);
  void Finish();

 private:
  std::FILE* out_;
  bool tty_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  uint64_t rate_steps_ = 0;
  std::chrono::steady_clock::time_point rate_time_;
  double steps_per_second_ = 0;
};

}  // namespace memaudit::cli

#endif  // MEMAUDIT_CLI_RENDER_H_
