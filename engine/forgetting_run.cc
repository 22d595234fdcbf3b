#include "engine/forgetting_run.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/seeding.h"
#include "engine/dataset.h"
#include "engine/model.h"
#include "engine/schedule.h"
#include "engine/signals.h"
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

absl::Status CheckSpec(const LabeledImages& data, const ForgettingRunSpec& spec) {
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

// phi and loss of `x` under the trainer's current model, in float64.
void Measure(Trainer& trainer, const Batch& probe, std::vector<double>* phi,
             std::vector<double>* loss) {
  torch::NoGradGuard no_grad;
  const bool was_training = trainer.model().is_training();
  trainer.model().eval();
  torch::Tensor logits = trainer.model().Forward(probe.x.to(trainer.device())).to(torch::kCPU);
  if (was_training) trainer.model().train();
  torch::Tensor p = LogitScaledConfidence(logits, probe.y).contiguous();
  torch::Tensor l = CrossEntropyPerExample(logits, probe.y).contiguous();
  phi->assign(p.data_ptr<double>(), p.data_ptr<double>() + p.numel());
  loss->assign(l.data_ptr<double>(), l.data_ptr<double>() + l.numel());
}

}  // namespace

uint64_t ForgettingTrialSteps(const ForgettingRunSpec& spec) {
  const uint64_t after = spec.eval_points.empty() ? 0 : spec.eval_points.back();
  // The replay and the references repeat the baseline arm from its fork:
  // Poison forks at theta_0.
  const uint64_t arms = (spec.replay ? 3 : 2) + spec.reference_models;
  if (spec.strategy == ForgettingStrategy::kPoison) {
    return arms * spec.steps_before + arms * after;
  }
  return spec.steps_before +
         InjectionSteps(spec.injected_rows.size(), spec.batch_size, InjectOptionsFor(spec)) +
         arms * after;
}

