#include "common/kind_table.h"
#include "services/worker/exposure_task.h"
#include "services/worker/forgetting_task.h"
#include "services/worker/kind_handler.h"
#include "services/worker/membership_task.h"
#include "services/worker/relational_task.h"
#include "services/worker/unlearning_task.h"

namespace memaudit::worker {

const KindHandler* HandlerFor(AuditKind kind) {
  static constexpr KindTable<KindHandler> kHandlers = {&MembershipHandler, &ExposureHandler,
                                                       &ForgettingHandler, &UnlearningHandler,
                                                       &RelationalHandler};
  return kHandlers.For(kind);
}

}  // namespace memaudit::worker
