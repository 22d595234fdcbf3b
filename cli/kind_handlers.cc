#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/kind_handler.h"

namespace memaudit::cli {

std::string KindHandler::HtmlSizeRows(const v1::AuditResults& results) const {
  return absl::StrCat(
      absl::StrFormat("<tr><th>models &times; examples</th><td>%u &times; %u</td></tr>",
                      results.models(), results.examples()),
      absl::StrFormat("<tr><th>member / non-member scores</th><td>%d / %d</td></tr>",
                      results.members(), results.non_members()));
}

const KindHandler* HandlerFor(AuditKind kind) { return KindHandlerFor<KindHandler>(kind); }

}  // namespace memaudit::cli
