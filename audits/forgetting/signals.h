// Observation names of a `forgetting` audit (worker -> scorer contract).
#ifndef MEMAUDIT_AUDITS_FORGETTING_SIGNALS_H_
#define MEMAUDIT_AUDITS_FORGETTING_SIGNALS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/base/steps.h"
#include "common/training/held_out_lines.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit::forgetting {

// The role of a forgetting audit's tasks (one per trial; index = the trial,
// and the run of every observation it sends).
inline constexpr char kTrialRole[] = "forgetting_trial";

// Point of the checkpoint signals; the others use steps since injection.
inline constexpr char kCheckpointPoint[] = "checkpoint";
inline constexpr char kPhiCheckpoint[] = "phi_checkpoint";
inline constexpr char kLossCheckpoint[] = "loss_checkpoint";
inline constexpr char kPhiInjected[] = "phi_injected";
inline constexpr char kPhiBaseline[] = "phi_baseline";
inline constexpr char kLossInjected[] = "loss_injected";
inline constexpr char kLossBaseline[] = "loss_baseline";
// Attack "deterministic_replay" only: phi of Dp under the replayed baseline.
inline constexpr char kPhiReplay[] = "phi_replay";
inline constexpr char kReplayAttack[] = "deterministic_replay";
// The standard attack a replay audit also reports, on the same arms.
inline constexpr char kStandardAttack[] = "checkpoint_calibrated";

// Attack "lira_references" only: phi of Dp under reference model j, signal
// "phi_reference_<j>", j < reference_models.
inline constexpr char kLiraAttack[] = "lira_references";
inline std::string PhiReferenceSignal(uint32_t j) { return "phi_reference_" + std::to_string(j); }
// Attack "lira_online": the OUT references above plus as many IN references
// (injected-arm forks with their own order), signal "phi_in_reference_<j>".
// Its results add the offline curve (kLiraAttack) on the same OUT models.
inline constexpr char kLiraOnlineAttack[] = "lira_online";
inline std::string PhiInReferenceSignal(uint32_t j) {
  return "phi_in_reference_" + std::to_string(j);
}
// Non-random injected.selection only, at point "checkpoint": the selection
// reference model's loss of each Dp example, and (one value) the mean over
// all candidates it scored.
inline constexpr char kSelectionLoss[] = "selection_loss";
inline constexpr char kCandidateLossMean[] = "candidate_loss_mean";

// LM canaries (`canaries` set) only. Values: one per canary, the inserted
// ones group by group in `canaries.repeats` order (per_group each), then the
// never-inserted controls. Point "checkpoint": exposure_checkpoint; every
// evaluation point: exposure_injected / exposure_baseline, and
// exact_injected / exact_baseline (1 = exact rank, 0 = the rank is a lower
// bound and the exposure an upper bound).
inline constexpr char kExposureAttack[] = "exposure";
inline constexpr char kExposureCheckpoint[] = "exposure_checkpoint";
inline constexpr char kExposureInjected[] = "exposure_injected";
inline constexpr char kExposureBaseline[] = "exposure_baseline";
inline constexpr char kExactInjected[] = "exact_injected";
inline constexpr char kExactBaseline[] = "exact_baseline";
// With canaries.extractable, at every evaluation point: one value per held-out
// sequence (groups in duplicates order, then the controls), 1 when it was
// extracted in the injected / the baseline arm.
inline constexpr char kExtractedInjected[] = "extracted_injected";
inline constexpr char kExtractedBaseline[] = "extracted_baseline";

// Constructions (`construction` set) only, at every evaluation point, one
// value per trial: 1 when the adversary guessed IN in the IN arm
// (guess_injected) and in the OUT arm (guess_baseline); arms_identical 1 when
// the two arms ended on the same double (deterministic mean estimation).
inline constexpr char kKMeansConstruction[] = "kmeans";
inline constexpr char kMeanEstimationConstruction[] = "mean_estimation";
inline constexpr char kGuessInjected[] = "guess_injected";
inline constexpr char kGuessBaseline[] = "guess_baseline";
inline constexpr char kArmsIdentical[] = "arms_identical";

