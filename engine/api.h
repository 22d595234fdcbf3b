// The engine's entry points that the worker calls, as one table. The worker
// does not link LibTorch: it loads the engine module (libmemaudit_engine.so,
// engine/module.cc) in the background when its first task starts, so
// LibTorch's start-up (~0.4 s of loading and static initialisers) overlaps
// the task's reading of its data (services/worker/engine_access.h). Tests
// and tools that link the engine use LinkedEngineApi().
#ifndef MEMAUDIT_ENGINE_API_H_
#define MEMAUDIT_ENGINE_API_H_

#include "engine/classifier_eval.h"
#include "engine/classifier_run.h"
#include "engine/device.h"
#include "engine/dp_audit_run.h"
#include "engine/exposure_run.h"
#include "engine/forgetting_lm_run.h"
#include "engine/forgetting_run.h"
#include "engine/lm_documents_run.h"
#include "engine/numeric_environment.h"
#include "engine/relational_run.h"
#include "engine/unlearning_run.h"

namespace memaudit::engine {

struct EngineApi {
  decltype(&SetDefaultDevice) set_default_device = nullptr;
  decltype(&SetMatmulPrecision) set_matmul_precision = nullptr;
  decltype(&CudaDeviceCount) cuda_device_count = nullptr;
  decltype(&SetThreadDevices) set_thread_devices = nullptr;
  decltype(&NumericEnvironment) numeric_environment = nullptr;
  decltype(&RunClassifiers) run_classifiers = nullptr;
  decltype(&EvaluateTorchScriptClassifier) evaluate_torchscript_classifier = nullptr;
  decltype(&RunExposure) run_exposure = nullptr;
  decltype(&RunForgetting) run_forgetting = nullptr;
  decltype(&RunForgettingLm) run_forgetting_lm = nullptr;
  decltype(&ForgettingCandidateLosses) forgetting_candidate_losses = nullptr;
  decltype(&PickByLoss) pick_by_loss = nullptr;
  decltype(&RunUnlearning) run_unlearning = nullptr;
  decltype(&RunPhoneBook) run_phone_book = nullptr;
  decltype(&RunLinearRelational) run_linear_relational = nullptr;
  decltype(&RunDpAudit) run_dp_audit = nullptr;
  decltype(&RunLmDocuments) run_lm_documents = nullptr;
};

// The table of the engine linked into this program.
const EngineApi& LinkedEngineApi();

}  // namespace memaudit::engine

// What the module exports (dlsym): the name and its type.
inline constexpr char kEngineApiSymbol[] = "memaudit_engine_api";
using EngineApiFunction = const memaudit::engine::EngineApi* (*)();

#endif  // MEMAUDIT_ENGINE_API_H_
