// The engine as a loadable module (libmemaudit_engine.so): its one exported
// symbol hands out the entry-point table (engine/api.h).
#include "engine/api.h"

extern "C" __attribute__((visibility("default"))) const memaudit::engine::EngineApi*
memaudit_engine_api() {
  return &memaudit::engine::LinkedEngineApi();
}
