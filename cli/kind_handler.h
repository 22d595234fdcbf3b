// How the CLI shows each audit kind's results. Each kind implements
// KindHandler in its folder (audits/<kind>/cli_render.cc) and binds it to its kind there
// (HandlerOfKind, common/messages/kind_table.h); HandlerFor is the one dispatch on the kind.
#ifndef MEMAUDIT_CLI_KIND_HANDLER_H_
#define MEMAUDIT_CLI_KIND_HANDLER_H_

#include <string>

#include "absl/status/status.h"
#include "common/messages/audit_kinds.h"
#include "common/messages/kind_table.h"
#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

class KindHandler {
 public:
  virtual ~KindHandler() = default;

  // Complete results as the terminal table `memaudit run` and `report` print.
  virtual std::string Table(const v1::AuditResults& results) const = 0;

  // Writes the kind's CSV files into the existing directory `dir`.
  virtual absl::Status WriteCsv(const v1::AuditResults& results, const std::string& dir) const = 0;

  // The HTML report's body for complete results: plots, then numbers.
  virtual std::string HtmlSections(const v1::AuditResults& results) const = 0;

  // The report header's size rows (<tr>...</tr>); by default models x
  // examples and the member / non-member score counts.
  virtual std::string HtmlSizeRows(const v1::AuditResults& results) const;
};

// The handler of `kind`; null for KIND_NOT_SET.
const KindHandler* HandlerFor(AuditKind kind);

}  // namespace memaudit::cli

namespace memaudit {
// Each kind's file of this layer binds its handler (common/messages/kind_table.h).
MEMAUDIT_DECLARE_KIND_HANDLERS(cli::KindHandler);
}  // namespace memaudit

#endif  // MEMAUDIT_CLI_KIND_HANDLER_H_
