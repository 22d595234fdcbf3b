#include "engine/exposure_run.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "common/training/exposure_eval_steps.h"
#include "common/training/held_out_lines.h"
#include "engine/lm_dataset.h"
#include "engine/lm_search.h"
#include "engine/rdp_accountant.h"
#include "engine/text_corpus.h"
#include "engine/torchscript_lm.h"
#include "engine/trainer.h"

namespace memaudit::engine {
namespace {

// Uniform candidates from the format's space, redrawn when they equal an
// inserted or control canary so S excludes every canary (sampled exposure's
// definition). Drawn with replacement, as the paper's sampling is.
absl::StatusOr<std::vector<std::vector<int64_t>>> DrawReferences(
    const Tokenizer& vocab, const CanaryFormat& format, const TokenFormat& tokens,
    const std::vector<Canary>& canaries, uint32_t count, uint64_t seed) {
  std::set<std::vector<int64_t>> excluded;
  for (const Canary& c : canaries) {
    MEMAUDIT_ASSIGN_OR_RETURN(std::vector<int64_t> ids,
                              SecretTokens(vocab, tokens, format, c.secret));
    excluded.insert(std::move(ids));
  }
  const double space = std::exp2(Log2SpaceSize(format));
  if (space <= static_cast<double>(excluded.size())) {
    return absl::InvalidArgumentError("reference_samples: the space holds only the canaries");
  }
  SplitMix64 rng(seed);
  std::vector<std::vector<int64_t>> out;
  out.reserve(count);
  while (out.size() < count) {
    std::vector<int64_t> candidate;
    candidate.reserve(tokens.length());
    for (const std::vector<int64_t>& allowed : tokens.positions) {
      candidate.push_back(allowed[rng.Uniform(allowed.size())]);
    }
    if (!excluded.count(candidate)) out.push_back(std::move(candidate));
  }
  return out;
}

// Every canary's Px and (with rank_canaries) exact rank by branch-and-bound
// under `lm`, in eval mode without gradients; the model's train/eval mode is
// restored, so measuring between training steps leaves training unchanged.
absl::StatusOr<std::vector<CanaryExposure>> MeasureCanaries(
    LanguageModel& lm, const Tokenizer& vocab, const CanaryFormat& format,
    const TokenFormat& tokens, const std::vector<Canary>& canaries, const ExposureRunSpec& spec,
    double log2_space) {
  torch::NoGradGuard no_grad;
  const bool was_training = lm.is_training();
  LmScorer scorer(lm);  // switches to eval mode
  std::vector<CanaryExposure> out;
  for (const Canary& c : canaries) {
    MEMAUDIT_ASSIGN_OR_RETURN(std::vector<int64_t> ids,
                              SecretTokens(vocab, tokens, format, c.secret));
    if (!spec.rank_canaries) {
      // The same path scoring the exact rank starts from, so Px agrees
      // across an audit's models for calibration.
      out.push_back({c.secret, c.repeats, PathPxBits(scorer, tokens, ids), 0, false, 0, 0});
      continue;
    }
    MEMAUDIT_ASSIGN_OR_RETURN(RankResult rank,
                              BranchAndBoundRank(scorer, tokens, ids, spec.rank_query_budget));
    out.push_back({c.secret, c.repeats, rank.canary_px, rank.rank, rank.exact,
                   log2_space - std::log2(static_cast<double>(rank.rank)), rank.queries});
  }
  if (was_training) lm.train();
  return out;
}

// The audit's canaries: one per `repeats` entry, then `controls` (repeats
// 0). Drawn from the seed, or for a given model its inserted secrets and
// controls drawn among the other fillings.
absl::StatusOr<std::vector<Canary>> AuditCanaries(const ExposureRunSpec& spec,
                                                  const CanaryFormat& format) {
  std::vector<Canary> canaries;
  if (!spec.given_model) {
    MEMAUDIT_ASSIGN_OR_RETURN(std::vector<std::string> secrets,
                              DrawSecrets(format, spec.repeats.size() + spec.controls, spec.seed));
    for (size_t i = 0; i < secrets.size(); ++i) {
      canaries.push_back({secrets[i], i < spec.repeats.size() ? spec.repeats[i] : 0});
    }
    return canaries;
  }
  if (spec.given_secrets.size() != spec.repeats.size()) {
    return absl::InvalidArgumentError("given_secrets: one per repeats entry");
  }
  for (size_t i = 0; i < spec.given_secrets.size(); ++i) {
    canaries.push_back({spec.given_secrets[i], spec.repeats[i]});
  }
  // Enough draws that `controls` of them differ from every given secret.
  MEMAUDIT_ASSIGN_OR_RETURN(
      std::vector<std::string> drawn,
      DrawSecrets(format, spec.given_secrets.size() + spec.controls, spec.seed));
  for (const std::string& d : drawn) {
    if (canaries.size() == spec.given_secrets.size() + spec.controls) break;
    if (std::find(spec.given_secrets.begin(), spec.given_secrets.end(), d) ==
        spec.given_secrets.end()) {
      canaries.push_back({d, 0});
    }
  }
  return canaries;
}

// What is measured on a finished model: each canary's Px and rank, the
// reference sample's Px, all of R (enumerate_space) and the extraction.
absl::Status MeasureFinalModel(LanguageModel& lm, const Tokenizer& vocab,
                               const CanaryFormat& format, const TokenFormat& tokens,
                               const std::vector<Canary>& canaries, const ExposureRunSpec& spec,
                               ExposureRunResult* out) {
  ExposureRunResult& result = *out;
  MEMAUDIT_ASSIGN_OR_RETURN(
      std::vector<CanaryExposure> final_canaries,
      MeasureCanaries(lm, vocab, format, tokens, canaries, spec, result.log2_space));
  result.canaries = std::move(final_canaries);
  LmScorer scorer(lm);
  if (spec.reference_samples > 0) {
    MEMAUDIT_ASSIGN_OR_RETURN(
        std::vector<std::vector<int64_t>> references,
        DrawReferences(vocab, format, tokens, canaries, spec.reference_samples,
                       DeriveSeed(spec.seed, "references", 0)));
    result.reference_px = NaivePxBits(scorer, tokens, references);
  }
  if (spec.enumerate_space) {
    // Px of all of R by trie enumeration (one model step per internal node),
    // for the exact calibrated rank, and where each canary sits in it.
    MEMAUDIT_ASSIGN_OR_RETURN(std::vector<double> space, EnumerateAllPx(scorer, tokens));
    result.space_px = std::move(space);
    for (const Canary& c : canaries) {
      MEMAUDIT_ASSIGN_OR_RETURN(std::vector<int64_t> ids,
                                SecretTokens(vocab, tokens, format, c.secret));
      MEMAUDIT_ASSIGN_OR_RETURN(uint64_t index, CandidateIndex(tokens, ids));
      result.space_index.push_back(index);
    }
  }
  // Extraction targets an inserted canary: pointless without insertions.
  if (spec.extract && (spec.insert_canaries || spec.given_model) && !spec.repeats.empty()) {
    const size_t most =
        std::max_element(spec.repeats.begin(), spec.repeats.end()) - spec.repeats.begin();
    ExtractionResult ex = ShortestPathExtract(scorer, tokens, spec.extraction_query_budget);
    result.extraction_queries = ex.queries;
    if (ex.found) {
      result.extraction = vocab.Decode(ex.tokens);
      result.extracted = result.extraction == canaries[most].secret;
    }
  }
  return absl::OkStatus();
}

// A model trained outside memaudit, measured as it is (no corpus, no steps).
absl::StatusOr<ExposureRunResult> MeasureGivenModel(const ExposureRunSpec& spec) {
  if (spec.lm != ModelKind::kTorchScript) {
    return absl::InvalidArgumentError("given_model: needs a TorchScript module");
  }
  const CanaryFormat format = FormatFor(spec.prefix, spec.digits, spec.alphabets);
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<Canary> canaries, AuditCanaries(spec, format));
  // A given model's tokenizer is a file (nothing to train on).
  MEMAUDIT_ASSIGN_OR_RETURN(
      const std::shared_ptr<const Tokenizer> tokenizer,
      LmTokenizer(spec.lm, spec.torchscript_path, spec.tokenizer, "", format));
  const Tokenizer& vocab = *tokenizer;
  if (spec.threads > 0) torch::set_num_threads(static_cast<int>(spec.threads));
  // As trained: the file's weights, in eval mode.
  MEMAUDIT_ASSIGN_OR_RETURN(
      std::shared_ptr<TorchScriptLm> lm,
      LoadTorchScriptLm(spec.torchscript_path, false, spec.tokenizer ? vocab.size() : 0));
  lm->eval();
  MEMAUDIT_ASSIGN_OR_RETURN(TokenFormat tokens, ToTokenFormat(vocab, format));
  ExposureRunResult result;
  result.log2_space = Log2SpaceSize(format);
  MEMAUDIT_RETURN_IF_ERROR(MeasureFinalModel(*lm, vocab, format, tokens, canaries, spec, &result));
  return result;
}

}  // namespace

