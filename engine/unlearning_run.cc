#include "engine/unlearning_run.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "common/base/steps.h"
#include "engine/dataset.h"
#include "engine/model.h"
#include "engine/rdp_accountant.h"
#include "engine/release.h"
#include "engine/schedule.h"
#include "engine/sisa.h"
#include "engine/torch_api.h"
#include "engine/trainer.h"

namespace memaudit::engine {
namespace {

// Epoch e visits SeededPermutation(DeriveSeed(seed, "epoch", e)) of `base`
// (EpochSchedule's order), skipping `removed`, with each `added` row put at
// a seeded place; then cuts it into batches. With nothing removed or added
// it is EpochSchedule exactly, so an unlearned child sees the original's
// data order less the deletion.
class UnlearningSchedule : public BatchSchedule {
 public:
  UnlearningSchedule(std::vector<int64_t> base, const std::vector<int64_t>& removed,
                     std::vector<int64_t> added, uint32_t batch_size, uint64_t seed)
      : base_(std::move(base)),
        removed_(removed.begin(), removed.end()),
        added_(std::move(added)),
        batch_size_(batch_size),
        seed_(seed) {
    size_t kept = 0;
    for (int64_t r : base_) kept += removed_.count(r) == 0;
    examples_ = kept + added_.size();
    steps_per_epoch_ = StepsPerEpoch(examples_, batch_size_);
  }

  BatchPlan At(uint64_t step) const override {
    const uint64_t epoch = step / steps_per_epoch_;
    if (epoch != cached_epoch_ || order_.empty()) {
      const std::vector<uint32_t> perm =
          SeededPermutation(DeriveSeed(seed_, "epoch", epoch), static_cast<uint32_t>(base_.size()));
      order_.clear();
      for (uint32_t p : perm) {
        if (removed_.count(base_[p]) == 0) order_.push_back(base_[p]);
      }
      SplitMix64 rng(DeriveSeed(seed_, "added", epoch));
      for (int64_t a : added_) {
        order_.insert(order_.begin() + static_cast<int64_t>(rng.Uniform(order_.size() + 1)), a);
      }
      cached_epoch_ = epoch;
    }
    const uint64_t begin = (step % steps_per_epoch_) * batch_size_;
    const uint64_t end = std::min<uint64_t>(begin + batch_size_, order_.size());
    BatchPlan plan;
    plan.ids.assign(order_.begin() + static_cast<int64_t>(begin),
                    order_.begin() + static_cast<int64_t>(end));
    return plan;
  }

  uint64_t steps_per_epoch() const { return steps_per_epoch_; }

