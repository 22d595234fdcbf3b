#include "engine/transformer_lm.h"

#include <cmath>
#include <limits>
#include <string>

namespace memaudit::engine {
namespace {

// GPT-2's initialisation: N(0, 0.02) weights, zero biases, and the layers
// that write into the residual stream scaled by 1/sqrt(2 layers) so that its
// variance does not grow with depth. LibTorch's defaults (N(0, 1) embeddings)
// would start a tied output layer at huge logits.
constexpr double kInitStd = 0.02;

void InitLinear(torch::nn::Linear& layer, double std) {
  torch::NoGradGuard no_grad;
  layer->weight.normal_(0.0, std);
  layer->bias.zero_();
}

}  // namespace

TransformerLm::TransformerLm(int64_t vocab, int64_t width, int64_t layers, int64_t heads,
                             int64_t feed_forward, int64_t context, double dropout)
    : vocab_(vocab), width_(width), heads_(heads), context_(context), dropout_(dropout) {
  TORCH_CHECK(heads > 0 && width % heads == 0, "transformer: width ", width,
              " is not divisible by heads ", heads);
  token_embedding_ = register_module("token_embedding", torch::nn::Embedding(vocab, width));
  position_embedding_ = register_module("position_embedding", torch::nn::Embedding(context, width));
  {
    torch::NoGradGuard no_grad;
    token_embedding_->weight.normal_(0.0, kInitStd);
    position_embedding_->weight.normal_(0.0, kInitStd);
  }
  const double residual_std = kInitStd / std::sqrt(2.0 * static_cast<double>(layers));
  for (int64_t l = 0; l < layers; ++l) {
    const std::string name = "block" + std::to_string(l) + "_";
    Block b;
    b.attention_norm = RegisterNorm(name + "attention_norm");
    b.query_key_value =
        register_module(name + "query_key_value", torch::nn::Linear(width, 3 * width));
    b.attention_out = register_module(name + "attention_out", torch::nn::Linear(width, width));
    b.feed_forward_norm = RegisterNorm(name + "feed_forward_norm");
    b.feed_forward_in =
        register_module(name + "feed_forward_in", torch::nn::Linear(width, feed_forward));
    b.feed_forward_out =
        register_module(name + "feed_forward_out", torch::nn::Linear(feed_forward, width));
    InitLinear(b.query_key_value, kInitStd);
    InitLinear(b.attention_out, residual_std);
    InitLinear(b.feed_forward_in, kInitStd);
    InitLinear(b.feed_forward_out, residual_std);
    blocks_.push_back(b);
  }
  final_norm_ = RegisterNorm("final_norm");
}

TransformerLm::Norm TransformerLm::RegisterNorm(const std::string& name) {
  return {register_parameter(name + "_weight", torch::ones({width_})),
          register_parameter(name + "_bias", torch::zeros({width_}))};
}

torch::Tensor TransformerLm::ApplyNorm(const Norm& norm, const torch::Tensor& x) const {
  return torch::layer_norm(x, {width_}, norm.weight, norm.bias, /*eps=*/1e-5);
}

torch::Tensor TransformerLm::RunBlock(Block& block, const torch::Tensor& x,
                                      const torch::Tensor& shared_keys,
                                      const torch::Tensor& shared_values, torch::Tensor* keys,
                                      torch::Tensor* values) {
  const int64_t batch = x.size(0), length = x.size(1), head_width = width_ / heads_;
  std::vector<torch::Tensor> qkv =
      block.query_key_value->forward(ApplyNorm(block.attention_norm, x)).split(width_, /*dim=*/2);
  const int64_t own = keys->defined() ? keys->size(1) : 0;
  *keys = own > 0 ? torch::cat({*keys, qkv[1]}, 1) : qkv[1];
  *values = own > 0 ? torch::cat({*values, qkv[2]}, 1) : qkv[2];
  // [rows, heads, positions, head width]
  const auto split_heads = [&](const torch::Tensor& t) {
    return t.reshape({t.size(0), t.size(1), heads_, head_width}).transpose(1, 2);
  };
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_width));
  const torch::Tensor q = split_heads(qkv[0]);
  const torch::Tensor v = split_heads(*values);
  torch::Tensor scores = torch::matmul(q, split_heads(*keys).transpose(2, 3)) * scale;
  if (length > 1) {
    // Query i sees the row's own keys 0..own + i (every shared key precedes it).
    const auto options = torch::TensorOptions().dtype(torch::kLong).device(x.device());
    const torch::Tensor query_pos = torch::arange(own, own + length, options);
    const torch::Tensor key_pos = torch::arange(own + length, options);
    const torch::Tensor future = key_pos.unsqueeze(0) > query_pos.unsqueeze(1);  // [T, own + T]
    scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
  }
  torch::Tensor attended;
  if (shared_keys.defined()) {
    // One copy of the shared prefix's keys and values, broadcast over rows.
    const int64_t shared = shared_keys.size(1);
    const torch::Tensor weights = torch::softmax(
        torch::cat({torch::matmul(q, split_heads(shared_keys).transpose(2, 3)) * scale, scores},
                   -1),
        -1);
    attended = torch::matmul(weights.slice(3, 0, shared), split_heads(shared_values)) +
               torch::matmul(weights.slice(3, shared), v);
  } else {
    attended = torch::matmul(torch::softmax(scores, -1), v);
  }
  attended = attended.transpose(1, 2).reshape({batch, length, width_});
  torch::Tensor h = x + Dropout(block.attention_out->forward(attended), dropout_);
  const torch::Tensor ff = block.feed_forward_out->forward(
      torch::gelu(block.feed_forward_in->forward(ApplyNorm(block.feed_forward_norm, h))));
  return h + Dropout(ff, dropout_);
}

