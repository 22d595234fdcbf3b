#include "services/scorer/kind_handler.h"

namespace memaudit::scorer {

const KindHandler* HandlerFor(AuditKind kind) { return KindHandlerFor<KindHandler>(kind); }

}  // namespace memaudit::scorer
