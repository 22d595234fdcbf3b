#include "engine/forgetting_run.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "engine/dataset.h"
#include "engine/ensemble.h"
#include "engine/model.h"
#include "engine/schedule.h"
#include "engine/signals.h"
#include "engine/torch_api.h"
#include "engine/trainer.h"

namespace memaudit::engine {
namespace {

InjectOptions InjectOptionsFor(const ForgettingRunSpec& spec) {
  InjectOptions o;
  o.t_i = spec.steps_before;
  o.repeats = spec.repeats;
  o.mode = spec.dup_in_batch ? InjectMode::kDupInBatch : InjectMode::kKSteps;
  o.advance_lr = false;
  return o;
}

absl::Status CheckSpec(const data::LabeledExamples& data, const ForgettingRunSpec& spec) {
  if (spec.clean_rows.empty()) return absl::InvalidArgumentError("clean_rows: empty");
  if (spec.injected_rows.empty()) return absl::InvalidArgumentError("injected_rows: empty");
  if (spec.batch_size == 0) return absl::InvalidArgumentError("batch_size: must be > 0");
  if (spec.repeats == 0) return absl::InvalidArgumentError("repeats: must be >= 1");
  if (spec.eval_points.empty()) return absl::InvalidArgumentError("eval_points: empty");
  if (!std::is_sorted(spec.eval_points.begin(), spec.eval_points.end()) ||
      std::adjacent_find(spec.eval_points.begin(), spec.eval_points.end()) !=
          spec.eval_points.end()) {
    return absl::InvalidArgumentError("eval_points: must be strictly ascending");
  }
  if (!spec.injected_labels.empty() && spec.injected_labels.size() != spec.injected_rows.size()) {
    return absl::InvalidArgumentError("injected_labels: one per injected row");
  }
  for (const auto* rows : {&spec.clean_rows, &spec.injected_rows}) {
    for (uint32_t r : *rows) {
      if (r >= data.count) {
        return absl::InvalidArgumentError(
            absl::StrCat("row ", r, " is outside the dataset of ", data.count));
      }
    }
  }
  for (uint8_t y : spec.injected_labels) {
    if (y >= data.classes) return absl::InvalidArgumentError("injected_labels: out of range");
  }
  return absl::OkStatus();
}

// phi and loss (float64) of the probe's examples from their logits.
void MeasureLogits(const torch::Tensor& logits, const torch::Tensor& labels,
                   std::vector<double>* phi, std::vector<double>* loss) {
  torch::Tensor cpu = logits.to(torch::kCPU);
  torch::Tensor p = LogitScaledConfidence(cpu, labels).contiguous();
  torch::Tensor l = CrossEntropyPerExample(cpu, labels).contiguous();
  phi->assign(p.data_ptr<double>(), p.data_ptr<double>() + p.numel());
  loss->assign(l.data_ptr<double>(), l.data_ptr<double>() + l.numel());
}

// phi and loss of the probe under the trainer's current model.
void Measure(Trainer& trainer, const Batch& probe, std::vector<double>* phi,
             std::vector<double>* loss) {
  torch::NoGradGuard no_grad;
  const bool was_training = trainer.model().is_training();
  trainer.model().eval();
  torch::Tensor logits = trainer.model().Forward(probe.x.to(trainer.device()));
  if (was_training) trainer.model().train();
  MeasureLogits(logits, probe.y, phi, loss);
}

// Where arm a's phi and loss go at an evaluation point: the injected arm,
// the baseline, the replay (loss unused), the references, then the IN
// references.
struct ArmOutputs {
  std::vector<double>* phi;
  std::vector<double>* loss;
};

std::vector<ArmOutputs> OutputsOf(ForgettingPoint& point, const ForgettingRunSpec& spec,
                                  std::vector<double>* unused_loss) {
  std::vector<ArmOutputs> out = {{&point.phi_injected, &point.loss_injected},
                                 {&point.phi_baseline, &point.loss_baseline}};
  if (spec.replay) out.push_back({&point.phi_replay, unused_loss});
  point.phi_references.resize(spec.reference_models);
  for (auto& phi : point.phi_references) out.push_back({&phi, unused_loss});
  point.phi_in_references.resize(spec.in_reference_models);
  for (auto& phi : point.phi_in_references) out.push_back({&phi, unused_loss});
  return out;
}

// Logistic regression (no hidden layers), an MLP, or the spec's own model
// over the dataset's examples.
ModelSpec ImageModelSpec(const data::LabeledExamples& data, const std::vector<uint32_t>& hidden,
                         const std::optional<ModelSpec>& own) {
  if (own.has_value()) {
    ModelSpec model = *own;
    model.inputs = data.features;
    model.classes = data.classes;
    return model;
  }
  ModelSpec model;
  model.kind = hidden.empty() ? ModelKind::kLogReg : ModelKind::kMlp;
  model.inputs = data.features;
  model.classes = data.classes;
  model.hidden = hidden;
  return model;
}

// Whether one ensemble of the arms trains faster than the arms one at a
// time. Wider layers make every step GEMM-bound, where stacking only adds
// copies: bench/forgetting_bench measured 1.07-1.19x for logistic regression
// and 1.15x with 32 hidden units, but 0.93x with 128 (2 vCPU, one thread).
bool PackingPays(const ForgettingRunSpec& spec) {
  constexpr uint32_t kWidestPackedLayer = 64;
  if (spec.model.has_value()) return false;  // only logreg and MLPs stack
  return std::all_of(spec.hidden.begin(), spec.hidden.end(),
                     [](uint32_t units) { return units <= kWidestPackedLayer; });
}

}  // namespace

uint64_t ForgettingTrialSteps(const ForgettingRunSpec& spec) {
  const uint64_t after = spec.eval_points.empty() ? 0 : spec.eval_points.back();
  // The replay and the references repeat the baseline arm from its fork, the
  // IN references the injected arm from its fork (with its injection steps):
  // Poison forks at theta_0.
  const uint64_t arms = (spec.replay ? 3 : 2) + spec.reference_models + spec.in_reference_models;
  if (spec.strategy == ForgettingStrategy::kPoison) {
    return arms * spec.steps_before + arms * after;
  }
  const uint64_t injected_arms = 1 + spec.in_reference_models;
  return spec.steps_before +
         injected_arms *
             InjectionSteps(spec.injected_rows.size(), spec.batch_size, InjectOptionsFor(spec)) +
         arms * after;
}

absl::StatusOr<ForgettingRunResult> RunForgetting(const data::LabeledExamples& data,
                                                  const ForgettingRunSpec& spec,
                                                  const ForgettingStepCallback& on_step,
                                                  const ForgettingPointCallback& on_point) {
  MEMAUDIT_RETURN_IF_ERROR(CheckSpec(data, spec));
  // Rows 0..|D|-1 are D, then Dp with its injection labels.
  TensorDataset clean = FromLabeledExamples(data, spec.clean_rows);
  TensorDataset injected = FromLabeledExamples(data, spec.injected_rows);
  if (!spec.injected_labels.empty()) {
    std::vector<int64_t> labels(spec.injected_labels.begin(), spec.injected_labels.end());
    injected = TensorDataset(injected.x(), torch::tensor(labels, torch::kLong));
  }
  const TensorDataset all = clean.Concat(injected);
  const Batch probe{injected.x(), injected.y()};
  std::vector<int64_t> d_ids(spec.clean_rows.size()), p_ids(spec.injected_rows.size());
  for (size_t i = 0; i < d_ids.size(); ++i) d_ids[i] = static_cast<int64_t>(i);
  for (size_t i = 0; i < p_ids.size(); ++i) p_ids[i] = static_cast<int64_t>(d_ids.size() + i);

  const ModelSpec model = ImageModelSpec(data, spec.hidden, spec.model);
  const uint64_t init_seed = spec.init_seed;
  ModelFactory factory = [model, init_seed] { return BuildModel(model, init_seed); };
  const TrainerOptions options =
      SeededTrainerOptions(spec.optimizer, spec.threads, spec.order_seed);

  // The baseline's post-T_I order: the injected arm's when paired.
  const uint64_t base_seed =
      spec.paired ? spec.order_seed : DeriveSeed(spec.order_seed, "baseline", 0);
  const bool poison = spec.strategy == ForgettingStrategy::kPoison;
  // Arm a trains on schedules[a]: the injected arm, the baseline, the replay
  // (with spec.replay), the references, then the IN references. sees_dp[a]:
  // the arm takes the injection steps (Inject), so its data position after
  // the fork is ahead of its LR position by the injection steps.
  std::vector<std::shared_ptr<const BatchSchedule>> schedules;
  std::vector<bool> sees_dp;
  auto add_schedule = [&](absl::StatusOr<std::unique_ptr<BatchSchedule>> schedule,
                          bool with_dp = false) {
    if (schedule.ok()) {
      schedules.push_back(*std::move(schedule));
      sees_dp.push_back(with_dp);
    }
    return schedule.status();
  };
  // The schedule of an arm that never sees Dp, ordered by `seed`.
  auto clean_schedule = [&](uint64_t seed) {
    return poison ? PoisonSchedule(d_ids, {}, spec.batch_size, spec.steps_before, seed)
                  : InjectSchedule(d_ids, {}, spec.batch_size, InjectOptionsFor(spec), seed);
  };
  // The schedule of an arm that sees Dp, ordered by `seed`.
  auto injected_schedule = [&](uint64_t seed) {
    return poison ? PoisonSchedule(d_ids, p_ids, spec.batch_size, spec.steps_before, seed)
                  : InjectSchedule(d_ids, p_ids, spec.batch_size, InjectOptionsFor(spec), seed);
  };
  MEMAUDIT_RETURN_IF_ERROR(add_schedule(injected_schedule(spec.order_seed), /*with_dp=*/true));
  MEMAUDIT_RETURN_IF_ERROR(add_schedule(clean_schedule(base_seed)));
  // The adversary rebuilds the baseline's order from the seed it knows: a
  // real second run of the baseline's steps, not a copy of its state.
  if (spec.replay) {
    MEMAUDIT_RETURN_IF_ERROR(add_schedule(clean_schedule(base_seed)));
  }
  // References: the baseline's schedule with their own seeds, so only their
  // data order after the fork differs from the baseline's.
  for (uint32_t j = 0; j < spec.reference_models; ++j) {
    MEMAUDIT_RETURN_IF_ERROR(
        add_schedule(clean_schedule(DeriveSeed(spec.order_seed, "reference", j))));
  }
  // IN references: the injected arm's schedule with their own seeds. Under
  // Inject only the injection batches' fill (dup_in_batch) and the order
  // after them are used; under Poison also their own epochs over D u Dp.
  for (uint32_t j = 0; j < spec.in_reference_models; ++j) {
    MEMAUDIT_RETURN_IF_ERROR(add_schedule(
        injected_schedule(DeriveSeed(spec.order_seed, "in_reference", j)), /*with_dp=*/true));
  }

  ForgettingRunResult result;
  auto count = [&](uint64_t, double) {
    ++result.steps;
    return !on_step || on_step(result.steps);
  };
  // LibTorch's exceptions (out of memory among them) propagate: the worker's
  // task boundary (services/worker/task_runner.cc) classifies them.
  MEMAUDIT_ASSIGN_OR_RETURN(auto first, Trainer::Create(factory, options));
  std::vector<std::unique_ptr<Trainer>> arms;
  arms.push_back(std::move(first));
  // The other arms fork from the injected arm's state at the fork point, so
  // they start from the same bits.
  auto fork_arms = [&]() -> absl::Status {
    for (size_t a = 1; a < schedules.size(); ++a) {
      MEMAUDIT_ASSIGN_OR_RETURN(auto fork, arms[0]->Fork());
      arms.push_back(std::move(fork));
    }
    return absl::OkStatus();
  };
  if (poison) {
    // Alg. 1: every arm from the same theta_0; D u Dp vs D before T_I.
    MEMAUDIT_RETURN_IF_ERROR(fork_arms());
    for (size_t a = 0; a < arms.size(); ++a) {
      MEMAUDIT_RETURN_IF_ERROR(arms[a]->Train(all, *schedules[a], spec.steps_before, count));
    }
    Measure(*arms[1], probe, &result.phi_checkpoint, &result.loss_checkpoint);
  } else {
    // Alg. 2 with the shared prefix: one checkpoint at T_I feeds both arms.
    MEMAUDIT_RETURN_IF_ERROR(arms[0]->Train(all, *schedules[0], spec.steps_before, count));
    Measure(*arms[0], probe, &result.phi_checkpoint, &result.loss_checkpoint);
    MEMAUDIT_RETURN_IF_ERROR(fork_arms());
    result.injection_steps = InjectionSteps(p_ids.size(), spec.batch_size, InjectOptionsFor(spec));
  }
  // Inject: the injection steps of the injected arm and the IN references
  // (Poison: none).
  const uint64_t injected_offset = spec.steps_before + result.injection_steps;
  for (size_t a = 0; a < arms.size(); ++a) {
    if (!sees_dp[a]) continue;
    MEMAUDIT_RETURN_IF_ERROR(arms[a]->Train(all, *schedules[a], injected_offset, count));
  }
  // From here every arm steps on D at one LR position, steps_before + k:
  // one ensemble continues them all, bit-identical to stepping them one at
  // a time (which remains where it cannot, e.g. Adam after injection steps).
  std::unique_ptr<EnsembleTrainer> packed;
  if (spec.pack_arms && PackingPays(spec)) {
    std::vector<const Trainer*> from;
    for (const auto& arm : arms) from.push_back(arm.get());
    auto ensemble = EnsembleTrainer::Continue(model, options, from, schedules);
    if (ensemble.ok()) {
      packed = *std::move(ensemble);
    } else if (ensemble.status().code() != absl::StatusCode::kFailedPrecondition) {
      return ensemble.status();
    }
  }
  result.packed = packed != nullptr;
  const uint64_t members = arms.size();
  std::vector<double> unused_loss;
  for (uint64_t k : spec.eval_points) {
    ForgettingPoint& point = result.points.emplace_back();
    point.steps_since_injection = k;
    std::vector<ArmOutputs> out = OutputsOf(point, spec, &unused_loss);
    if (packed != nullptr) {
      MEMAUDIT_RETURN_IF_ERROR(packed->Train(all, spec.steps_before + k, [&] {
        result.steps += members;
        return !on_step || on_step(result.steps);
      }));
      torch::Tensor logits = packed->Logits(probe.x);
      for (size_t a = 0; a < members; ++a) {
        MeasureLogits(logits[a], probe.y, out[a].phi, out[a].loss);
      }
    } else {
      for (size_t a = 0; a < members; ++a) {
        const uint64_t until = (sees_dp[a] ? injected_offset : spec.steps_before) + k;
        MEMAUDIT_RETURN_IF_ERROR(arms[a]->Train(all, *schedules[a], until, count));
        Measure(*arms[a], probe, out[a].phi, out[a].loss);
      }
    }
    if (on_point) on_point(result);
  }
  return result;
}

absl::StatusOr<std::vector<double>> ForgettingCandidateLosses(
    const data::LabeledExamples& data, const ForgettingReferenceSpec& spec,
    const ForgettingStepCallback& on_step) {
  if (spec.clean_rows.empty()) return absl::InvalidArgumentError("clean_rows: empty");
  if (spec.candidate_rows.empty()) return absl::InvalidArgumentError("candidate_rows: empty");
  if (spec.batch_size == 0) return absl::InvalidArgumentError("batch_size: must be > 0");
  for (const auto* rows : {&spec.clean_rows, &spec.candidate_rows}) {
    for (uint32_t r : *rows) {
      if (r >= data.count) {
        return absl::InvalidArgumentError(
            absl::StrCat("row ", r, " is outside the dataset of ", data.count));
      }
    }
  }
  const TensorDataset clean = FromLabeledExamples(data, spec.clean_rows);
  const TensorDataset candidates = FromLabeledExamples(data, spec.candidate_rows);
  std::vector<int64_t> ids(spec.clean_rows.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  const ModelSpec model = ImageModelSpec(data, spec.hidden, spec.model);
  const uint64_t init_seed = spec.init_seed;
  const TrainerOptions options =
      SeededTrainerOptions(spec.optimizer, spec.threads, spec.order_seed);
  std::vector<double> phi, loss;
  // LibTorch's exceptions (out of memory among them) propagate: the worker's
  // task boundary (services/worker/task_runner.cc) classifies them.
  MEMAUDIT_ASSIGN_OR_RETURN(
      auto trainer,
      Trainer::Create([model, init_seed] { return BuildModel(model, init_seed); }, options));
  EpochSchedule schedule(ids, spec.batch_size, spec.order_seed);
  MEMAUDIT_RETURN_IF_ERROR(trainer->Train(clean, schedule, spec.steps, [&](uint64_t done, double) {
    return !on_step || on_step(done);
  }));
  Measure(*trainer, Batch{candidates.x(), candidates.y()}, &phi, &loss);
  for (double l : loss) {
    // A NaN would make the loss order undefined.
    if (std::isnan(l)) return absl::FailedPreconditionError("forgetting reference model diverged");
  }
  return loss;
}

std::vector<size_t> PickByLoss(const std::vector<double>& losses, size_t count,
                               ForgettingSelection selection) {
  const size_t n = losses.size();
  count = std::min(count, n);
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  if (selection == ForgettingSelection::kRandom) {
    order.resize(count);
    return order;
  }
  // A stable sort keeps equal losses in index order: the pick is a pure
  // function of the losses.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return losses[a] < losses[b]; });
  size_t begin = 0;
  if (selection == ForgettingSelection::kHard) begin = n - count;
  if (selection == ForgettingSelection::kMedium) begin = (n - count) / 2;
  return std::vector<size_t>(order.begin() + begin, order.begin() + begin + count);
}

}  // namespace memaudit::engine
