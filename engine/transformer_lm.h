// A decoder-only transformer language model (GPT-style): token and learned
// position embeddings, pre-norm blocks of causal multi-head self-attention
// and a GELU feed-forward layer, a final layer norm and an output layer tied
// to the token embedding. Its LmState keeps every layer's keys and values, so
// a search step feeds one token per state: its projections and feed-forward
// layers cost the same at any depth and its attention reads the cached
// prefix, instead of running the whole prefix again.
#ifndef MEMAUDIT_ENGINE_TRANSFORMER_LM_H_
#define MEMAUDIT_ENGINE_TRANSFORMER_LM_H_

#include <string>
#include <vector>

#include "engine/language_model.h"
#include "engine/torch_api.h"

namespace memaudit::engine {

class TransformerLm : public LanguageModel {
 public:
  // `width` the embedding and residual width (divisible by `heads`),
  // `feed_forward` the hidden width of each block's feed-forward layer,
  // `context` the number of positions (the longest sequence it can take).
  TransformerLm(int64_t vocab, int64_t width, int64_t layers, int64_t heads, int64_t feed_forward,
                int64_t context, double dropout);

  // Feeds tokens [B, T] after the cached keys and values of `state` (none:
  // from position 0); returns logits [B, T, vocab] and extends the cache.
  // Fails (c10::Error) past `context` positions.
  torch::Tensor Run(const torch::Tensor& tokens, LmState* state) override;
  // From the empty state, keeping no cache: what training runs.
  torch::Tensor Forward(const torch::Tensor& x) override;

  int64_t vocab() const override { return vocab_; }
  int64_t context() const { return context_; }

 private:
  // A layer norm's scale and shift (torch::layer_norm with these, rather
  // than the module, keeps nn/modules/normalization.h out of the engine's
  // precompiled header).
  struct Norm {
    torch::Tensor weight, bias;
  };
  struct Block {
    Norm attention_norm;
    torch::nn::Linear query_key_value{nullptr};
    torch::nn::Linear attention_out{nullptr};
    Norm feed_forward_norm;
    torch::nn::Linear feed_forward_in{nullptr};
    torch::nn::Linear feed_forward_out{nullptr};
  };
  Norm RegisterNorm(const std::string& name);
  torch::Tensor ApplyNorm(const Norm& norm, const torch::Tensor& x) const;
  // One block on x [B, T, width] after the shared prefix's keys and values
  // [1, S, width] (undefined: none) and each row's own `keys` and `values`
  // [B, P, width] (undefined when P is 0), which become [B, P+T, width].
  // Run; with `keep_cache` false the state is left as it was (training needs
  // no cache, and stacking every layer's keys and values each step costs).
  torch::Tensor Feed(const torch::Tensor& tokens, LmState* state, bool keep_cache);
  torch::Tensor RunBlock(Block& block, const torch::Tensor& x, const torch::Tensor& shared_keys,
                         const torch::Tensor& shared_values, torch::Tensor* keys,
                         torch::Tensor* values);

  int64_t vocab_, width_, heads_, context_;
  double dropout_;
  torch::nn::Embedding token_embedding_{nullptr};
  torch::nn::Embedding position_embedding_{nullptr};
  std::vector<Block> blocks_;
  Norm final_norm_;
};

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_TRANSFORMER_LM_H_
