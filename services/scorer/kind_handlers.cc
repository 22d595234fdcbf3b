#include "common/kind_table.h"
#include "services/scorer/exposure_metrics.h"
#include "services/scorer/forgetting_metrics.h"
#include "services/scorer/kind_handler.h"
#include "services/scorer/membership_metrics.h"
#include "services/scorer/relational_metrics.h"
#include "services/scorer/unlearning_metrics.h"

namespace memaudit::scorer {

const KindHandler* HandlerFor(AuditKind kind) {
  static constexpr KindTable<KindHandler> kHandlers = {&MembershipHandler, &ExposureHandler,
                                                       &ForgettingHandler, &UnlearningHandler,
                                                       &RelationalHandler};
  return kHandlers.For(kind);
}

}  // namespace memaudit::scorer