torch::Tensor TransformerLm::Run(const torch::Tensor& tokens, LmState* state) {
  return Feed(tokens, state, /*keep_cache=*/true);
}

torch::Tensor TransformerLm::Forward(const torch::Tensor& x) {
  LmState empty;
  return Feed(x, &empty, /*keep_cache=*/false);
}

torch::Tensor TransformerLm::Feed(const torch::Tensor& tokens, LmState* state, bool keep_cache) {
  const bool shared = state->shared_keys.defined();
  const int64_t own = state->keys.defined() ? state->keys.size(2) : 0;
  const int64_t past = own + (shared ? state->shared_keys.size(2) : 0);
  const int64_t length = tokens.size(1);
  TORCH_CHECK(past + length <= context_, "transformer: ", past + length,
              " positions exceed its context of ", context_);
  const torch::Tensor positions = torch::arange(
      past, past + length, torch::TensorOptions().dtype(torch::kLong).device(tokens.device()));
  torch::Tensor x = token_embedding_->forward(tokens) + position_embedding_->forward(positions);
  x = Dropout(x, dropout_);
  std::vector<torch::Tensor> keys, values;
  for (size_t l = 0; l < blocks_.size(); ++l) {
    const int64_t layer = static_cast<int64_t>(l);
    torch::Tensor k = own > 0 ? state->keys[layer] : torch::Tensor();
    torch::Tensor v = own > 0 ? state->values[layer] : torch::Tensor();
    x = RunBlock(blocks_[l], x, shared ? state->shared_keys[layer] : torch::Tensor(),
                 shared ? state->shared_values[layer] : torch::Tensor(), &k, &v);
    keys.push_back(k);
    values.push_back(v);
  }
  if (keep_cache) {
    state->keys = torch::stack(keys, 0);
    state->values = torch::stack(values, 0);
  }
  return torch::matmul(ApplyNorm(final_norm_, x), token_embedding_->weight.t());
}

}  // namespace memaudit::engine
