#include "audits/membership/attacks.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "common/base/status_macros.h"
#include "common/messages/enum_names.h"
#include "scoring/lira.h"
#include "scoring/rmia.h"

namespace memaudit::membership {
namespace {

// Pr(y|x, θ) = exp(−loss), kept >= the smallest normal double so RMIA's
// ratios stay defined for examples a model gets badly wrong.
scoring::Matrix TrueLabelProbabilities(const scoring::Matrix& loss) {
  scoring::Matrix p = loss;
  for (double& v : p.data) v = std::max(std::exp(-v), std::numeric_limits<double>::min());
  return p;
}

// The other models' rows of `m`: target t's references.
scoring::Matrix WithoutRow(const scoring::Matrix& m, size_t t) {
  scoring::Matrix out(m.rows - 1, m.cols);
  for (size_t r = 0, k = 0; r < m.rows; ++r) {
    if (r == t) continue;
    std::copy(m.data.begin() + r * m.cols, m.data.begin() + (r + 1) * m.cols,
              out.data.begin() + k++ * m.cols);
  }
  return out;
}

// RMIA online with every other model as a reference (IN and OUT alike):
// row t scores the pool against target t. Only the targets' rows are
// computed; the others stay 0.
absl::StatusOr<std::vector<double>> RmiaScores(const AttackInputs& in) {
  const scoring::Matrix pr_x = TrueLabelProbabilities(in.loss);
  const scoring::Matrix pr_z = TrueLabelProbabilities(in.population_loss);
  std::vector<double> out(pr_x.data.size());
  scoring::RmiaOptions options;
  options.offline = false;
  for (size_t t = in.first_target; t < in.first_target + in.targets; ++t) {
    MEMAUDIT_ASSIGN_OR_RETURN(
        auto scores,
        scoring::RmiaScores(absl::MakeConstSpan(pr_x.data).subspan(t * pr_x.cols, pr_x.cols),
                            WithoutRow(pr_x, t),
                            absl::MakeConstSpan(pr_z.data).subspan(t * pr_z.cols, pr_z.cols),
                            WithoutRow(pr_z, t), options));
    std::copy(scores.scores.begin(), scores.scores.end(), out.begin() + t * pr_x.cols);
  }
  return out;
}

absl::StatusOr<std::vector<double>> LossAttackScores(const AttackInputs& in) {
  return scoring::LossScores(in.loss.data);
}

absl::StatusOr<std::vector<double>> Lira(const AttackInputs& in, scoring::LiraOptions options) {
  return scoring::LiraScoresAllTargets(in.phi, in.keep, options);
}

absl::StatusOr<std::vector<double>> LiraOnline(const AttackInputs& in) { return Lira(in, {}); }

absl::StatusOr<std::vector<double>> LiraOffline(const AttackInputs& in) {
  scoring::LiraOptions options;
  options.online = false;
  return Lira(in, options);
}

absl::StatusOr<std::vector<double>> LiraOnlineFixedVariance(const AttackInputs& in) {
  scoring::LiraOptions options;
  options.fixed_variance = true;
  return Lira(in, options);
}

absl::StatusOr<std::vector<double>> LiraOfflineFixedVariance(const AttackInputs& in) {
  scoring::LiraOptions options;
  options.online = false;
  options.fixed_variance = true;
  return Lira(in, options);
}

absl::StatusOr<std::vector<double>> LiraOfflineTwoSided(const AttackInputs& in) {
  scoring::LiraOptions options;
  options.online = false;
  options.two_sided = true;
  return Lira(in, options);
}

absl::StatusOr<std::vector<double>> LiraFixedVarianceReference(const AttackInputs& in) {
  scoring::LiraOptions options;
  options.reference_variance = true;
  return Lira(in, options);
}

// A documents-only signal's rows as the scores: each target scored alone.
absl::StatusOr<std::vector<double>> TextSignal(const scoring::Matrix* signal, const char* name) {
  if (signal == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": scores documents only"));
  }
  return signal->data;
}

absl::StatusOr<std::vector<double>> ZlibScores(const AttackInputs& in) {
  return TextSignal(in.zlib, "zlib");
}

absl::StatusOr<std::vector<double>> MinKScores(const AttackInputs& in) {
  return TextSignal(in.min_k, "min_k");
}

absl::StatusOr<std::vector<double>> MinKPlusScores(const AttackInputs& in) {
  return TextSignal(in.min_k_plus, "min_k_plus");
}

