#include "engine/dp_audit_run.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "common/base/steps.h"
#include "engine/dataset.h"
#include "engine/model.h"
#include "engine/rdp_accountant.h"
#include "engine/schedule.h"
#include "engine/signals.h"
#include "engine/torch_api.h"
#include "engine/trainer.h"

namespace memaudit::engine {
namespace {

absl::Status CheckSpec(const DpAuditRunSpec& spec) {
  if (spec.train_rows.empty()) return absl::InvalidArgumentError("train_rows: empty");
  if (spec.batch_size == 0) return absl::InvalidArgumentError("batch_size: must be > 0");
  if (spec.epochs == 0) return absl::InvalidArgumentError("epochs: must be > 0");
  if (spec.included.empty()) return absl::InvalidArgumentError("included: no canaries");
  if (spec.gradient_canaries) {
    if (!spec.dp) return absl::InvalidArgumentError("gradient_canaries: need DP-SGD");
    if (!spec.canary_rows.empty()) {
      return absl::InvalidArgumentError("canary_rows: gradient canaries have no rows");
    }
  } else if (spec.canary_rows.size() != spec.included.size() ||
             spec.canary_labels.size() != spec.included.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("canary_rows, canary_labels: ", spec.canary_rows.size(), " and ",
                     spec.canary_labels.size(), " for ", spec.included.size(), " canaries"));
  }
  return absl::OkStatus();
}

// Gradient canaries: canary i is the Dirac gradient C e_{j_i} on a distinct
// parameter coordinate j_i. Each step samples every included canary with the
// batch's rate q (Poisson sampling, as the accountant assumes) and adds C to
// the clipped sum at its coordinate, i.e. C / n to the gradient DP-SGD
// divided by the batch's n rows. The auditor sees each step's privatised
// gradient (white box) and, running the training, knows every example but
// the canaries: it subtracts the data's clipped sum, and what is left of
// coordinate j, in units of C, is x_t = s_t + noise: s_t = 1 when the canary
// was sampled (probability q, if included), noise ~ N(0, sigma^2). Every
// canary's score is the log-likelihood ratio of "included" over the steps,
// sum_t log(1 - q + q exp((x_t - 1/2) / sigma^2)), the most powerful test
// of one canary (Neyman-Pearson); without noise, sum_t x_t. Knowing the data and
// the seeds of the batches is allowed: DP holds for each canary's inclusion
// against an adversary who knows everything else, the noise aside.
class GradientCanaries {
 public:
  // `model` must have at least one parameter per canary (CheckFits).
  GradientCanaries(Model& model, const DpAuditRunSpec& spec, double q, double sigma)
      : included_(spec.included),
        clip_(spec.clip_norm),
        q_(q),
        sigma_(sigma),
        sampler_(DeriveSeed(spec.canary_seed, "sampled", 0)),
        scores_(spec.included.size(), 0.0) {
    const std::vector<torch::Tensor> params = model.parameters();
    std::vector<int64_t> offsets;  // of each parameter in the flat vector
    int64_t total = 0;
    for (const torch::Tensor& p : params) {
      offsets.push_back(total);
      total += p.numel();
    }
    const std::vector<uint32_t> order = SeededPermutation(
        DeriveSeed(spec.canary_seed, "coordinates", 0), static_cast<uint32_t>(total));
    // Each canary's parameter and offset, found once.
    canaries_of_.resize(params.size());
    offsets_of_.resize(params.size());
    for (size_t i = 0; i < included_.size(); ++i) {
      const int64_t j = order[i];
      const size_t k = static_cast<size_t>(std::upper_bound(offsets.begin(), offsets.end(), j) -
                                           offsets.begin()) -
                       1;
      canaries_of_[k].push_back(i);
      offsets_of_[k].push_back(j - offsets[k]);
    }
    for (const std::vector<int64_t>& o : offsets_of_) {
      index_of_.push_back(torch::tensor(o, torch::kInt64));
    }
  }

  static absl::Status CheckFits(Model& model, size_t canaries) {
    int64_t total = 0;
    for (const torch::Tensor& p : model.parameters()) total += p.numel();
    if (static_cast<uint64_t>(total) < canaries || total > std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError(
          absl::StrCat("canaries: ", canaries, " gradient canaries need as many of the model's ",
                       total, " parameters"));
    }
    return absl::OkStatus();
  }

