#include "engine/forgetting_lm_run.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "engine/extractable.h"
#include "engine/language_model.h"
#include "engine/lm_dataset.h"
#include "engine/lm_scorer.h"
#include "engine/lm_search.h"
#include "engine/model.h"
#include "engine/schedule.h"
#include "engine/text_corpus.h"
#include "engine/torch_api.h"
#include "engine/torchscript_lm.h"
#include "engine/trainer.h"

namespace memaudit::engine {
namespace {

InjectOptions InjectOptionsFor(const ForgettingLmRunSpec& spec) {
  InjectOptions o;
  o.t_i = spec.steps_before;
  o.repeats = spec.passes;
  o.mode = InjectMode::kKSteps;
  o.advance_lr = false;
  return o;
}

// Windows of the canary batch: the canaries' copies and the inserted
// extractable sequences'.
uint64_t TotalCopies(const ForgettingLmRunSpec& spec) {
  uint64_t copies = std::accumulate(spec.copies.begin(), spec.copies.end(), uint64_t{0});
  for (uint32_t d : spec.extractable.duplicates) {
    copies += uint64_t{d} * spec.extractable.sequences;
  }
  return copies;
}

// Whether greedy decoding gives each held-out sequence back, under `trainer`'s
// model (its mode restored).
std::vector<uint8_t> Extracted(Trainer& trainer, const Tokenizer& vocab,
                               const ExtractableSetup& setup,
                               const std::vector<std::string>& held_out) {
  std::vector<uint8_t> out;
  if (held_out.empty()) return out;
  for (const ExtractableSequence& s : MeasureExtractable(
           static_cast<LanguageModel&>(trainer.model()), vocab, setup, held_out, true)) {
    out.push_back(s.extracted ? 1 : 0);
  }
  return out;
}

absl::Status CheckSpec(const ForgettingLmRunSpec& spec) {
  if (spec.alphabets.empty() && (spec.digits == 0 || spec.digits > 18)) {
    return absl::InvalidArgumentError("digits: must be in [1, 18]");
  }
  if (spec.copies.empty()) return absl::InvalidArgumentError("copies: no inserted canary");
  for (uint32_t c : spec.copies) {
    if (c == 0) return absl::InvalidArgumentError("copies: each inserted canary needs >= 1");
  }
  if (spec.batch_size == 0) return absl::InvalidArgumentError("batch_size: must be > 0");
  if (!spec.poison && spec.passes == 0) {
    return absl::InvalidArgumentError("passes: must be >= 1");
  }
  if (spec.window < 2) return absl::InvalidArgumentError("window: must be >= 2");
  if (spec.eval_points.empty()) return absl::InvalidArgumentError("eval_points: empty");
  if (!std::is_sorted(spec.eval_points.begin(), spec.eval_points.end()) ||
      std::adjacent_find(spec.eval_points.begin(), spec.eval_points.end()) !=
          spec.eval_points.end()) {
    return absl::InvalidArgumentError("eval_points: must be strictly ascending");
  }
  return absl::OkStatus();
}

// Model steps EnumeratePx takes: one per internal node of the trie.
uint64_t TrieSteps(const TokenFormat& format) {
  uint64_t steps = 0, nodes = 1;
  for (const std::vector<int64_t>& allowed : format.positions) {
    steps += nodes;
    if (nodes > (uint64_t{1} << 62) / std::max<size_t>(allowed.size(), 1)) return UINT64_MAX;
    nodes *= allowed.size();
  }
  return steps;
}

// Exposure of every canary under the trainer's model. Enumerating the space
// once serves every canary; branch-and-bound per canary only when the trie is
// beyond the budget.
absl::StatusOr<CanaryExposures> Measure(Trainer& trainer, const TokenFormat& format,
                                        const std::vector<std::vector<int64_t>>& canaries,
                                        double log2_space, uint64_t budget) {
  torch::NoGradGuard no_grad;
  const bool was_training = trainer.model().is_training();
  trainer.model().eval();
  LmScorer scorer(static_cast<LanguageModel&>(trainer.model()));
  CanaryExposures out;
  if (TrieSteps(format) <= budget) {
    MEMAUDIT_ASSIGN_OR_RETURN(std::vector<double> all, EnumerateAllPx(scorer, format));
    for (const std::vector<int64_t>& canary : canaries) {
      // The same rank EnumerationRank gives, without enumerating per canary.
      MEMAUDIT_ASSIGN_OR_RETURN(const uint64_t index, CandidateIndex(format, canary));
      const uint64_t rank = RankAmong(all, index, PathPxBits(scorer, format, canary));
      out.exposure.push_back(log2_space - std::log2(static_cast<double>(rank)));
      out.exact.push_back(1);
    }
  } else {
    for (const std::vector<int64_t>& canary : canaries) {
      MEMAUDIT_ASSIGN_OR_RETURN(RankResult r, BranchAndBoundRank(scorer, format, canary, budget));
      out.exposure.push_back(log2_space - std::log2(static_cast<double>(r.rank)));
      out.exact.push_back(r.exact ? 1 : 0);
    }
  }
  if (was_training) trainer.model().train();
  return out;
}

}  // namespace

uint64_t ForgettingLmInjectionSteps(const ForgettingLmRunSpec& spec) {
  if (spec.poison) return 0;
  return InjectionSteps(TotalCopies(spec), std::max<uint32_t>(spec.batch_size, 1),
                        InjectOptionsFor(spec));
}

uint64_t ForgettingLmTrialSteps(const ForgettingLmRunSpec& spec) {
  const uint64_t after = spec.eval_points.empty() ? 0 : spec.eval_points.back();
  // Poison: the baseline arm trains its own T_I steps from the shared init.
  if (spec.poison) return 2 * spec.steps_before + 2 * after;
  return spec.steps_before + ForgettingLmInjectionSteps(spec) + 2 * after;
}

absl::StatusOr<ForgettingLmRunResult> RunForgettingLm(const ForgettingLmRunSpec& spec,
                                                      const ForgettingLmStepCallback& on_step,
                                                      const ForgettingLmPointCallback& on_point) {
  MEMAUDIT_RETURN_IF_ERROR(CheckSpec(spec));
  MEMAUDIT_ASSIGN_OR_RETURN(const std::string corpus,
                            LoadCorpus(spec.corpus_text, spec.corpus_path, spec.max_corpus_chars));
  std::string text = corpus;
  const CanaryFormat format = FormatFor(spec.prefix, spec.digits, spec.alphabets);
  MEMAUDIT_ASSIGN_OR_RETURN(
      std::vector<std::string> secrets,
      DrawSecrets(format, spec.copies.size() + spec.controls, spec.canary_seed));
  // The tokenizer learns from (or the vocabulary holds) the corpus as
  // loaded, held-out lines included.
  MEMAUDIT_ASSIGN_OR_RETURN(
      const std::shared_ptr<const Tokenizer> tokenizer,
      LmTokenizer(spec.lm, spec.torchscript_path, spec.tokenizer, corpus, format));
  const Tokenizer& vocab = *tokenizer;
  std::vector<std::string> held_out;
  if (spec.extractable.sequences > 0) {
    MEMAUDIT_ASSIGN_OR_RETURN(
        HeldOutLines held,
        HoldOutExtractable(corpus, spec.extractable, spec.tokenizer ? &vocab : nullptr));
    text = std::move(held.text);
    held_out = std::move(held.sequences);
  }
  const std::vector<int64_t> tokens = vocab.Encode(text);
  TensorDataset clean = LmWindows(tokens, spec.window);
  if (clean.size() == 0) return absl::InvalidArgumentError("corpus: shorter than one window");
  MEMAUDIT_ASSIGN_OR_RETURN(TokenFormat token_format, ToTokenFormat(vocab, format));
  std::vector<std::vector<int64_t>> canary_ids;
  for (const std::string& secret : secrets) {
    MEMAUDIT_ASSIGN_OR_RETURN(std::vector<int64_t> ids,
                              SecretTokens(vocab, token_format, format, secret));
    canary_ids.push_back(std::move(ids));
  }

  // The canary batch: copies[i] windows of canary i, each "\n" + its line +
  // "\n" then corpus text from a seeded line start (as it would sit in the
  // corpus), in one seeded order so a pass mixes the canaries.
  std::vector<size_t> line_starts;
  const int64_t newline = vocab.Newline();
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (tokens[i] == newline) line_starts.push_back(i + 1);
  }
  if (line_starts.empty()) line_starts.push_back(0);
  SplitMix64 fill(DeriveSeed(spec.canary_seed, "fill", 0));
  std::vector<int64_t> xs, ys;
  uint64_t windows = 0;
  const auto add_windows = [&](const std::string& text_line, uint32_t copies,
                               const char* what) -> absl::Status {
    const std::vector<int64_t> line = vocab.Encode("\n" + text_line + "\n");
    if (line.size() > spec.window) {
      return absl::InvalidArgumentError(absl::StrCat(
          "window: ", spec.window, " tokens cannot hold the ", what, " (", line.size(), ")"));
    }
    for (uint32_t k = 0; k < copies; ++k) {
      std::vector<int64_t> w = line;
      size_t at = line_starts[fill.Uniform(line_starts.size())];
      while (w.size() < spec.window + 1) {
        w.push_back(tokens[at]);
        at = (at + 1) % tokens.size();
      }
      xs.insert(xs.end(), w.begin(), w.end() - 1);
      ys.insert(ys.end(), w.begin() + 1, w.end());
      ++windows;
    }
    return absl::OkStatus();
  };
  for (size_t c = 0; c < spec.copies.size(); ++c) {
    MEMAUDIT_RETURN_IF_ERROR(
        add_windows(CanaryText(format, secrets[c]), spec.copies[c], "canary line"));
  }
  // The extractable sequences join the batch after the canaries, so the
  // canaries' windows are the same with or without them.
  for (const auto& [line, copies] : ExtractableLines(spec.extractable, held_out)) {
    MEMAUDIT_RETURN_IF_ERROR(add_windows(line, copies, "extractable sequence"));
  }
  const int64_t n = static_cast<int64_t>(windows), wlen = spec.window;
  TensorDataset injected(torch::tensor(xs, torch::kLong).reshape({n, wlen}),
                         torch::tensor(ys, torch::kLong).reshape({n, wlen}));
  const TensorDataset all = clean.Concat(injected);
  std::vector<int64_t> d_ids(clean.size()), p_ids;
  std::iota(d_ids.begin(), d_ids.end(), 0);
  for (uint32_t i : SeededPermutation(DeriveSeed(spec.canary_seed, "batch", 0),
                                      static_cast<uint32_t>(windows))) {
    p_ids.push_back(clean.size() + static_cast<int64_t>(i));
  }

