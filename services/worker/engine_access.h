// Which engine the worker's tasks call (engine/api.h). memaudit-worker names
// its engine module at start (SetEngineModule) and loads it when its first
// task begins, on a thread of its own, while the task reads its data; the
// engine's first call waits for it. Programs that link the engine (tests)
// install LinkedEngineApi() instead (linked_engine.cc).
//
// Why not load at start: glibc holds its loader locks while the module's
// constructors run (LibTorch's, ~0.3 s), and thread creation waits for them,
// so a load in progress stalls whatever starts a thread (the metrics
// endpoint, the task's own thread). Once the task's thread runs, nothing on
// its path to training starts one.
#ifndef MEMAUDIT_SERVICES_WORKER_ENGINE_ACCESS_H_
#define MEMAUDIT_SERVICES_WORKER_ENGINE_ACCESS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/api.h"

namespace memaudit::worker {

// Installs `api` (before any task runs).
void UseEngine(const engine::EngineApi* api);

// Where memaudit-worker looks for the module: beside its executable (a build
// tree), then ../lib/memaudit/ (an installation).
std::vector<std::string> EngineModulePaths();

// Chooses the first of `paths` that exists as the module to load; NOT_FOUND
// naming them when none does.
absl::Status SetEngineModule(const std::vector<std::string>& paths);

// Starts loading the chosen module on its own thread, once; nothing when an
// engine is installed or loading already. A module that cannot be loaded
// ends the process (exit 1, logged): a worker without its engine can train
// nothing.
void PrepareEngine();

// The engine: starts loading it if need be, and waits for it.
const engine::EngineApi& Engine();

// The engine's numeric environment (engine/numeric_environment.h), read
// once per process (it is fixed at start), cut to
// what CompleteRequest.numeric_environment holds (printable ASCII, at most
// kMaxNumericEnvironmentBytes); "" for an engine that cannot tell.
std::string TrainingEnvironment();

}  // namespace memaudit::worker

#endif  // MEMAUDIT_SERVICES_WORKER_ENGINE_ACCESS_H_
