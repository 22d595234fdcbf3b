// A language model that keeps the tokens fed and runs another model on the
// whole prefix at every step: a search without the inner model's state (for
// the transformer, without its key/value cache). The reference the cached
// search is tested and benchmarked against.
#ifndef MEMAUDIT_ENGINE_RECOMPUTING_LM_H_
#define MEMAUDIT_ENGINE_RECOMPUTING_LM_H_

#include "engine/language_model.h"
#include "engine/torch_api.h"

namespace memaudit::engine {

class RecomputingLm : public LanguageModel {
 public:
  explicit RecomputingLm(LanguageModel& inner) : inner_(inner) {}
  torch::Tensor Run(const torch::Tensor& tokens, LmState* state) override {
    const torch::Tensor full =
        state->tokens.defined() ? torch::cat({state->tokens, tokens}, 1) : tokens;
    state->tokens = full;
    LmState fresh;
    return inner_.Run(full, &fresh).slice(1, full.size(1) - tokens.size(1));
  }
  int64_t vocab() const override { return inner_.vocab(); }

 private:
  LanguageModel& inner_;
};

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_RECOMPUTING_LM_H_
