// The worker -> scorer contract of an `unlearning` audit ("When Machine
// Unlearning Jeopardizes Privacy"): task roles, observation names, and the
// data each task uses. Every subset is a pure function of (spec.seed, side,
// original i, child j), computed here in pool positions (0..pool_size-1) so
// the planner (exact step counts), the worker (training) and the tests agree
// without LibTorch.
#ifndef MEMAUDIT_AUDITS_UNLEARNING_SIGNALS_H_
#define MEMAUDIT_AUDITS_UNLEARNING_SIGNALS_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/base/seeding.h"
#include "common/base/steps.h"
#include "common/training/sisa_layout.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit::unlearning {

inline constexpr char kShadow[] = "shadow";
inline constexpr char kTarget[] = "target";
// Task roles; the index is the original model i of that side.
inline constexpr char kShadowRole[] = "shadow_original";
inline constexpr char kTargetRole[] = "target_original";

// Observations of a task (run = i):
//  - point "<side>", signal "original": kSummaryValues numbers below;
//  - point "<side>/<j>", signal "posteriors/<defense>": the released
//    posteriors of the original model, then of unlearned child j, on the
//    child's query rows (positives first, then as many negatives), each
//    rows x classes row-major: 2 x rows x classes values.
inline constexpr char kSummarySignal[] = "original";
inline constexpr char kPosteriorsPrefix[] = "posteriors/";
enum SummaryValue : int {
  kTrainAccuracy = 0,  // the original on its training set
  kTestAccuracy = 1,   // the original on the dataset's test split
  kModelsTrained = 2,  // models (SISA: shard models) this task trained
  kDpEpsilon = 3,      // DP-SGD epsilon of the original (0 without DP)
  kSummaryValues = 4,
};

inline std::string ChildPoint(absl::string_view side, uint32_t j) {
  return absl::StrCat(side, "/", j);
}
inline std::string PosteriorsSignal(absl::string_view defense) {
  return absl::StrCat(kPosteriorsPrefix, defense);
}

// Names the spec may list, in report order.
inline const std::vector<std::string>& FeatureNames() {
  static const auto* names = new std::vector<std::string>{
      "direct_concat", "sorted_concat", "direct_diff", "sorted_diff", "euclidean_distance"};
  return *names;
}
inline constexpr char kBaselineFeature[] = "baseline";
// Mirrors scoring::AttackClassifierNames() (checked by the scorer's tests),
// so the coordinator can validate without linking the scoring library.
inline const std::vector<std::string>& ClassifierNames() {
  static const auto* names =
      new std::vector<std::string>{"gradient_boosting", "random_forest", "logistic_regression"};
  return *names;
}

// "top_<k>" -> k (0 when `defense` is not of that form).
inline uint32_t TopK(absl::string_view defense) {
  uint32_t k = 0;
  if (!absl::ConsumePrefix(&defense, "top_") || defense.empty() || defense[0] == '0' ||
      !absl::SimpleAtoi(defense, &k)) {
    return 0;
  }
  return k;
}

// Examples the temperature of one released model is fitted on (at most; the
// negative pool may be smaller). The pilot in the paper digest used 200.
inline constexpr uint32_t kTemperatureValidation = 200;

// Pool positions of one side: the shadow half is [0, pool/2), the target
// half the next pool/2; each splits 80/20 into positive and negative pools,
// and online deletion takes the last 15% of the negative pool as the pool
// of added samples (disjoint from the negatives, as in the paper's code).
struct SidePools {
  std::vector<uint32_t> positive, negative, replacement;
};
inline SidePools PoolsFor(const v1::UnlearningAudit& u, bool target) {
  const uint32_t half = u.dataset().pool_size() / 2;
  const uint32_t begin = target ? half : 0;
  const uint32_t positives = half * 4 / 5;
  uint32_t negatives = half - positives;
  const uint32_t replacement = u.deletion() == "online" ? negatives * 15 / 100 : 0;
  negatives -= replacement;
  SidePools p;
  for (uint32_t k = 0; k < positives; ++k) p.positive.push_back(begin + k);
  for (uint32_t k = 0; k < negatives; ++k) p.negative.push_back(begin + positives + k);
  for (uint32_t k = 0; k < replacement; ++k) {
    p.replacement.push_back(begin + positives + negatives + k);
  }
  return p;
}

// Samples each unlearned model deletes: g, or 1 for single deletion.
inline uint32_t DeletedPerChild(const v1::UnlearningAudit& u) {
  return u.deletion() == "single" ? 1 : std::max<uint32_t>(u.group_size(), 1);
}
// Samples added per child (online: as many as deleted).
inline uint32_t AddedPerChild(const v1::UnlearningAudit& u) {
  return u.deletion() == "online" ? DeletedPerChild(u) : 0;
}
// Positives queried per child: every deleted sample for group and online
// deletion; one otherwise (the single deleted sample, the one target among
// the intermediate deletions, or one remaining sample). As many negatives.
inline uint32_t PositivesPerChild(const v1::UnlearningAudit& u) {
  return u.deletion() == "group" || u.deletion() == "online" ? DeletedPerChild(u) : 1;
}

