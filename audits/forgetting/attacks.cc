#include "audits/forgetting/attacks.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "audits/forgetting/signals.h"
#include "scoring/calibrated_scores.h"
#include "scoring/lira.h"

namespace memaudit::forgetting {
namespace {

absl::StatusOr<std::vector<double>> CheckpointCalibrated(const ArmSignals& s) {
  return scoring::CheckpointCalibratedScores(s.phi, s.phi_checkpoint);
}

absl::StatusOr<std::vector<double>> CalibratedLoss(const ArmSignals& s) {
  return scoring::CalibratedLossScores(s.loss, s.loss_checkpoint);
}

absl::StatusOr<std::vector<double>> Uncalibrated(const ArmSignals& s) { return s.phi; }

// |phi - phi_replay|, higher = member: the replay adversary calls a model
// whose Dp scores equal its own replay of the baseline world a non-member.
absl::StatusOr<std::vector<double>> DeterministicReplay(const ArmSignals& s) {
  if (s.phi_replay == nullptr || s.phi.size() != s.phi_replay->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kPhiReplay, ": ", s.phi_replay == nullptr ? 0 : s.phi_replay->size(),
                     " values for ", s.phi.size(), " examples"));
  }
  std::vector<double> out(s.phi.size());
  for (size_t i = 0; i < s.phi.size(); ++i) out[i] = std::fabs(s.phi[i] - (*s.phi_replay)[i]);
  return out;
}

absl::StatusOr<std::vector<double>> LiraReferences(const ArmSignals& s) {
  return ForgettingLiraScores(s.phi, s.phi_references, {}, /*online=*/false,
                              s.per_example_variance);
}

absl::StatusOr<std::vector<double>> LiraOnline(const ArmSignals& s) {
  return ForgettingLiraScores(s.phi, s.phi_references, s.phi_in_references, /*online=*/true,
                              s.per_example_variance);
}

// Doc lines are the bullets of docs/audits/forgetting.md's "Scoring".
constexpr Attack kAttacks[] = {
    {kStandardAttack, true, false, CheckpointCalibrated,
     "s = φ_t − φ_ckpt. This is the paper's attack."},
    {"calibrated_loss", false, false, CalibratedLoss, "s = −(ℓ_t − ℓ_ckpt)."},
    {"uncalibrated", false, false, Uncalibrated, "s = φ_t."},
    {kReplayAttack, false, false, DeterministicReplay,
     "s = |φ_t − φ_replay,t|, the distance from the adversary's own replay of the baseline "
     "world."},
    {kLiraAttack, false, true, LiraReferences,
     "offline LiRA, s = log Φ((φ_t − μ_out) / σ_out), computed by `scoring/lira.h` "
     "(`LiraScores`, `online: false`, median centre) with the k references at the same step as "
     "the OUT models."},
    {kLiraOnlineAttack, false, true, LiraOnline,
     "online LiRA, s = log N(φ_t; μ_in, σ_in) − log N(φ_t; μ_out, σ_out), by the same "
     "`LiraScores` call with `online: true`"},
};

}  // namespace

absl::Span<const Attack> Attacks() { return kAttacks; }

const Attack* FindAttack(absl::string_view name) {
  for (const Attack& a : kAttacks) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

const Attack& DefaultAttack() {
  return *std::find_if(std::begin(kAttacks), std::end(kAttacks),
                       [](const Attack& a) { return a.is_default; });
}

std::vector<std::string> AttackNames() {
  std::vector<std::string> names;
  for (const Attack& a : kAttacks) names.emplace_back(a.name);
  return names;
}

absl::StatusOr<std::vector<double>> ForgettingLiraScores(
    const std::vector<double>& phi, const std::vector<const std::vector<double>*>& out_references,
    const std::vector<const std::vector<double>*>& in_references, bool online,
    bool per_example_variance) {
  const size_t m = phi.size();
  const size_t refs = out_references.size() + in_references.size();
  // Rows: the OUT references (keep 0), the IN references (keep 1), then the
  // target, whose own row never counts as a reference.
  scoring::Matrix matrix(refs + 1, m);
  scoring::KeepMatrix keep(refs + 1, m, 0);
  for (size_t r = 0; r < refs; ++r) {
    const bool in = r >= out_references.size();
    const size_t j = in ? r - out_references.size() : r;
    const std::vector<double>& values = in ? *in_references[j] : *out_references[j];
    if (values.size() != m) {
      return absl::InvalidArgumentError(
          absl::StrCat(in ? PhiInReferenceSignal(j) : PhiReferenceSignal(j), ": ", values.size(),
                       " values for ", m, " examples"));
    }
    std::copy(values.begin(), values.end(), matrix.row(r));
    if (in) std::fill(keep.row(r), keep.row(r) + m, 1);
  }
  std::copy(phi.begin(), phi.end(), matrix.row(refs));
  scoring::LiraOptions options;
  options.online = online;
  options.fixed_variance = !per_example_variance;
  options.center = scoring::LiraOptions::Center::kMedian;
  return scoring::LiraScores(matrix, keep, refs, options);
}

}  // namespace memaudit::forgetting
