#include "common/kind_table.h"
#include "services/coordinator/exposure_spec.h"
#include "services/coordinator/forgetting_spec.h"
#include "services/coordinator/kind_handler.h"
#include "services/coordinator/membership_spec.h"
#include "services/coordinator/relational_spec.h"
#include "services/coordinator/unlearning_spec.h"

namespace memaudit::coordinator {

const KindHandler* HandlerFor(AuditKind kind) {
  static constexpr KindTable<KindHandler> kHandlers = {&MembershipHandler, &ExposureHandler,
                                                       &ForgettingHandler, &UnlearningHandler,
                                                       &RelationalHandler};
  return kHandlers.For(kind);
}

}  // namespace memaudit::coordinator