  // Adds the sampled canaries to the gradient and scores every canary: only
  // the canaries' coordinates are read or written.
  void OnGradient(Model& model, const DpGradientStats& stats, int64_t rows) {
    const std::vector<torch::Tensor> params = model.parameters();
    const double n = static_cast<double>(rows);
    // One draw per canary and step, included or not, so the sampling of one
    // canary does not depend on the others' inclusion.
    std::vector<bool> sampled(included_.size());
    for (size_t i = 0; i < included_.size(); ++i) {
      sampled[i] = sampler_.UniformDouble() < q_ && included_[i] != 0;
    }
    for (size_t k = 0; k < params.size(); ++k) {
      if (canaries_of_[k].empty()) continue;
      torch::Tensor g = params[k].mutable_grad().view({-1});
      const torch::Tensor index = index_of_[k].to(g.device());
      std::vector<int64_t> hit;
      for (size_t c = 0; c < canaries_of_[k].size(); ++c) {
        if (sampled[canaries_of_[k][c]]) hit.push_back(offsets_of_[k][c]);
      }
      if (!hit.empty()) {
        g.index_add_(0, torch::tensor(hit, torch::kInt64).to(g.device()),
                     torch::full({static_cast<int64_t>(hit.size())}, clip_ / n,
                                 g.options().dtype(g.scalar_type())));
      }
      // (n g - clipped sum) / C at the canaries' coordinates, in float64.
      const torch::Tensor seen =
          (g.index_select(0, index).to(torch::kFloat64) * n -
           stats.clipped_sum[k].reshape({-1}).index_select(0, index).to(torch::kFloat64))
              .to(torch::kCPU)
              .contiguous();
      for (size_t c = 0; c < canaries_of_[k].size(); ++c) {
        scores_[canaries_of_[k][c]] += StepLogLikelihoodRatio(seen.data_ptr<double>()[c] / clip_);
      }
    }
  }

  const std::vector<double>& scores() const { return scores_; }

 private:
  // log(1 - q + q e^z), z = (x - 1/2) / sigma^2, without overflow.
  double StepLogLikelihoodRatio(double x) const {
    if (!(sigma_ > 0)) return x;
    const double z = (x - 0.5) / (sigma_ * sigma_);
    const double a = std::log1p(-q_), b = std::log(q_) + z;
    const double hi = std::max(a, b);
    return hi + std::log1p(std::exp(std::min(a, b) - hi));
  }

  std::vector<uint8_t> included_;
  double clip_;
  double q_;
  double sigma_;
  SplitMix64 sampler_;
  // Per parameter: its canaries and their offsets in it (also as an index).
  std::vector<std::vector<size_t>> canaries_of_;
  std::vector<std::vector<int64_t>> offsets_of_;
  std::vector<torch::Tensor> index_of_;
  std::vector<double> scores_;
};

}  // namespace