inline const v1::UnlearningSide& SideSpec(const v1::UnlearningAudit& u, bool target) {
  return target ? u.target() : u.shadow();
}

struct ChildPlan {
  std::vector<uint32_t> removed;     // G, a subset of the original's training set
  std::vector<uint32_t> added;       // online: new samples from the replacement pool
  std::vector<uint32_t> positives;   // queried, label 1
  std::vector<uint32_t> negatives;   // queried, label 0 (in neither model)
  std::vector<uint32_t> validation;  // temperature fit of the unlearned model
};

struct TaskPlan {
  std::vector<uint32_t> train;       // D_o, in training order of the list
  std::vector<uint32_t> validation;  // temperature fit of the original
  std::vector<ChildPlan> children;
};

inline uint64_t SideSeed(uint64_t seed, bool target, const char* what, uint64_t i) {
  return DeriveSeed(seed, absl::StrCat("unlearning/", target ? kTarget : kShadow, "/", what), i);
}
// Seeds of child j of original i.
inline uint64_t ChildSeed(uint64_t seed, bool target, const char* what, uint64_t i, uint64_t j) {
  return DeriveSeed(SideSeed(seed, target, "child", i), what, j);
}

// n distinct entries of `from`, uniformly: a partial Fisher-Yates shuffle
// kept in a sparse map, O(n) however large the pool, so planning a big audit
// (the planner calls PlanTask for every SISA task) stays cheap.
inline std::vector<uint32_t> Draw(uint64_t seed, const std::vector<uint32_t>& from, uint32_t n) {
  const uint32_t size = static_cast<uint32_t>(from.size());
  n = std::min(n, size);
  SplitMix64 rng(seed);
  std::unordered_map<uint32_t, uint32_t> moved;  // slot -> index of `from` now in it
  auto at = [&](uint32_t slot) {
    auto it = moved.find(slot);
    return it == moved.end() ? slot : it->second;
  };
  std::vector<uint32_t> out;
  out.reserve(n);
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t j = k + static_cast<uint32_t>(rng.Uniform(size - k));
    const uint32_t picked = at(j);
    moved[j] = at(k);
    out.push_back(from[picked]);
  }
  return out;
}

// The data of task (side, i). Assumes a validated spec.
inline TaskPlan PlanTask(const v1::AuditSpec& spec, bool target, uint32_t i) {
  const v1::UnlearningAudit& u = spec.unlearning();
  const uint64_t seed = spec.seed();
  const SidePools pools = PoolsFor(u, target);
  const v1::UnlearningSide& side = SideSpec(u, target);
  const uint32_t g = DeletedPerChild(u);
  TaskPlan plan;
  // Originals' subsets are drawn independently and may overlap (the paper's
  // "improving diversity").
  plan.train = Draw(SideSeed(seed, target, "original", i), pools.positive, side.samples());
  plan.validation =
      Draw(SideSeed(seed, target, "validation", i), pools.negative, kTemperatureValidation);
  for (uint32_t j = 0; j < side.unlearned(); ++j) {
    ChildPlan& c = plan.children.emplace_back();
    // G and the remaining sample are prefixes of one permutation of D_o, so
    // the remaining sample is never deleted.
    const std::vector<uint32_t> order =
        Draw(ChildSeed(seed, target, "delete", i, j), plan.train, g + 1);
    c.removed.assign(order.begin(), order.begin() + std::min<size_t>(g, order.size()));
    if (u.deletion() == "remaining") {
      if (order.size() > g) c.positives = {order[g]};
    } else if (u.deletion() == "group" || u.deletion() == "online") {
      c.positives = c.removed;
    } else {
      c.positives = {c.removed.front()};  // single, or the one target among intermediate ones
    }
    c.added = Draw(ChildSeed(seed, target, "add", i, j), pools.replacement, AddedPerChild(u));
    c.negatives = Draw(ChildSeed(seed, target, "negatives", i, j), pools.negative,
                       static_cast<uint32_t>(c.positives.size()));
    c.validation =
        Draw(ChildSeed(seed, target, "validation", i, j), pools.negative, kTemperatureValidation);
  }
  return plan;
}

// Seeds of the original's training (and of every child under the "shared"
// seed policy); SISA's shard inits and orders derive from `sisa`.
struct TrainingSeeds {
  uint64_t init = 0, order = 0, noise = 0, dropout = 0, sisa = 0;
};
inline TrainingSeeds OriginalSeeds(uint64_t seed, bool target, uint32_t i) {
  return {SideSeed(seed, target, "init", i), SideSeed(seed, target, "order", i),
          SideSeed(seed, target, "noise", i), SideSeed(seed, target, "dropout", i),
          SideSeed(seed, target, "sisa", i)};
}
inline TrainingSeeds ChildSeeds(const v1::AuditSpec& spec, bool target, uint32_t i, uint32_t j) {
  const uint64_t s = spec.seed();
  if (spec.unlearning().seed_policy() != "independent") {
    TrainingSeeds shared = OriginalSeeds(s, target, i);
    // DP-SGD noise is always fresh: the same noise in both versions would
    // cancel in their difference and void the guarantee DP-SGD gives.
    if (spec.unlearning().has_dp_sgd()) shared.noise = ChildSeed(s, target, "noise", i, j);
    return shared;
  }
  return {ChildSeed(s, target, "init", i, j), ChildSeed(s, target, "order", i, j),
          ChildSeed(s, target, "noise", i, j), ChildSeed(s, target, "dropout", i, j),
          ChildSeed(s, target, "sisa", i, j)};
}

