#include "common/kind_table.h"
#include "spec/exposure_spec.h"
#include "spec/forgetting_spec.h"
#include "spec/kind_handler.h"
#include "spec/membership_spec.h"
#include "spec/relational_spec.h"
#include "spec/unlearning_spec.h"

namespace memaudit::spec {

const KindHandler* HandlerFor(AuditKind kind) {
  static constexpr KindTable<KindHandler> kHandlers = {&MembershipHandler, &ExposureHandler,
                                                       &ForgettingHandler, &UnlearningHandler,
                                                       &RelationalHandler};
  return kHandlers.For(kind);
}

}  // namespace memaudit::spec
