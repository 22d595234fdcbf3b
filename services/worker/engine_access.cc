#include "services/worker/engine_access.h"

#include <dlfcn.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/base/process.h"
#include "common/training/numerics.h"

namespace memaudit::worker {
namespace {

struct EngineState {
  absl::Mutex mu;
  const engine::EngineApi* api ABSL_GUARDED_BY(mu) = nullptr;
  std::string module_path ABSL_GUARDED_BY(mu);
  bool loading ABSL_GUARDED_BY(mu) = false;
};

EngineState& State() {
  static EngineState* state = new EngineState();
  return *state;
}

[[noreturn]] void ExitWithoutEngine(const std::string& why) {
  spdlog::critical("engine module: {}", why);
  spdlog::shutdown();
  std::fflush(nullptr);
  std::_Exit(1);
}

void Load(const std::string& path) {
  // RTLD_LAZY: binding every symbol of LibTorch's libraries now would double
  // the load; RTLD_LOCAL: the module's copies of shared code stay its own.
  void* module = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (module == nullptr) ExitWithoutEngine(dlerror());
  auto api = reinterpret_cast<EngineApiFunction>(dlsym(module, kEngineApiSymbol));
  if (api == nullptr) ExitWithoutEngine(absl::StrCat(path, " exports no ", kEngineApiSymbol));
  UseEngine(api());
}

}  // namespace

void UseEngine(const engine::EngineApi* api) {
  EngineState& s = State();
  absl::MutexLock lock(&s.mu);
  s.api = api;
}

std::vector<std::string> EngineModulePaths() {
  const std::string dir = ExecutableDir();
  return {dir + "/libmemaudit_engine.so", dir + "/../lib/memaudit/libmemaudit_engine.so"};
}

absl::Status SetEngineModule(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    if (access(path.c_str(), R_OK) == 0) {
      EngineState& s = State();
      absl::MutexLock lock(&s.mu);
      s.module_path = path;
      return absl::OkStatus();
    }
  }
  return absl::NotFoundError(
      absl::StrCat("engine module: libmemaudit_engine.so not found (looked for ",
                   absl::StrJoin(paths, ", "), ")"));
}

void PrepareEngine() {
  EngineState& s = State();
  absl::MutexLock lock(&s.mu);
  if (s.api != nullptr || s.loading) return;
  if (s.module_path.empty()) ExitWithoutEngine("none installed and no module named");
  s.loading = true;
  std::thread(Load, s.module_path).detach();
}

const engine::EngineApi& Engine() {
  PrepareEngine();
  EngineState& s = State();
  absl::MutexLock lock(&s.mu);
  s.mu.Await(absl::Condition(
      +[](const engine::EngineApi** api) { return *api != nullptr; }, &s.api));
  return *s.api;
}

std::string TrainingEnvironment() {
  // Read once: the device, the precision and the libraries' kernels are
  // fixed at start, and LibTorch's show_config builds a long text.
  static const std::string environment = [] {
    const engine::EngineApi& engine = Engine();
    if (engine.numeric_environment == nullptr) return std::string();
    std::string text = engine.numeric_environment();
    text.resize(std::min(text.size(), kMaxNumericEnvironmentBytes));
    for (char& c : text) {
      if (c < 0x20 || c > 0x7e) c = '?';
    }
    return text;
  }();
  return environment;
}

}  // namespace memaudit::worker
