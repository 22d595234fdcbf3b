// Fuzzes the CLI's renderers with untrusted results (what a scorer, or a
// results file, hands the client): a serialized v1::AuditResults rendered as
// the terminal table, JSON, YAML and the HTML report with its plots.
#include <cstddef>
#include <cstdint>

#include "cli/html_report.h"
#include "cli/render.h"
#include "google/protobuf/stubs/logging.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Malformed input is the point: protobuf's complaints about it are noise.
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  static_cast<void>(quiet);
  memaudit::v1::AuditResults results;
  if (!results.ParseFromArray(data, static_cast<int>(size))) return 0;
  memaudit::v1::Audit audit;
  audit.set_audit_id(results.audit_id());
  audit.set_kind(results.kind());
  for (auto format : {memaudit::cli::OutputFormat::kTable, memaudit::cli::OutputFormat::kJson,
                      memaudit::cli::OutputFormat::kYaml}) {
    memaudit::cli::RenderResults(results, format);
  }
  memaudit::cli::HtmlReport(audit, results);
  return 0;
}
