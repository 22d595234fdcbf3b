#include "engine/torchscript_lm.h"

#include <algorithm>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "engine/torchscript_model.h"

namespace memaudit::engine {
namespace {

constexpr char kField[] = "model.torchscript_path";
// Without autograd, Run splits a batch so one forward sees at most this many
// tokens: a search step re-runs whole prefixes for up to 2^15 states.
constexpr int64_t kTokensPerCall = 1 << 16;

absl::Status ContractError(const std::string& path, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(kField, ": ", path,
                                                 " is not a character language model: ", why,
                                                 " (docs/language-models.md)"));
}

absl::StatusOr<CharVocab> ReadVocabulary(const torch::jit::Module& module,
                                         const std::string& path) {
  if (!module.hasattr("vocabulary") || !module.attr("vocabulary").isString()) {
    return ContractError(path, "it has no `vocabulary: str` attribute (nor a model.tokenizer)");
  }
  const std::vector<char32_t> symbols = DecodeUtf8(module.attr("vocabulary").toStringRef());
  if (symbols.size() < 2) return ContractError(path, "its vocabulary has fewer than 2 symbols");
  absl::StatusOr<CharVocab> vocab = CharVocab::FromSymbols(symbols);
  if (!vocab.ok()) return ContractError(path, std::string(vocab.status().message()));
  return vocab;
}

// forward on a two-token probe and on its first token alone, in eval mode:
// logits [1, T, V] whose first position does not see the second token.
absl::Status ProbeForward(torch::jit::Module& module, int64_t vocab, const std::string& path) {
  const bool was_training = module.is_training();
  module.eval();
  torch::NoGradGuard no_grad;
  absl::Status status;
  try {
    const torch::Tensor two = torch::tensor({int64_t{1}, vocab - 1}, torch::kLong).reshape({1, 2});
    const c10::IValue out2 = module.forward({two});
    const c10::IValue out1 = module.forward({two.slice(1, 0, 1)});
    if (!out2.isTensor() || !out1.isTensor()) {
      status = ContractError(path, "forward does not return a Tensor");
    } else {
      const torch::Tensor l2 = out2.toTensor(), l1 = out1.toTensor();
      if (!l2.is_floating_point() || l2.dim() != 3 || l2.size(0) != 1 || l2.size(1) != 2 ||
          l2.size(2) != vocab) {
        status = ContractError(
            path, absl::StrCat("forward maps tokens [1, 2] to ", c10::str(l2.sizes()), " ",
                               c10::toString(l2.scalar_type()), ", not float logits [1, 2, ", vocab,
                               "] (V = the vocabulary's size)"));
      } else if (!torch::allclose(l1.select(1, 0), l2.select(1, 0), 1e-4, 1e-4)) {
        status = ContractError(path,
                               "forward is not causal (the logits at position 0 change with "
                               "the token at position 1)");
      }
    }
  } catch (const c10::Error& e) {
    status = ContractError(
        path, absl::StrCat("forward(int64 [1, 2]) fails: ", e.what_without_backtrace()));
  }
  module.train(was_training);
  return status;
}

}  // namespace

TorchScriptLm::TorchScriptLm(torch::jit::Module module, CharVocab vocabulary, int64_t vocab)
    : module_(std::move(module)), vocabulary_(std::move(vocabulary)), vocab_(vocab) {
  RegisterScriptedTensors(module_, *this);
}

torch::Tensor TorchScriptLm::Call(const torch::Tensor& tokens) {
  at::Generator* gen = dropout_generator();
  c10::IValue out;
  if (!is_training() || gen == nullptr) {
    out = module_.forward({tokens});
  } else {
    // A seed drawn from the trainer's checkpointed generator: masks are a
    // function of the audit's seed, and resuming a checkpoint redraws them.
    // The lock keeps another task from reseeding between seed and forward.
    const int64_t seed =
        torch::empty({1}, torch::kLong).random_(0, int64_t{1} << 62, *gen).item<int64_t>();
    std::lock_guard<std::mutex> lock(GlobalGeneratorMutex());
    torch::manual_seed(static_cast<uint64_t>(seed));
    out = module_.forward({tokens});
  }
  TORCH_CHECK(out.isTensor(), kField, ": forward did not return a Tensor");
  return out.toTensor();
}

torch::Tensor TorchScriptLm::Run(const torch::Tensor& tokens, LmState* state) {
  const torch::Tensor full = state->tokens.defined()
                                 ? torch::cat({state->tokens, tokens.to(state->tokens.device())}, 1)
                                 : tokens;
  const int64_t rows = full.size(0), length = full.size(1);
  torch::Tensor logits;
  if (torch::GradMode::is_enabled() || rows * length <= kTokensPerCall) {
    logits = Call(full);
  } else {
    const int64_t per_call = std::max<int64_t>(1, kTokensPerCall / length);
    std::vector<torch::Tensor> parts;
    for (int64_t start = 0; start < rows; start += per_call) {
      parts.push_back(Call(full.slice(0, start, std::min(rows, start + per_call))));
    }
    logits = torch::cat(parts, 0);
  }
  TORCH_CHECK(logits.dim() == 3 && logits.size(0) == rows && logits.size(1) == length &&
                  logits.size(2) == vocab(),
              kField, ": forward mapped tokens ", full.sizes(), " to ", logits.sizes(),
              "; expected [B, T, ", vocab(), "]");
  state->tokens = full;
  return logits.slice(1, length - tokens.size(1));
}

void TorchScriptLm::train(bool on) {
  LanguageModel::train(on);
  module_.train(on);
}

absl::StatusOr<std::shared_ptr<TorchScriptLm>> LoadTorchScriptLm(const std::string& path,
                                                                 bool redraw_weights,
                                                                 int64_t token_vocab) {
  MEMAUDIT_ASSIGN_OR_RETURN(torch::jit::Module module, LoadBoundedModule(path));
  if (redraw_weights) MEMAUDIT_RETURN_IF_ERROR(RedrawScriptedWeights(module));
  CharVocab vocabulary;
  if (token_vocab == 0) {
    MEMAUDIT_ASSIGN_OR_RETURN(vocabulary, ReadVocabulary(module, path));
  }
  const int64_t vocab = token_vocab > 0 ? token_vocab : vocabulary.size();
  MEMAUDIT_RETURN_IF_ERROR(ProbeForward(module, vocab, path));
  return std::make_shared<TorchScriptLm>(std::move(module), std::move(vocabulary), vocab);
}

absl::StatusOr<CharVocab> TorchScriptLmVocabulary(const std::string& path) {
  MEMAUDIT_ASSIGN_OR_RETURN(std::shared_ptr<TorchScriptLm> lm, LoadTorchScriptLm(path));
  return lm->vocabulary();
}

absl::StatusOr<std::shared_ptr<const Tokenizer>> LmTokenizer(
    ModelKind kind, const std::string& torchscript_path, const TokenizerFactory& factory,
    const std::string& text, const CanaryFormat& format, const std::string& what) {
  if (factory) return factory(text);
  if (kind != ModelKind::kTorchScript) {
    return std::make_shared<const CharVocab>(CanaryVocab(text, format));
  }
  MEMAUDIT_ASSIGN_OR_RETURN(CharVocab vocab, TorchScriptLmVocabulary(torchscript_path));
  MEMAUDIT_RETURN_IF_ERROR(RequireCharacters(vocab, CanaryCharacters(format), kField, what));
  return std::make_shared<const CharVocab>(std::move(vocab));
}

}  // namespace memaudit::engine