inline uint64_t EpochSteps(uint64_t examples, uint64_t batch, uint64_t epochs) {
  return epochs * StepsPerEpoch(examples, batch);
}

// Optimizer steps a shard takes training slices [from, end) (SisaEnsemble:
// slice k trains `epochs` epochs over the union of slices 0..k), from the
// slices' sizes.
inline uint64_t SisaShardSteps(const std::vector<uint64_t>& slice_sizes, uint32_t from,
                               uint64_t batch, uint64_t epochs) {
  uint64_t seen = 0, steps = 0;
  for (uint32_t k = 0; k < slice_sizes.size(); ++k) {
    seen += slice_sizes[k];
    if (k >= from) steps += EpochSteps(seen, batch, epochs);
  }
  return steps;
}

struct TaskWork {
  uint64_t steps = 0;   // optimizer steps, original and every child
  uint64_t models = 0;  // models trained (SISA: shard models, retrains included)
};

// What task (side, i) trains, exactly as the worker does it.
inline TaskWork TaskWorkFor(const v1::AuditSpec& spec, bool target, uint32_t i) {
  const v1::UnlearningAudit& u = spec.unlearning();
  const v1::UnlearningSide& side = SideSpec(u, target);
  const uint64_t batch = std::max<uint32_t>(u.training().batch_size(), 1);
  const uint64_t epochs = u.training().epochs();
  TaskWork work;
  if (u.method() != "sisa") {
    const uint64_t child_size = side.samples() - DeletedPerChild(u) + AddedPerChild(u);
    work.steps = EpochSteps(side.samples(), batch, epochs) +
                 side.unlearned() * EpochSteps(child_size, batch, epochs);
    work.models = 1 + side.unlearned();
    return work;
  }
  const TaskPlan plan = PlanTask(spec, target, i);
  const SisaSlices layout = SisaLayoutOf(side.samples(), u.sisa().shards(), u.sisa().slices(),
                                         OriginalSeeds(spec.seed(), target, i).sisa);
  // Where each pool position of D_o sits, and the slice sizes.
  std::unordered_map<uint32_t, std::pair<uint32_t, uint32_t>> where;
  std::vector<std::vector<uint64_t>> sizes(layout.size());
  std::vector<uint64_t> totals(layout.size(), 0);
  for (uint32_t s = 0; s < layout.size(); ++s) {
    for (uint32_t k = 0; k < layout[s].size(); ++k) {
      sizes[s].push_back(layout[s][k].size());
      totals[s] += layout[s][k].size();
      for (uint32_t idx : layout[s][k]) where[plan.train[idx]] = {s, k};
    }
    work.steps += SisaShardSteps(sizes[s], 0, batch, epochs);
  }
  work.models = layout.size();
  for (const ChildPlan& c : plan.children) {
    // SisaEnsemble::Delete: each shard holding a deleted sample, from the
    // first slice that held one.
    std::map<uint32_t, std::pair<std::vector<uint64_t>, uint32_t>> touched;
    for (uint32_t position : c.removed) {
      const auto [s, k] = where.at(position);
      auto it = touched.emplace(s, std::make_pair(sizes[s], k)).first;
      --it->second.first[k];
      it->second.second = std::min(it->second.second, k);
    }
    for (const auto& [s, shard] : touched) {
      work.steps += SisaShardSteps(shard.first, shard.second, batch, epochs);
      ++work.models;
    }
    if (c.added.empty()) continue;
    // SisaEnsemble::Add: the first smallest shard, from its last slice.
    uint32_t smallest = 0;
    uint64_t smallest_size = UINT64_MAX;
    for (uint32_t s = 0; s < layout.size(); ++s) {
      uint64_t size = totals[s];
      if (auto it = touched.find(s); it != touched.end()) {
        size = 0;
        for (uint64_t n : it->second.first) size += n;
      }
      if (size < smallest_size) {
        smallest_size = size;
        smallest = s;
      }
    }
    std::vector<uint64_t> after =
        touched.count(smallest) ? touched.at(smallest).first : sizes[smallest];
    after.back() += c.added.size();
    work.steps += SisaShardSteps(after, static_cast<uint32_t>(after.size() - 1), batch, epochs);
    ++work.models;
  }
  return work;
}

}  // namespace memaudit::unlearning

#endif  // MEMAUDIT_AUDITS_UNLEARNING_SIGNALS_H_
