// Linked into programs that carry the engine themselves (the worker's tests):
// the tasks call it directly, nothing is loaded. They compute in portable
// numerics as memaudit-worker does by default, so their numbers equal a
// worker process's (the program restarts itself with the environment that
// pins the libraries' kernels, common/training/numerics.h).
#include "common/training/numerics.h"
#include "engine/api.h"
#include "services/worker/engine_access.h"

namespace {

const bool kLinkedEngineInstalled = [] {
  memaudit::RestartWithPortableNumerics();
  memaudit::worker::UseEngine(&memaudit::engine::LinkedEngineApi());
  return true;
}();

}  // namespace
