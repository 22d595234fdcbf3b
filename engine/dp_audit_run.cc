#include "engine/dp_audit_run.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/seeding.h"
#include "common/status_macros.h"
#include "common/steps.h"
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
  GradientCanaries(Model& model, const DpAuditRunSpec& spec, double q, double sigma)
      : included_(spec.included),
        clip_(spec.clip_norm),
        q_(q),
        sigma_(sigma),
        sampler_(DeriveSeed(spec.canary_seed, "sampled", 0)),
        scores_(spec.included.size(), 0.0) {
    int64_t total = 0;
    for (const torch::Tensor& p : model.parameters()) {
      offsets_.push_back(total);
      total += p.numel();
    }
    const std::vector<uint32_t> order = SeededPermutation(
        DeriveSeed(spec.canary_seed, "coordinates", 0), static_cast<uint32_t>(total));
    coordinates_.assign(order.begin(), order.begin() + static_cast<int64_t>(included_.size()));
  }

  // The model must have at least one parameter per canary.
  static absl::Status Fits(Model& model, size_t canaries) {
    int64_t total = 0;
    for (const torch::Tensor& p : model.parameters()) total += p.numel();
    if (static_cast<uint64_t>(total) < canaries || total > std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError(
          absl::StrCat("canaries: ", canaries, " gradient canaries need as many of the model's ",
                       total, " parameters"));
    }
    return absl::OkStatus();
  }

  void OnGradient(Model& model, int64_t rows, const std::vector<torch::Tensor>& clipped_sum) {
    std::vector<torch::Tensor> params = model.parameters();
    const double n = static_cast<double>(rows);
    std::vector<torch::Tensor> added(params.size());
    for (size_t i = 0; i < included_.size(); ++i) {
      // One draw per canary and step, included or not, so the sampling of
      // one canary does not depend on the others' inclusion.
      const bool sampled = sampler_.UniformDouble() < q_;
      if (!included_[i] || !sampled) continue;
      const auto [k, offset] = Locate(coordinates_[i]);
      if (!added[k].defined()) added[k] = torch::zeros({params[k].numel()}, torch::kFloat64);
      added[k].data_ptr<double>()[offset] += clip_ / n;
    }
    for (size_t k = 0; k < params.size(); ++k) {
      if (!added[k].defined()) continue;
      torch::Tensor& g = params[k].mutable_grad();
      g.add_(added[k].view(params[k].sizes()).to(g.device(), g.scalar_type()));
    }
    // (n g - clipped sum) / C, per parameter, in float64.
    std::vector<torch::Tensor> seen;
    for (size_t k = 0; k < params.size(); ++k) {
      seen.push_back((params[k].grad().detach().to(torch::kFloat64) * n -
                      clipped_sum[k].detach().to(torch::kFloat64))
                         .reshape({-1})
                         .to(torch::kCPU)
                         .contiguous());
    }
    for (size_t i = 0; i < coordinates_.size(); ++i) {
      const auto [k, offset] = Locate(coordinates_[i]);
      scores_[i] += StepLogLikelihoodRatio(seen[k].data_ptr<double>()[offset] / clip_);
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

  // (parameter, offset within it) of a flat coordinate.
  std::pair<size_t, int64_t> Locate(uint32_t coordinate) const {
    const auto it = std::upper_bound(offsets_.begin(), offsets_.end(), int64_t{coordinate});
    const size_t k = static_cast<size_t>(it - offsets_.begin()) - 1;
    return {k, int64_t{coordinate} - offsets_[k]};
  }

  std::vector<uint8_t> included_;
  double clip_;
  double q_;
  double sigma_;
  SplitMix64 sampler_;
  std::vector<int64_t> offsets_;
  std::vector<uint32_t> coordinates_;
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
    MEMAUDIT_RETURN_IF_ERROR(GradientCanaries::Fits(trainer->model(), spec.included.size()));
    const double q = std::min(1.0, static_cast<double>(spec.batch_size) / examples);
    canaries = std::make_unique<GradientCanaries>(trainer->model(), spec, q, sigma);
    trainer->set_gradient_hook([c = canaries.get(), t = trainer.get()](Model& m, int64_t rows) {
      c->OnGradient(m, rows, t->last_dp_stats().clipped_sum);
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
  const Batch train = all.Gather(std::vector<int64_t>(ids.begin(), ids.begin() + n_train));
  const torch::Tensor logits = trained.Forward(train.x.to(trainer->device())).to(torch::kCPU);
  result.train_accuracy = logits.argmax(1).eq(train.y).to(torch::kFloat64).mean().item<double>();
  if (canaries) {
    result.scores = canaries->scores();
    return result;
  }
  std::vector<int64_t> canary_ids(spec.canary_rows.size());
  for (size_t i = 0; i < canary_ids.size(); ++i) canary_ids[i] = n_train + static_cast<int64_t>(i);
  const Batch c = all.Gather(canary_ids);
  const torch::Tensor z =
      trained.Forward(c.x.to(trainer->device())).to(torch::kCPU, torch::kFloat64);
  const torch::Tensor loss = CrossEntropyPerExample(z, c.y).contiguous();
  result.scores.resize(canary_ids.size());
  for (size_t i = 0; i < canary_ids.size(); ++i) result.scores[i] = -loss.data_ptr<double>()[i];
  return result;
}

}  // namespace memaudit::engine