// φ under the target minus its mean over the target's OUT references (the
// other models that did not train on the example): a likelihood ratio
// against reference models, offline. An example no reference left out (only
// possible in a hand-made keep-matrix) is calibrated by all of them.
absl::StatusOr<std::vector<double>> ReferenceScores(const AttackInputs& in) {
  const scoring::Matrix& phi = in.phi;
  std::vector<double> out(phi.data.size());
  for (size_t t = in.first_target; t < in.first_target + in.targets; ++t) {
    for (size_t j = 0; j < phi.cols; ++j) {
      double out_sum = 0, all_sum = 0;
      size_t outs = 0, all = 0;
      for (size_t r = 0; r < phi.rows; ++r) {
        if (r == t) continue;
        const double v = phi.at(r, j);
        all_sum += v;
        ++all;
        if (in.keep.at(r, j) == 0) {
          out_sum += v;
          ++outs;
        }
      }
      if (all == 0) return absl::InvalidArgumentError("reference: needs a reference model");
      const double mean =
          outs > 0 ? out_sum / static_cast<double>(outs) : all_sum / static_cast<double>(all);
      out[t * phi.cols + j] = phi.at(t, j) - mean;
    }
  }
  return out;
}

// Doc lines are the score column of docs/audits/membership.md's table.
constexpr Attack kAttacks[] = {
    {v1::LIRA_ONLINE, true, true, false, 6, false, true, LiraOnline,
     "log N(φ; μ_in, σ_in) − log N(φ; μ_out, σ_out), per-example μ (median) and σ"},
    {v1::LIRA_OFFLINE, true, true, false, 6, false, true, LiraOffline,
     "log Φ((φ − μ_out)/σ_out), one-sided against OUT only"},
    {v1::LIRA_ONLINE_FIXED_VARIANCE, true, true, false, 4, false, true, LiraOnlineFixedVariance,
     "`lira_online` with one σ_in and one σ_out per target, each pooled over all examples "
     "(better with few references)"},
    {v1::LIRA_OFFLINE_FIXED_VARIANCE, true, true, false, 4, false, true, LiraOfflineFixedVariance,
     "`lira_offline` with one σ_out per target, pooled over all examples"},
    {v1::RMIA, true, true, false, 4, true, true, RmiaScores,
     "fraction of population examples z that x beats: (Pr(x|θ)/Pr(x)) / (Pr(z|θ)/Pr(z)) ≥ 1, "
     "Pr(·) the mean over the N − 1 references"},
    {v1::LOSS, true, true, false, 4, false, false, LossAttackScores,
     "−loss (the classic loss-threshold attack)"},
    {v1::LIRA_OFFLINE_TWO_SIDED, false, false, false, 6, false, true, LiraOfflineTwoSided,
     "−log N(φ; μ_out, σ_out): the LiRA reference code's offline test (φ far from OUT either "
     "way scores high); only when named in `attacks`"},
    {v1::LIRA_FIXED_VARIANCE_REFERENCE, false, false, false, 4, false, true,
     LiraFixedVarianceReference,
     "`lira_online` with the reference code's fixed variance: one σ, the std of every raw IN "
     "value, for IN and OUT; only when named"},
    {v1::ZLIB, false, true, true, 4, false, false, ZlibScores,
     "Σ log p(x_t | x_<t) / zlib bytes of the text (documents only)"},
    {v1::MIN_K, false, true, true, 4, false, false, MinKScores,
     "mean of the lowest 20% of log p(x_t | x_<t) (documents only)"},
    {v1::MIN_K_PLUS, false, true, true, 4, false, false, MinKPlusScores,
     "mean of the lowest 20% of (log p(x_t | x_<t) − μ_t) / σ_t, μ_t and σ_t the mean and std "
     "of log p under the model's own next-token distribution (documents only)"},
    {v1::REFERENCE, false, true, false, 4, false, true, ReferenceScores,
     "φ − the mean φ of the target's OUT references (difficulty calibration; default for "
     "documents)"},
};

}  // namespace

absl::Span<const Attack> Attacks() { return kAttacks; }

bool IsDefault(const Attack& attack, const v1::MembershipAudit& m) {
  return m.has_documents() ? attack.documents_default : attack.is_default;
}

std::string AttackName(v1::MembershipAttack attack) {
  return LowerCaseName(*v1::MembershipAttack_descriptor(), attack);
}

v1::MembershipAttack AttackByName(absl::string_view name) {
  return static_cast<v1::MembershipAttack>(
      ValueOfLowerCaseName(*v1::MembershipAttack_descriptor(), name));
}

const Attack* FindAttack(absl::string_view name) {
  const v1::MembershipAttack id = AttackByName(name);
  for (const Attack& a : kAttacks) {
    if (a.id == id) return &a;
  }
  return nullptr;
}

std::vector<std::string> AttackNames() {
  std::vector<std::string> names;
  for (const Attack& a : kAttacks) names.push_back(AttackName(a.id));
  return names;
}

DefaultFit FitOfDefault(const Attack& attack, uint32_t reference_models, uint32_t rows,
                        uint32_t pool_size) {
  if (attack.needs_population && rows > 0 && pool_size >= rows) return DefaultFit::kNoPopulation;
  if (attack.min_reference_models > reference_models) return DefaultFit::kTooFewReferenceModels;
  return DefaultFit::kRuns;
}

}  // namespace memaudit::membership