  ModelSpec model = CharLmSpec(spec.lm, vocab.size(), spec.embedding, spec.layers, spec.units,
                               spec.dropout, spec.torchscript_path, spec.heads, spec.window);
  model.token_ids = spec.tokenizer != nullptr;
  const uint64_t init_seed = spec.init_seed;
  const TrainerOptions options =
      SeededTrainerOptions(spec.optimizer, spec.threads, spec.order_seed);
  // The baseline's post-T_I order: the injected arm's when paired (with
  // Poison its pre-T_I order differs anyway: it draws from D alone).
  const uint64_t base_seed =
      spec.paired ? spec.order_seed : DeriveSeed(spec.order_seed, "baseline", 0);
  MEMAUDIT_ASSIGN_OR_RETURN(
      auto inj_schedule,
      spec.poison
          ? PoisonSchedule(d_ids, p_ids, spec.batch_size, spec.steps_before, spec.order_seed)
          : InjectSchedule(d_ids, p_ids, spec.batch_size, InjectOptionsFor(spec), spec.order_seed));
  MEMAUDIT_ASSIGN_OR_RETURN(
      auto base_schedule,
      spec.poison ? PoisonSchedule(d_ids, {}, spec.batch_size, spec.steps_before, base_seed)
                  : InjectSchedule(d_ids, {}, spec.batch_size, InjectOptionsFor(spec), base_seed));

