#include "spec/kind_handler.h"

namespace memaudit::spec {

const KindHandler* HandlerFor(AuditKind kind) { return KindHandlerFor<KindHandler>(kind); }

}  // namespace memaudit::spec
