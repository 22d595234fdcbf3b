#include "engine/schedule.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
#include "common/base/steps.h"

namespace memaudit::engine {

EpochSchedule::EpochSchedule(std::vector<int64_t> pool, uint32_t batch_size, uint64_t seed)
    : pool_(std::move(pool)),
      batch_size_(batch_size),
      seed_(seed),
      steps_per_epoch_(StepsPerEpoch(pool_.size(), batch_size)) {}

BatchPlan EpochSchedule::At(uint64_t step) const {
  BatchPlan plan;
  if (pool_.empty()) return plan;
  const uint64_t epoch = step / steps_per_epoch_;
  const uint64_t start = (step % steps_per_epoch_) * batch_size_;
  const uint64_t end = std::min<uint64_t>(pool_.size(), start + batch_size_);
  // The permutation is a pure function of the epoch; computing it costs
  // O(|pool|), as much as a small model's whole step, so the last epoch's
  // is kept (a schedule serves one trainer, on one thread).
  if (cached_order_.empty() || cached_epoch_ != epoch) {
    cached_order_ =
        SeededPermutation(DeriveSeed(seed_, "epoch", epoch), static_cast<uint32_t>(pool_.size()));
    cached_epoch_ = epoch;
  }
  for (uint64_t i = start; i < end; ++i) plan.ids.push_back(pool_[cached_order_[i]]);
  return plan;
}

namespace {

class PoisonImpl : public BatchSchedule {
 public:
  PoisonImpl(std::vector<int64_t> both, std::vector<int64_t> clean, uint32_t b, uint64_t t_i,
             uint64_t seed)
      : first_(std::move(both), b, DeriveSeed(seed, "poison.phase1", 0)),
        second_(std::move(clean), b, DeriveSeed(seed, "phase2", 0)),
        t_i_(t_i) {}
  BatchPlan At(uint64_t step) const override {
    return step < t_i_ ? first_.At(step) : second_.At(step - t_i_);
  }

 private:
  EpochSchedule first_, second_;
  uint64_t t_i_;
};

class InjectImpl : public BatchSchedule {
 public:
  InjectImpl(std::vector<int64_t> clean, std::vector<int64_t> poison, uint32_t b,
             const InjectOptions& o, uint64_t seed)
      : first_(clean, b, DeriveSeed(seed, "inject.phase1", 0)),
        second_(clean, b, DeriveSeed(seed, "phase2", 0)),
        clean_(std::move(clean)),
        poison_(std::move(poison)),
        b_(b),
        o_(o),
        seed_(seed),
        inject_steps_(InjectionSteps(poison_.size(), b, o)) {}

  BatchPlan At(uint64_t step) const override {
    if (step < o_.t_i) return first_.At(step);
    if (step >= o_.t_i + inject_steps_) return second_.At(step - o_.t_i - inject_steps_);
    const uint64_t k = step - o_.t_i;
    BatchPlan plan;
    plan.advance_lr = o_.advance_lr;
    if (o_.mode == InjectMode::kKSteps) {
      // r passes over Dp, each cut into batches of at most b rows.
      const uint64_t per_pass = StepsPerEpoch(poison_.size(), b_);
      const uint64_t start = (k % per_pass) * b_;
      const uint64_t end = std::min<uint64_t>(poison_.size(), start + b_);
      plan.ids.assign(poison_.begin() + start, poison_.begin() + end);
      return plan;
    }
    // dup_in_batch: a fixed batch size, so r copies really weigh r times more
    // than one copy under a mean-reduced loss.
    const uint64_t unique = std::max<uint64_t>(1, b_ / o_.repeats);
    const uint64_t start = k * unique;
    const uint64_t end = std::min<uint64_t>(poison_.size(), start + unique);
    for (uint64_t i = start; i < end; ++i) {
      for (uint32_t c = 0; c < o_.repeats; ++c) plan.ids.push_back(poison_[i]);
    }
    SplitMix64 rng(DeriveSeed(seed_, "inject.fill", k));
    while (plan.ids.size() < b_ && !clean_.empty()) {
      plan.ids.push_back(clean_[rng.Uniform(clean_.size())]);
    }
    return plan;
  }

 private:
  EpochSchedule first_, second_;
  std::vector<int64_t> clean_, poison_;
  uint32_t b_;
  InjectOptions o_;
  uint64_t seed_;
  uint64_t inject_steps_;
};

}  // namespace

uint64_t InjectionSteps(size_t poison_size, uint32_t batch_size, const InjectOptions& options) {
  if (poison_size == 0) return 0;
  if (options.mode == InjectMode::kKSteps) {
    return options.repeats * StepsPerEpoch(poison_size, batch_size);
  }
  const uint64_t unique = std::max<uint64_t>(1, batch_size / options.repeats);
  return (poison_size + unique - 1) / unique;
}

absl::StatusOr<std::unique_ptr<BatchSchedule>> PoisonSchedule(std::vector<int64_t> clean,
                                                              std::vector<int64_t> poison,
                                                              uint32_t batch_size, uint64_t t_i,
                                                              uint64_t seed) {
  if (batch_size == 0) return absl::InvalidArgumentError("batch_size: must be > 0");
  if (clean.empty()) return absl::InvalidArgumentError("clean: empty");
  std::vector<int64_t> both = clean;
  both.insert(both.end(), poison.begin(), poison.end());
  return std::unique_ptr<BatchSchedule>(
      std::make_unique<PoisonImpl>(std::move(both), std::move(clean), batch_size, t_i, seed));
}

absl::StatusOr<std::unique_ptr<BatchSchedule>> InjectSchedule(std::vector<int64_t> clean,
                                                              std::vector<int64_t> poison,
                                                              uint32_t batch_size,
                                                              const InjectOptions& options,
                                                              uint64_t seed) {
  if (batch_size == 0) return absl::InvalidArgumentError("batch_size: must be > 0");
  if (clean.empty()) return absl::InvalidArgumentError("clean: empty");
  if (options.repeats == 0) return absl::InvalidArgumentError("inject.repeats: must be >= 1");
  if (options.mode == InjectMode::kDupInBatch && options.repeats > batch_size) {
    return absl::InvalidArgumentError(absl::StrCat("inject.repeats: ", options.repeats,
                                                   " copies do not fit a batch of ", batch_size));
  }
  return std::unique_ptr<BatchSchedule>(
      std::make_unique<InjectImpl>(std::move(clean), std::move(poison), batch_size, options, seed));
}

}  // namespace memaudit::engine
