// Linked into programs that carry the engine themselves (the worker's tests):
// the tasks call it directly, nothing is loaded.
#include "engine/api.h"
#include "services/worker/engine_access.h"

namespace {

const bool kLinkedEngineInstalled = [] {
  memaudit::worker::UseEngine(&memaudit::engine::LinkedEngineApi());
  return true;
}();

}  // namespace