absl::StatusOr<DpAuditRunResult> RunDpAudit(const data::LabeledExamples& data,
                                            const DpAuditRunSpec& spec,
                                            const std::function<bool(uint64_t)>& on_step) {
  MEMAUDIT_RETURN_IF_ERROR(CheckSpec(spec));
  const int64_t n_train = static_cast<int64_t>(spec.train_rows.size());
  std::vector<uint32_t> rows = spec.train_rows;
  rows.insert(rows.end(), spec.canary_rows.begin(), spec.canary_rows.end());
  const TensorDataset read = FromLabeledExamples(data, rows);
  // Input canaries train and are scored with their own labels.
  torch::Tensor y = read.y().clone();
  for (size_t i = 0; i < spec.canary_labels.size(); ++i) {
    const int64_t label = spec.canary_labels[i];
    if (label < 0 || label >= static_cast<int64_t>(data.classes)) {
      return absl::InvalidArgumentError(absl::StrCat("canary_labels[", i, "]: ", label,
                                                     " is not one of ", data.classes, " classes"));
    }
    y.data_ptr<int64_t>()[n_train + static_cast<int64_t>(i)] = label;
  }
  const TensorDataset all(read.x(), y);

  std::vector<int64_t> ids(static_cast<size_t>(n_train));
  for (int64_t i = 0; i < n_train; ++i) ids[static_cast<size_t>(i)] = i;
  uint64_t included = 0;
  for (size_t i = 0; i < spec.included.size(); ++i) {
    if (!spec.included[i]) continue;
    ++included;
    if (!spec.gradient_canaries) ids.push_back(n_train + static_cast<int64_t>(i));
  }
  // The accountant's examples: the training set and every included canary,
  // rows or gradients.
  const uint64_t examples = static_cast<uint64_t>(n_train) + included;
  const EpochSchedule schedule(ids, spec.batch_size, spec.order_seed);
  const uint64_t steps = spec.epochs * schedule.steps_per_epoch();
  const auto epsilon_of = [&](double sigma) {
    if (!(sigma > 0)) return std::numeric_limits<double>::infinity();
    return DpEpsilonOfPhases({{examples, steps}}, spec.batch_size, sigma, spec.dp_delta);
  };
  double sigma = spec.noise_multiplier;
  if (spec.dp && spec.target_epsilon > 0) {
    MEMAUDIT_ASSIGN_OR_RETURN(sigma, NoiseMultiplierForEpsilon(epsilon_of, spec.target_epsilon));
  }

  ModelSpec model = spec.model;
  model.inputs = data.features;
  model.classes = data.classes;
  DpSgdOptions dp;
  dp.enabled = spec.dp;
  dp.clip_norm = spec.clip_norm;
  dp.noise_multiplier = sigma;
  dp.noise_seed = spec.noise_seed;
  dp.keep_clipped_sum = spec.gradient_canaries;
  const TrainerOptions options =
      OptionsWithDpSgd(spec.optimizer, spec.threads, spec.dropout_seed, dp);
  const uint64_t init = spec.init_seed;
  MEMAUDIT_ASSIGN_OR_RETURN(
      auto trainer, Trainer::Create([model, init] { return BuildModel(model, init); }, options));
  std::unique_ptr<GradientCanaries> canaries;
  if (spec.gradient_canaries) {
    MEMAUDIT_RETURN_IF_ERROR(GradientCanaries::CheckFits(trainer->model(), spec.included.size()));
    const double q = std::min(1.0, static_cast<double>(spec.batch_size) / examples);
    canaries = std::make_unique<GradientCanaries>(trainer->model(), spec, q, sigma);
    trainer->set_gradient_hook(
        [c = canaries.get()](Model& m, const DpGradientStats& stats, int64_t rows) {
          c->OnGradient(m, stats, rows);
        });
  }
  // LibTorch's exceptions propagate: the worker's task boundary classifies them.
  MEMAUDIT_RETURN_IF_ERROR(trainer->Train(
      all, schedule, steps, [&](uint64_t done, double) { return !on_step || on_step(done); }));

  DpAuditRunResult result;
  result.steps = steps;
  if (spec.dp) {
    result.dp_epsilon = epsilon_of(sigma);
    result.noise_multiplier = sigma;
  }
  torch::NoGradGuard no_grad;
  Model& trained = trainer->model();
  trained.eval();
  // `all` holds the training rows, then the input canaries.
  const torch::Tensor logits =
      trained.Forward(all.x().narrow(0, 0, n_train).to(trainer->device())).to(torch::kCPU);
  result.train_accuracy =
      logits.argmax(1).eq(all.y().narrow(0, 0, n_train)).to(torch::kFloat64).mean().item<double>();
  if (canaries) {
    result.scores = canaries->scores();
    return result;
  }
  const int64_t m = static_cast<int64_t>(spec.canary_rows.size());
  const torch::Tensor z = trained.Forward(all.x().narrow(0, n_train, m).to(trainer->device()))
                              .to(torch::kCPU, torch::kFloat64);
  const torch::Tensor labels = all.y().narrow(0, n_train, m);
  const torch::Tensor score = spec.scaled_logit_score
                                  ? LogitScaledConfidence(z, labels).contiguous()
                                  : (-CrossEntropyPerExample(z, labels)).contiguous();
  result.scores.assign(score.data_ptr<double>(), score.data_ptr<double>() + m);
  return result;
}

}  // namespace memaudit::engine
