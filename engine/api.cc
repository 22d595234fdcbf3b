#include "engine/api.h"

namespace memaudit::engine {

const EngineApi& LinkedEngineApi() {
  // Each entry by name: two entries of one type cannot be swapped unnoticed.
  static const EngineApi api = [] {
    EngineApi a;
    a.set_default_device = SetDefaultDevice;
    a.set_matmul_precision = SetMatmulPrecision;
    a.cuda_device_count = CudaDeviceCount;
    a.set_thread_devices = SetThreadDevices;
    a.numeric_environment = NumericEnvironment;
    a.run_classifiers = RunClassifiers;
    a.evaluate_torchscript_classifier = EvaluateTorchScriptClassifier;
    a.run_exposure = RunExposure;
    a.run_forgetting = RunForgetting;
    a.run_forgetting_lm = RunForgettingLm;
    a.forgetting_candidate_losses = ForgettingCandidateLosses;
    a.pick_by_loss = PickByLoss;
    a.run_unlearning = RunUnlearning;
    a.run_phone_book = RunPhoneBook;
    a.run_linear_relational = RunLinearRelational;
    a.run_dp_audit = RunDpAudit;
    a.run_lm_documents = RunLmDocuments;
    return a;
  }();
  return api;
}

}  // namespace memaudit::engine
