#include "services/worker/kind_handler.h"

namespace memaudit::worker {

const KindHandler* HandlerFor(AuditKind kind) { return KindHandlerFor<KindHandler>(kind); }

}  // namespace memaudit::worker
