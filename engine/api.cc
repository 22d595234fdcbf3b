#include "engine/api.h"

namespace memaudit::engine {

const EngineApi& LinkedEngineApi() {
  static const EngineApi api{
      SetDefaultDevice, SetMatmulPrecision, RunClassifiers,  EvaluateTorchScriptClassifier,
      RunExposure,      RunForgetting,      RunForgettingLm, ForgettingCandidateLosses,
      PickByLoss,       RunUnlearning,      RunPhoneBook,    RunLinearRelational};
  return api;
}

}  // namespace memaudit::engine