absl::StatusOr<ExposureRunResult> RunExposure(const ExposureRunSpec& spec,
                                              const ExposureStepCallback& on_step,
                                              const ExposurePointCallback& on_point) {
  if (spec.eval_every_steps > 0 && spec.eval_every_epoch) {
    return absl::InvalidArgumentError(
        "eval_every_steps: set at most one of it and eval_every_epoch");
  }
  if (spec.alphabets.empty() && (spec.digits == 0 || spec.digits > 18)) {
    return absl::InvalidArgumentError("digits: must be in [1, 18]");
  }
  if (spec.given_model) return MeasureGivenModel(spec);
  if (spec.window < 2) return absl::InvalidArgumentError("window: must be >= 2");
  if (spec.batch_size == 0) return absl::InvalidArgumentError("batch_size: must be > 0");
  if (spec.epochs == 0) return absl::InvalidArgumentError("epochs: must be > 0");
  if (spec.extractable.sequences > 0 &&
      (spec.extractable.prefix == 0 || spec.extractable.suffix == 0)) {
    return absl::InvalidArgumentError("extractable: prefix and suffix must be > 0");
  }
  MEMAUDIT_ASSIGN_OR_RETURN(const std::string corpus,
                            LoadCorpus(spec.corpus_text, spec.corpus_path, spec.max_corpus_chars));
  const CanaryFormat format = FormatFor(spec.prefix, spec.digits, spec.alphabets);
  // A trained tokenizer learns from the corpus as loaded, the same text for
  // every model of the audit, before lines are held out or inserted.
  std::shared_ptr<const Tokenizer> tokenizer;
  if (spec.tokenizer) {
    MEMAUDIT_ASSIGN_OR_RETURN(
        tokenizer, LmTokenizer(spec.lm, spec.torchscript_path, spec.tokenizer, corpus, format));
  }
  std::string text = corpus;
  std::vector<std::string> held_out;
  if (spec.extractable.sequences > 0) {
    // Prefix and suffix count the model's tokens: characters, or a trained
    // tokenizer's (a line cut after its first n tokens).
    MEMAUDIT_ASSIGN_OR_RETURN(HeldOutLines held,
                              HoldOutExtractable(text, spec.extractable, tokenizer.get()));
    text = std::move(held.text);
    held_out = std::move(held.sequences);
  }
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<Canary> canaries, AuditCanaries(spec, format));
  if (spec.insert_canaries) {
    text = InsertCanaries(text, format, canaries, DeriveSeed(spec.seed, "positions", 0));
    if (!held_out.empty()) {
      text = InsertLines(text, ExtractableLines(spec.extractable, held_out),
                         DeriveSeed(spec.seed, "extractable.positions", 0));
    }
  }
  // A model with and one without canaries share one vocabulary (the ids of
  // S and of the canaries agree across an audit's models); the held-out
  // sequences' characters are in it whether inserted or not.
  if (!tokenizer) {
    MEMAUDIT_ASSIGN_OR_RETURN(tokenizer, LmTokenizer(spec.lm, spec.torchscript_path, nullptr,
                                                     text + absl::StrJoin(held_out, "\n"), format));
  }
  const Tokenizer& vocab = *tokenizer;
  ModelSpec model = CharLmSpec(spec.lm, vocab.size(), spec.embedding, spec.layers, spec.units,
                               spec.dropout, spec.torchscript_path, spec.heads, spec.window);
  model.token_ids = spec.tokenizer != nullptr;
  const uint64_t model_seed = spec.model_seed.value_or(spec.seed);
  TrainerOptions options;
  options.optimizer = spec.optimizer;
  options.dropout_seed = DeriveSeed(model_seed, "dropout", 0);
  options.threads = spec.threads;
  options.device = spec.device;
  options.dp.enabled = spec.dp;
  options.dp.clip_norm = spec.dp_clip_norm;
  options.dp.noise_multiplier = spec.dp_noise_multiplier;
  options.dp.noise_seed = DeriveSeed(model_seed, "dp_noise", 0);
  const uint64_t init = DeriveSeed(model_seed, "init", 0);
  MEMAUDIT_ASSIGN_OR_RETURN(
      auto trainer, Trainer::Create([model, init] { return BuildModel(model, init); }, options));
  TensorDataset data = LmWindows(vocab.Encode(text), spec.window);
  if (data.size() == 0) return absl::InvalidArgumentError("corpus: shorter than one window");
  std::vector<int64_t> pool(data.size());
  for (int64_t i = 0; i < data.size(); ++i) pool[i] = i;
  EpochSchedule schedule(pool, spec.batch_size, DeriveSeed(model_seed, "order", 0));
  const uint64_t steps = spec.epochs * schedule.steps_per_epoch();
  ExposureRunResult result;
  result.windows = static_cast<uint64_t>(data.size());
  if (spec.dp) {
    MEMAUDIT_ASSIGN_OR_RETURN(
        DpEpsilon eps, ComputeDpSgdEpsilon(std::min(1.0, static_cast<double>(spec.batch_size) /
                                                             static_cast<double>(data.size())),
                                           spec.dp_noise_multiplier, steps, spec.dp_delta,
                                           DefaultRdpOrders(), RdpConversion::kImproved));
    result.dp_epsilon = eps.epsilon;
  }
  MEMAUDIT_ASSIGN_OR_RETURN(TokenFormat tokens, ToTokenFormat(vocab, format));
  result.log2_space = Log2SpaceSize(format);
  const std::vector<uint64_t> eval_steps = exposure::IntermediateEvalSteps(
      steps, spec.epochs, spec.eval_every_steps, spec.eval_every_epoch);
  size_t next_eval = 0;
  absl::Status point_status;
  double epoch_loss = 0;
  absl::Status trained = trainer->Train(data, schedule, steps, [&](uint64_t done, double loss) {
    if ((done - 1) % schedule.steps_per_epoch() == 0) epoch_loss = 0;
    epoch_loss += loss;
    if (next_eval < eval_steps.size() && done == eval_steps[next_eval]) {
      ++next_eval;
      absl::StatusOr<std::vector<CanaryExposure>> measured =
          MeasureCanaries(static_cast<LanguageModel&>(trainer->model()), vocab, format, tokens,
                          canaries, spec, result.log2_space);
      if (!measured.ok()) {
        point_status = measured.status();
        return false;
      }
      ExposurePoint& point = result.points.emplace_back();
      point.steps = done;
      point.canaries = *std::move(measured);
      if (on_point) point_status = on_point(point);
      if (!point_status.ok()) return false;
    }
    return !on_step || on_step(done);
  });
  if (!point_status.ok()) return point_status;
  if (!trained.ok()) return trained;
  result.steps = steps;
  const uint64_t last_epoch_steps = (steps - 1) % schedule.steps_per_epoch() + 1;
  result.final_loss = epoch_loss / static_cast<double>(last_epoch_steps);

  LanguageModel& lm = static_cast<LanguageModel&>(trainer->model());
  MEMAUDIT_RETURN_IF_ERROR(MeasureFinalModel(lm, vocab, format, tokens, canaries, spec, &result));
  if (!held_out.empty()) {
    result.extractable =
        MeasureExtractable(lm, vocab, spec.extractable, held_out, spec.insert_canaries);
  }
  if (spec.eval_every_steps > 0 || spec.eval_every_epoch) {
    // The final model is the curve's last point: measured once, above.
    ExposurePoint& point = result.points.emplace_back();
    point.steps = steps;
    point.final = true;
    point.canaries = result.canaries;
    if (on_point) {
      MEMAUDIT_RETURN_IF_ERROR(on_point(point));
    }
  }
  return result;
}

}  // namespace memaudit::engine
