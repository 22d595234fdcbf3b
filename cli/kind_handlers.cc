#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/exposure_render.h"
#include "cli/forgetting_render.h"
#include "cli/kind_handler.h"
#include "cli/membership_render.h"
#include "cli/relational_render.h"
#include "cli/unlearning_render.h"
#include "common/kind_table.h"

namespace memaudit::cli {

std::string KindHandler::HtmlSizeRows(const v1::AuditResults& results) const {
  return absl::StrCat(
      absl::StrFormat("<tr><th>models &times; examples</th><td>%u &times; %u</td></tr>",
                      results.models(), results.examples()),
      absl::StrFormat("<tr><th>member / non-member scores</th><td>%d / %d</td></tr>",
                      results.members(), results.non_members()));
}

const KindHandler* HandlerFor(AuditKind kind) {
  static constexpr KindTable<KindHandler> kHandlers = {&MembershipHandler, &ExposureHandler,
                                                       &ForgettingHandler, &UnlearningHandler,
                                                       &RelationalHandler};
  return kHandlers.For(kind);
}

}  // namespace memaudit::cli