absl::StatusOr<ForgettingRunResult> RunForgetting(const LabeledImages& data,
                                                  const ForgettingRunSpec& spec,
                                                  const ForgettingStepCallback& on_step,
                                                  const ForgettingPointCallback& on_point) {
  if (absl::Status s = CheckSpec(data, spec); !s.ok()) return s;
  // Rows 0..|D|-1 are D, then Dp with its injection labels.
  TensorDataset clean = FromLabeledImages(data, spec.clean_rows);
  TensorDataset injected = FromLabeledImages(data, spec.injected_rows);
  if (!spec.injected_labels.empty()) {
    std::vector<int64_t> labels(spec.injected_labels.begin(), spec.injected_labels.end());
    injected = TensorDataset(injected.x(), torch::tensor(labels, torch::kLong));
  }
  const TensorDataset all = clean.Concat(injected);
  const Batch probe{injected.x(), injected.y()};
  std::vector<int64_t> d_ids(spec.clean_rows.size()), p_ids(spec.injected_rows.size());
  for (size_t i = 0; i < d_ids.size(); ++i) d_ids[i] = static_cast<int64_t>(i);
  for (size_t i = 0; i < p_ids.size(); ++i) p_ids[i] = static_cast<int64_t>(d_ids.size() + i);

  ModelSpec model;
  model.kind = spec.hidden.empty() ? ModelKind::kLogReg : ModelKind::kMlp;
  model.inputs = data.features;
  model.classes = data.classes;
  model.hidden = spec.hidden;
  const uint64_t init_seed = spec.init_seed;
  ModelFactory factory = [model, init_seed] { return BuildModel(model, init_seed); };
  TrainerOptions options;
  options.optimizer = spec.optimizer;
  options.threads = spec.threads == 0 ? 1 : spec.threads;
  options.dropout_seed = DeriveSeed(spec.order_seed, "dropout", 0);

  // The baseline's post-T_I order: the injected arm's when paired.
  const uint64_t base_seed =
      spec.paired ? spec.order_seed : DeriveSeed(spec.order_seed, "baseline", 0);
  const bool poison = spec.strategy == ForgettingStrategy::kPoison;
  absl::StatusOr<std::unique_ptr<BatchSchedule>> inj_schedule =
      poison
          ? PoisonSchedule(d_ids, p_ids, spec.batch_size, spec.steps_before, spec.order_seed)
          : InjectSchedule(d_ids, p_ids, spec.batch_size, InjectOptionsFor(spec), spec.order_seed);
  if (!inj_schedule.ok()) return inj_schedule.status();
  // The schedule of an arm that never sees Dp, ordered by `seed`.
  auto clean_schedule = [&](uint64_t seed) {
    return poison ? PoisonSchedule(d_ids, {}, spec.batch_size, spec.steps_before, seed)
                  : InjectSchedule(d_ids, {}, spec.batch_size, InjectOptionsFor(spec), seed);
  };
  absl::StatusOr<std::unique_ptr<BatchSchedule>> base_schedule = clean_schedule(base_seed);
  if (!base_schedule.ok()) return base_schedule.status();
  // The adversary rebuilds the baseline's order from the seed it knows.
  absl::StatusOr<std::unique_ptr<BatchSchedule>> replay_schedule = clean_schedule(base_seed);
  if (!replay_schedule.ok()) return replay_schedule.status();
  // References: the baseline's schedule with their own seeds, so only their
  // data order after the fork differs from the baseline's.
  std::vector<std::unique_ptr<BatchSchedule>> ref_schedules;
  for (uint32_t j = 0; j < spec.reference_models; ++j) {
    auto schedule = clean_schedule(DeriveSeed(spec.order_seed, "reference", j));
    if (!schedule.ok()) return schedule.status();
    ref_schedules.push_back(*std::move(schedule));
  }

  ForgettingRunResult result;
  auto count = [&](uint64_t, double) {
    ++result.steps;
    return !on_step || on_step(result.steps);
  };
  try {
    auto injected_arm = Trainer::Create(factory, options);
    if (!injected_arm.ok()) return injected_arm.status();
    std::unique_ptr<Trainer> baseline_arm, replay_arm;
    std::vector<std::unique_ptr<Trainer>> references;
    // The baseline (and the replay) fork from the injected arm's state at the
    // fork point, so they start from the same bits.
    auto fork_baseline = [&]() -> absl::Status {
      auto fork = (*injected_arm)->Fork();
      if (!fork.ok()) return fork.status();
      baseline_arm = *std::move(fork);
      for (uint32_t j = 0; j < spec.reference_models; ++j) {
        auto ref = (*injected_arm)->Fork();
        if (!ref.ok()) return ref.status();
        references.push_back(*std::move(ref));
      }
      if (!spec.replay) return absl::OkStatus();
      auto replay = (*injected_arm)->Fork();
      if (!replay.ok()) return replay.status();
      replay_arm = *std::move(replay);
      return absl::OkStatus();
    };
    if (poison) {
      // Alg. 1: both arms from the same theta_0; D u Dp vs D before T_I.
      if (absl::Status s = fork_baseline(); !s.ok()) return s;
      if (absl::Status s = (*injected_arm)->Train(all, **inj_schedule, spec.steps_before, count);
          !s.ok()) {
        return s;
      }
      if (absl::Status s = baseline_arm->Train(all, **base_schedule, spec.steps_before, count);
          !s.ok()) {
        return s;
      }
      if (replay_arm != nullptr) {
        if (absl::Status s = replay_arm->Train(all, **replay_schedule, spec.steps_before, count);
            !s.ok()) {
          return s;
        }
      }
      for (uint32_t j = 0; j < spec.reference_models; ++j) {
        if (absl::Status s = references[j]->Train(all, *ref_schedules[j], spec.steps_before, count);
            !s.ok()) {
          return s;
        }
      }
      Measure(*baseline_arm, probe, &result.phi_checkpoint, &result.loss_checkpoint);
    } else {
      // Alg. 2 with the shared prefix: one checkpoint at T_I feeds both arms.
      if (absl::Status s = (*injected_arm)->Train(all, **inj_schedule, spec.steps_before, count);
          !s.ok()) {
        return s;
      }
      Measure(**injected_arm, probe, &result.phi_checkpoint, &result.loss_checkpoint);
      if (absl::Status s = fork_baseline(); !s.ok()) return s;
      result.injection_steps =
          InjectionSteps(p_ids.size(), spec.batch_size, InjectOptionsFor(spec));
    }
    const uint64_t injected_offset = spec.steps_before + result.injection_steps;
    for (uint64_t k : spec.eval_points) {
      ForgettingPoint& point = result.points.emplace_back();
      point.steps_since_injection = k;
      if (absl::Status s = (*injected_arm)->Train(all, **inj_schedule, injected_offset + k, count);
          !s.ok()) {
        return s;
      }
      if (absl::Status s = baseline_arm->Train(all, **base_schedule, spec.steps_before + k, count);
          !s.ok()) {
        return s;
      }
      Measure(**injected_arm, probe, &point.phi_injected, &point.loss_injected);
      Measure(*baseline_arm, probe, &point.phi_baseline, &point.loss_baseline);
      if (replay_arm != nullptr) {
        // A real second run of the baseline's steps, not a copy of its state.
        if (absl::Status s =
                replay_arm->Train(all, **replay_schedule, spec.steps_before + k, count);
            !s.ok()) {
          return s;
        }
        std::vector<double> unused_loss;
        Measure(*replay_arm, probe, &point.phi_replay, &unused_loss);
      }
      for (uint32_t j = 0; j < spec.reference_models; ++j) {
        if (absl::Status s =
                references[j]->Train(all, *ref_schedules[j], spec.steps_before + k, count);
            !s.ok()) {
          return s;
        }
        std::vector<double> unused_loss;
        Measure(*references[j], probe, &point.phi_references.emplace_back(), &unused_loss);
      }
      if (on_point) on_point(result);
    }
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("forgetting run: ", e.what()));
  }
  return result;
}

absl::StatusOr<std::vector<double>> ForgettingCandidateLosses(
    const LabeledImages& data, const ForgettingReferenceSpec& spec,
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
  const TensorDataset clean = FromLabeledImages(data, spec.clean_rows);
  const TensorDataset candidates = FromLabeledImages(data, spec.candidate_rows);
  std::vector<int64_t> ids(spec.clean_rows.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  ModelSpec model;
  model.kind = spec.hidden.empty() ? ModelKind::kLogReg : ModelKind::kMlp;
  model.inputs = data.features;
  model.classes = data.classes;
  model.hidden = spec.hidden;
  const uint64_t init_seed = spec.init_seed;
  TrainerOptions options;
  options.optimizer = spec.optimizer;
  options.threads = spec.threads == 0 ? 1 : spec.threads;
  options.dropout_seed = DeriveSeed(spec.order_seed, "dropout", 0);
  std::vector<double> phi, loss;
  try {
    auto trainer =
        Trainer::Create([model, init_seed] { return BuildModel(model, init_seed); }, options);
    if (!trainer.ok()) return trainer.status();
    EpochSchedule schedule(ids, spec.batch_size, spec.order_seed);
    if (absl::Status s =
            (*trainer)->Train(clean, schedule, spec.steps,
                              [&](uint64_t done, double) { return !on_step || on_step(done); });
        !s.ok()) {
      return s;
    }
    Measure(**trainer, Batch{candidates.x(), candidates.y()}, &phi, &loss);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("forgetting reference model: ", e.what()));
  }
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