  ForgettingLmRunResult result;
  result.log2_space = Log2SpaceSize(format);
  result.secrets = secrets;
  auto count = [&](uint64_t, double) {
    ++result.steps;
    return !on_step || on_step(result.steps);
  };
  // LibTorch's exceptions (out of memory among them) propagate: the worker's
  // task boundary (services/worker/task_runner.cc) classifies them.
  MEMAUDIT_ASSIGN_OR_RETURN(
      auto injected_arm,
      Trainer::Create([model, init_seed] { return BuildModel(model, init_seed); }, options));
  std::unique_ptr<Trainer> baseline_arm;
  if (spec.poison) {
    // Alg. 1: both arms from the same theta_0; corpus + canary batch vs the
    // corpus alone before T_I. The checkpoint is the baseline at T_I.
    MEMAUDIT_ASSIGN_OR_RETURN(auto fork, injected_arm->Fork());
    baseline_arm = std::move(fork);
    MEMAUDIT_RETURN_IF_ERROR(injected_arm->Train(all, *inj_schedule, spec.steps_before, count));
    MEMAUDIT_RETURN_IF_ERROR(baseline_arm->Train(all, *base_schedule, spec.steps_before, count));
    MEMAUDIT_ASSIGN_OR_RETURN(auto measured, Measure(*baseline_arm, token_format, canary_ids,
                                                     result.log2_space, spec.rank_query_budget));
    result.checkpoint = std::move(measured);
  } else {
    // The shared prefix: T_I corpus steps, once.
    MEMAUDIT_RETURN_IF_ERROR(injected_arm->Train(all, *inj_schedule, spec.steps_before, count));
    MEMAUDIT_ASSIGN_OR_RETURN(auto measured, Measure(*injected_arm, token_format, canary_ids,
                                                     result.log2_space, spec.rank_query_budget));
    result.checkpoint = std::move(measured);
    MEMAUDIT_ASSIGN_OR_RETURN(auto fork, injected_arm->Fork());
    baseline_arm = std::move(fork);
  }
  result.injection_steps = ForgettingLmInjectionSteps(spec);
  const uint64_t injected_offset = spec.steps_before + result.injection_steps;
  for (uint64_t k : spec.eval_points) {
    ForgettingLmPoint& point = result.points.emplace_back();
    point.steps_since_injection = k;
    MEMAUDIT_RETURN_IF_ERROR(injected_arm->Train(all, *inj_schedule, injected_offset + k, count));
    MEMAUDIT_RETURN_IF_ERROR(
        baseline_arm->Train(all, *base_schedule, spec.steps_before + k, count));
    MEMAUDIT_ASSIGN_OR_RETURN(auto inj, Measure(*injected_arm, token_format, canary_ids,
                                                result.log2_space, spec.rank_query_budget));
    point.injected = std::move(inj);
    point.extracted_injected = Extracted(*injected_arm, vocab, spec.extractable, held_out);
    point.extracted_baseline = Extracted(*baseline_arm, vocab, spec.extractable, held_out);
    // At k = 0 the baseline is the checkpoint (Inject: the shared state at
    // T_I; Poison: the baseline at T_I): no need to rank again.
    if (k == 0) {
      point.baseline = result.checkpoint;
    } else {
      MEMAUDIT_ASSIGN_OR_RETURN(auto base, Measure(*baseline_arm, token_format, canary_ids,
                                                   result.log2_space, spec.rank_query_budget));
      point.baseline = std::move(base);
    }
    if (on_point) on_point(result);
  }
  return result;
}

}  // namespace memaudit::engine