 private:
  std::vector<int64_t> base_;
  std::set<int64_t> removed_;
  std::vector<int64_t> added_;
  uint32_t batch_size_;
  uint64_t seed_;
  uint64_t examples_ = 0;
  uint64_t steps_per_epoch_ = 1;
  mutable uint64_t cached_epoch_ = 0;
  mutable std::vector<int64_t> order_;
};

// One released model version: its logits on any rows (SISA: the log of the
// averaged shard posteriors, which ReleasedPosteriors turns back into them).
using LogitsFn = std::function<torch::Tensor(const torch::Tensor& x)>;

LogitsFn ModelLogits(Model& model) {
  return [&model](const torch::Tensor& x) {
    torch::NoGradGuard no_grad;
    model.eval();
    return model.Forward(x).to(torch::kCPU, torch::kFloat64);
  };
}

LogitsFn EnsembleLogits(SisaEnsemble& ensemble) {
  return [&ensemble](const torch::Tensor& x) {
    return torch::log(ensemble.Posteriors(x).clamp_min(std::numeric_limits<double>::min()));
  };
}

double Accuracy(const LogitsFn& logits, const Batch& batch) {
  return logits(batch.x).argmax(1).eq(batch.y).to(torch::kFloat64).mean().item<double>();
}

std::vector<double> Flat(const torch::Tensor& t) {
  torch::Tensor c = t.to(torch::kCPU, torch::kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// The temperature one version releases with: fitted on its own validation
// rows when a policy needs it, else 1.
double ReleaseTemperature(const LogitsFn& logits, const Batch& validation,
                          const std::vector<ReleasePolicy>& releases) {
  for (const ReleasePolicy& r : releases) {
    if (r.kind == ReleaseKind::kTemperature) {
      return FitTemperature(logits(validation.x), validation.y);
    }
  }
  return 1.0;
}

// Released posteriors of one version on `queries`, one vector per policy.
std::vector<std::vector<double>> Release(const LogitsFn& logits, const Batch& queries,
                                         double temperature,
                                         const std::vector<ReleasePolicy>& releases) {
  const torch::Tensor z = logits(queries.x);
  std::vector<std::vector<double>> out;
  for (const ReleasePolicy& r : releases)
    out.push_back(Flat(ReleasedPosteriors(z, r, temperature)));
  return out;
}

absl::Status CheckSpec(const data::LabeledExamples& data, const UnlearningRunSpec& spec) {
  if (spec.train_rows.empty()) return absl::InvalidArgumentError("train_rows: empty");
  if (spec.batch_size == 0) return absl::InvalidArgumentError("batch_size: must be > 0");
  if (spec.epochs == 0) return absl::InvalidArgumentError("epochs: must be > 0");
  if (spec.releases.empty()) return absl::InvalidArgumentError("releases: empty");
  if (spec.method == UnlearningMethod::kSisa && (spec.shards == 0 || spec.slices == 0)) {
    return absl::InvalidArgumentError("shards, slices: must be > 0");
  }
  const std::set<uint32_t> train(spec.train_rows.begin(), spec.train_rows.end());
  if (train.size() != spec.train_rows.size()) {
    return absl::InvalidArgumentError("train_rows: must be distinct");
  }
  auto in_range = [&](const std::vector<uint32_t>& rows, const char* name) -> absl::Status {
    for (uint32_t r : rows) {
      if (r >= data.count) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": row ", r, " is outside the dataset of ", data.count));
      }
    }
    return absl::OkStatus();
  };
  MEMAUDIT_RETURN_IF_ERROR(in_range(spec.train_rows, "train_rows"));
  MEMAUDIT_RETURN_IF_ERROR(in_range(spec.validation_rows, "validation_rows"));
  for (size_t j = 0; j < spec.children.size(); ++j) {
    const UnlearningChildSpec& c = spec.children[j];
    const std::string at = absl::StrCat("children[", j, "]");
    for (uint32_t r : c.removed) {
      if (train.count(r) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(at, ".removed: row ", r, " is not trained on"));
      }
    }
    if (c.removed.size() >= spec.train_rows.size() && c.added.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(at, ".removed: leaves nothing to train on"));
    }
    for (const auto* rows : {&c.added, &c.queries, &c.validation}) {
      MEMAUDIT_RETURN_IF_ERROR(in_range(*rows, at.c_str()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<UnlearningRunResult> RunUnlearning(const data::LabeledExamples& data,
                                                  const data::LabeledExamples* test,
                                                  const UnlearningRunSpec& spec,
                                                  const UnlearningStepCallback& on_step) {
  MEMAUDIT_RETURN_IF_ERROR(CheckSpec(data, spec));
  // One tensor dataset over every row the task touches; `local` maps rows.
  std::vector<uint32_t> rows;
  std::unordered_map<uint32_t, int64_t> local;
  auto take = [&](const std::vector<uint32_t>& more) {
    for (uint32_t r : more) {
      if (local.emplace(r, static_cast<int64_t>(rows.size())).second) rows.push_back(r);
    }
  };
  take(spec.train_rows);
  take(spec.validation_rows);
  for (const UnlearningChildSpec& c : spec.children) {
    take(c.added);
    take(c.queries);
    take(c.validation);
  }
  auto ids = [&](const std::vector<uint32_t>& of) {
    std::vector<int64_t> out;
    out.reserve(of.size());
    for (uint32_t r : of) out.push_back(local.at(r));
    return out;
  };
  const TensorDataset all = FromLabeledExamples(data, rows);
  const std::vector<int64_t> train_ids = ids(spec.train_rows);
  const Batch train_batch = all.Gather(train_ids);
  const Batch original_validation = all.Gather(ids(spec.validation_rows));
  Batch test_batch;
  if (test != nullptr && test->count > 0) {
    std::vector<uint32_t> test_rows(test->count);
    for (uint32_t i = 0; i < test->count; ++i) test_rows[i] = i;
    const TensorDataset t = FromLabeledExamples(*test, test_rows);
    test_batch = {t.x(), t.y()};
  }

  ModelSpec model = spec.model;
  model.inputs = data.features;
  model.classes = data.classes;
  // The original's training phases of (examples, steps): one for Scratch,
  // one per slice for each SISA shard. They do not depend on the noise, so
  // they are built once for the calibration's many epsilon evaluations.
  const bool sisa = spec.method == UnlearningMethod::kSisa;
  const SisaLayout layout =
      sisa ? BuildSisaLayout(train_ids, spec.shards, spec.slices, spec.seeds.sisa) : SisaLayout{};
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> phases;
  auto steps_for = [&](uint64_t n) { return spec.epochs * StepsPerEpoch(n, spec.batch_size); };
  if (!sisa) phases.push_back({{train_ids.size(), steps_for(train_ids.size())}});
  for (const auto& shard : layout.rows) {
    uint64_t seen = 0;
    auto& shard_phases = phases.emplace_back();
    for (const auto& slice : shard) {
      seen += slice.size();
      shard_phases.push_back({seen, steps_for(seen)});
    }
  }
  // The privacy loss of the original as a function of the noise: its most
  // exposed shard for SISA.
  const auto original_epsilon = [&](double sigma) {
    double worst = 0;
    for (const auto& p : phases) {
      worst = std::max(worst, DpEpsilonOfPhases(p, spec.batch_size, sigma, spec.dp_delta));
    }
    return worst;
  };
  double noise_multiplier = spec.noise_multiplier;
  if (spec.dp && spec.target_epsilon > 0) {
    MEMAUDIT_ASSIGN_OR_RETURN(double calibrated,
                              NoiseMultiplierForEpsilon(original_epsilon, spec.target_epsilon));
    noise_multiplier = calibrated;
  }
  auto options_for = [&](const UnlearningSeeds& seeds) {
    DpSgdOptions dp;
    dp.enabled = spec.dp;
    dp.clip_norm = spec.clip_norm;
    dp.noise_multiplier = noise_multiplier;
    dp.noise_seed = seeds.noise;
    return OptionsWithDpSgd(spec.optimizer, spec.threads, seeds.dropout, dp);
  };

  UnlearningRunResult result;
  result.classes = data.classes;
  result.noise_multiplier = spec.dp ? noise_multiplier : 0;
  auto report = [&]() -> absl::Status {
    if (on_step && !on_step(result.steps)) {
      return absl::CancelledError(absl::StrCat("stopped after ", result.steps, " steps"));
    }
    return absl::OkStatus();
  };
  // Every child shares the one original, so its temperature is fitted once.
  std::optional<double> original_temperature;
  auto release_child = [&](const UnlearningChildSpec& c, const LogitsFn& original,
                           const LogitsFn& unlearned) {
    const Batch queries = all.Gather(ids(c.queries));
    if (!original_temperature) {
      original_temperature = ReleaseTemperature(original, original_validation, spec.releases);
    }
    UnlearningChildResult& out = result.children.emplace_back();
    out.original = Release(original, queries, *original_temperature, spec.releases);
    out.unlearned = Release(
        unlearned, queries,
        ReleaseTemperature(unlearned, all.Gather(ids(c.validation)), spec.releases), spec.releases);
  };
  auto set_accuracy = [&](const LogitsFn& original) {
    result.train_accuracy = Accuracy(original, train_batch);
    if (test_batch.x.defined()) result.test_accuracy = Accuracy(original, test_batch);
  };

  // LibTorch's exceptions (out of memory among them) propagate: the worker's
  // task boundary (services/worker/task_runner.cc) classifies them.
  if (sisa) {
    SisaOptions sisa_options;
    sisa_options.batch_size = spec.batch_size;
    sisa_options.epochs_per_slice = spec.epochs;
    sisa_options.seed = spec.seeds.sisa;
    MEMAUDIT_ASSIGN_OR_RETURN(
        auto ensemble, SisaEnsemble::Create(model, options_for(spec.seeds), layout, sisa_options));
    MEMAUDIT_RETURN_IF_ERROR(ensemble->TrainAll(all));
    auto total = [](const SisaEnsemble& e) {
      uint64_t n = 0;
      for (uint64_t s : e.steps_trained()) n += s;
      return n;
    };
    const uint64_t original_steps = total(*ensemble);
    result.steps = original_steps;
    result.models_trained = spec.shards;
    if (spec.dp) result.dp_epsilon = original_epsilon(noise_multiplier);
    const LogitsFn original = EnsembleLogits(*ensemble);
    set_accuracy(original);
    MEMAUDIT_RETURN_IF_ERROR(report());
    for (const UnlearningChildSpec& c : spec.children) {
      MEMAUDIT_ASSIGN_OR_RETURN(auto child, ensemble->Fork());
      MEMAUDIT_ASSIGN_OR_RETURN(auto retrained, child->Delete(all, ids(c.removed)));
      result.models_trained += retrained.size();
      if (!c.added.empty()) {
        MEMAUDIT_RETURN_IF_ERROR(child->Add(all, ids(c.added)).status());
        ++result.models_trained;
      }
      result.steps += total(*child) - original_steps;
      release_child(c, original, EnsembleLogits(*child));
      MEMAUDIT_RETURN_IF_ERROR(report());
    }
    return result;
  }

  auto count = [&](uint64_t, double) {
    ++result.steps;
    return !on_step || on_step(result.steps);
  };
  auto train = [&](const UnlearningSeeds& seeds,
                   const UnlearningSchedule& schedule) -> absl::StatusOr<std::unique_ptr<Trainer>> {
    const uint64_t init = seeds.init;
    MEMAUDIT_ASSIGN_OR_RETURN(
        auto trainer,
        Trainer::Create([model, init] { return BuildModel(model, init); }, options_for(seeds)));
    MEMAUDIT_RETURN_IF_ERROR(
        trainer->Train(all, schedule, spec.epochs * schedule.steps_per_epoch(), count));
    ++result.models_trained;
    return trainer;
  };
  const UnlearningSchedule original_schedule(train_ids, {}, {}, spec.batch_size, spec.seeds.order);
  MEMAUDIT_ASSIGN_OR_RETURN(auto original, train(spec.seeds, original_schedule));
  if (spec.dp) result.dp_epsilon = original_epsilon(noise_multiplier);
  const LogitsFn original_logits = ModelLogits(original->model());
  set_accuracy(original_logits);
  for (const UnlearningChildSpec& c : spec.children) {
    const std::vector<int64_t> removed = ids(c.removed), added = ids(c.added);
    std::unique_ptr<UnlearningSchedule> schedule;
    if (c.shared_order) {
      schedule = std::make_unique<UnlearningSchedule>(train_ids, removed, added, spec.batch_size,
                                                      c.seeds.order);
    } else {
      const std::set<int64_t> gone(removed.begin(), removed.end());
      std::vector<int64_t> own;
      for (int64_t r : train_ids) {
        if (gone.count(r) == 0) own.push_back(r);
      }
      own.insert(own.end(), added.begin(), added.end());
      schedule = std::make_unique<UnlearningSchedule>(
          own, std::vector<int64_t>{}, std::vector<int64_t>{}, spec.batch_size, c.seeds.order);
    }
    MEMAUDIT_ASSIGN_OR_RETURN(auto child, train(c.seeds, *schedule));
    release_child(c, original_logits, ModelLogits(child->model()));
  }
  return result;
}

}  // namespace memaudit::engine