inline bool Construction(const v1::ForgettingAudit& f) { return f.has_construction(); }
inline bool Canaries(const v1::ForgettingAudit& f) { return f.has_canaries(); }
inline uint32_t InsertedCanaries(const v1::ForgettingAudit& f) {
  return f.canaries().per_group() * static_cast<uint32_t>(f.canaries().repeats_size());
}
inline uint32_t CanaryCount(const v1::ForgettingAudit& f) {
  return InsertedCanaries(f) + f.canaries().controls();
}
// Held-out sequences of canaries.extractable: sequences per group and per
// the controls (0 without it).
inline uint32_t ExtractableSequences(const v1::ForgettingAudit& f) {
  return f.canaries().has_extractable() ? static_cast<uint32_t>(ExtractableHeldOut(
                                              f.canaries().extractable().duplicates_size(),
                                              f.canaries().extractable().sequences()))
                                        : 0;
}
// Windows in the canary batch: each canary of group g appears repeats[g]
// times, each extractable sequence of group g duplicates[g] times.
inline uint64_t CanaryCopies(const v1::ForgettingAudit& f) {
  uint64_t copies = 0;
  for (uint32_t r : f.canaries().repeats()) copies += r;
  copies *= f.canaries().per_group();
  if (f.canaries().has_extractable()) {
    for (uint32_t d : f.canaries().extractable().duplicates()) {
      copies += uint64_t{d} * f.canaries().extractable().sequences();
    }
  }
  return copies;
}

inline bool Replays(const v1::ForgettingAudit& f) { return f.attack() == kReplayAttack; }
inline bool LiraAttack(const v1::ForgettingAudit& f) {
  return f.attack() == kLiraAttack || f.attack() == kLiraOnlineAttack;
}
// OUT references per trial (both LiRA attacks).
inline uint32_t ReferenceModels(const v1::ForgettingAudit& f) {
  return LiraAttack(f) ? f.reference_models() : 0;
}
// IN references per trial ("lira_online": as many as OUT ones).
inline uint32_t InReferenceModels(const v1::ForgettingAudit& f) {
  return f.attack() == kLiraOnlineAttack ? f.reference_models() : 0;
}
inline bool SelectsByLoss(const v1::ForgettingAudit& f) {
  return !f.injected().selection().empty() && f.injected().selection() != "random";
}

// Optimizer steps of one trial, both arms: Inject T_I + injection steps + 2 x
// the last evaluation point; Poison 2 x T_I + 2 x the last evaluation point.
// A replay, and each LiRA reference model, adds another run of the baseline
// from its fork: + last (Inject), + T_I + last (Poison). Each IN reference
// adds another run of the injected arm from its fork: + injection steps +
// last (Inject), + T_I + last (Poison). Selection by loss
// first trains its reference model for selection_steps. LM canaries: T_I +
// repeats (passes) x ceil(canary copies / B) + 2 x last (Inject), 2 x T_I +
// 2 x last (Poison). The injection steps restate engine::InjectionSteps so
// services stay torch-free; engine::ForgettingTrialSteps /
// ForgettingLmTrialSteps must agree (tested end to end).
// Constructions count per-example updates of both arms: k-means one Lloyd
// pass over D0 u D1; mean estimation the injection and the last point's
// steps.
inline uint64_t TrialSteps(const v1::ForgettingAudit& f) {
  const uint64_t last = f.eval_points().empty() ? 0 : f.eval_points(f.eval_points_size() - 1);
  if (Construction(f)) {
    const v1::ForgettingConstruction& c = f.construction();
    if (c.name() == kKMeansConstruction) {
      return 2 * (2ull * c.initial_per_cluster() + 3ull * c.update_per_cluster() + 1);
    }
    return 2 * (1 + last);
  }
  const uint64_t t_i = f.training().steps_before_injection();
  if (Canaries(f)) {
    if (f.strategy() == "poison") return 2 * t_i + 2 * last;
    const uint64_t b = std::max<uint32_t>(f.training().batch_size(), 1);
    const uint64_t passes = std::max<uint32_t>(f.repeats(), 1);
    return t_i + passes * StepsPerEpoch(CanaryCopies(f), b) + 2 * last;
  }
  const uint64_t arms = (Replays(f) ? 3 : 2) + ReferenceModels(f) + InReferenceModels(f);
  const uint64_t selection = SelectsByLoss(f) ? f.injected().selection_steps() : 0;
  if (f.strategy() == "poison") return selection + arms * t_i + arms * last;
  const uint64_t b = std::max<uint32_t>(f.training().batch_size(), 1);
  const uint64_t p = f.injected().size();
  const uint64_t r = std::max<uint32_t>(f.repeats(), 1);
  uint64_t injection = 0;
  if (f.inject_mode() == "dup_in_batch") {
    const uint64_t unique = std::max<uint64_t>(1, b / r);
    injection = (p + unique - 1) / unique;
  } else {
    injection = r * StepsPerEpoch(p, b);
  }
  return selection + t_i + (1 + InReferenceModels(f)) * injection + arms * last;
}

}  // namespace memaudit::forgetting

#endif  // MEMAUDIT_AUDITS_FORGETTING_SIGNALS_H_
