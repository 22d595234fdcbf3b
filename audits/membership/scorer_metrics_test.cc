#include "audits/membership/scorer_metrics.h"

#include <cmath>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "common/base/seeding.h"
#include "gtest/gtest.h"
#include "scoring/auc_interval.h"
#include "scoring/balanced_accuracy_interval.h"
#include "scoring/roc.h"

namespace memaudit::scorer {
namespace {

// A spec of every attack family, with RMIA's population.
v1::AuditSpec Spec(uint32_t models, uint32_t pool, bool one_target) {
  v1::AuditSpec spec;
  spec.set_name("scored");
  spec.set_seed(11);
  v1::MembershipAudit* m = spec.mutable_membership();
  m->mutable_dataset()->set_pool_size(pool);
  m->set_reference_models(models);
  for (const char* a :
       {"lira_online", "lira_offline", "loss", "rmia", "lira_online_fixed_variance"})
    m->add_attacks(a);
  m->set_population_size(100);
  for (double f : {0.001, 0.01, 0.1}) m->add_fpr_points(f);
  if (one_target) m->set_target_model(3);
  return spec;
}

// Signals shaped like real ones, rounded to `step` (0: to float) so that
// scores tie as a float32 model's do, or far more often.
MembershipMatrices Matrices(const v1::AuditSpec& spec, double step) {
  const v1::MembershipAudit& m = spec.membership();
  const uint32_t models = m.reference_models(), pool = m.dataset().pool_size();
  const KeepMatrix keep = BuildKeepMatrix(spec.seed(), models, pool);
  SplitMix64 rng(5);
  auto round = [&](double v) {
    return step > 0 ? std::round(v / step) * step : double(static_cast<float>(v));
  };
  std::map<uint32_t, std::vector<double>> phi, loss, population;
  for (uint32_t r = 0; r < models; ++r) {
    for (uint32_t j = 0; j < pool; ++j) {
      const double v = 2.0 - (j % 17) * 0.2 + (keep.in(r, j) ? 1.0 : 0.0) + rng.UniformDouble();
      phi[r].push_back(round(v));
      loss[r].push_back(round(std::log1p(std::exp(-v))));
    }
    for (uint32_t z = 0; z < m.population_size(); ++z) {
      population[r].push_back(round(std::log1p(std::exp(-(2.0 + rng.UniformDouble())))));
    }
  }
  auto built = BuildMembershipMatrices(spec, phi, loss, population);
  EXPECT_TRUE(built.ok()) << built.status();
  return *std::move(built);
}

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Each attack's statistics as the scoring functions give them alone: each
// sorts the scores itself, on one thread.
struct Alone {
  scoring::RocCurve roc;
  scoring::ClusteredAuc clustered;
  scoring::BootstrapInterval balanced;
};

std::vector<Alone> ScoreEachAlone(const v1::AuditSpec& spec, const MembershipMatrices& matrices) {
  const v1::MembershipAudit& m = spec.membership();
  const scoring::KeepMatrix truth = TargetTruth(matrices);
  const uint32_t pool = m.dataset().pool_size();
  std::vector<uint32_t> example_of(truth.data.size());
  for (size_t i = 0; i < example_of.size(); ++i) example_of[i] = static_cast<uint32_t>(i % pool);
  const uint64_t seed = DeriveSeed(spec.seed(), "balanced_accuracy_bootstrap", 0);
  std::vector<Alone> out(m.attacks_size());
  for (size_t i = 0; i < out.size(); ++i) {
    const std::vector<double> scores = *MembershipTargetScores(m.attacks(i), matrices);
    out[i].roc = *scoring::ComputeRoc(scores, truth.data);
    out[i].clustered = *scoring::ClusteredAucInterval(scores, truth.data, example_of, pool);
    out[i].balanced =
        *scoring::BalancedAccuracyInterval(scores, truth.data, example_of, pool, seed);
  }
  return out;
}

// The plotted curve as one TprAtFpr per log-spaced bound gives it, repeats
// left out.
std::vector<std::pair<double, double>> PlottedCurve(const scoring::RocCurve& roc) {
  std::vector<std::pair<double, double>> out;
  for (int i = -1; i <= 100; ++i) {
    const double bound = i < 0 ? 0.0 : std::pow(10.0, -5.0 * (1.0 - double(i) / 100));
    const scoring::OperatingPoint point = *scoring::TprAtFpr(roc, bound);
    if (out.empty() || out.back() != std::make_pair(point.fpr, point.tpr)) {
      out.emplace_back(point.fpr, point.tpr);
    }
  }
  return out;
}

// ScoreMembership ranks each attack's scores once for all its statistics
// and spreads the bootstrap over threads: the same bits as each function
// sorting alone.
TEST(ScoreMembershipTest, MatchesEachStatisticComputedAlone) {
  for (bool one_target : {false, true}) {
    for (double step : {0.0, 0.05}) {
      SCOPED_TRACE(::testing::Message() << "one target " << one_target << " step " << step);
      const v1::AuditSpec spec = Spec(16, 600, one_target);
      const MembershipMatrices matrices = Matrices(spec, step);
      auto results = ScoreMembership(spec, matrices);
      ASSERT_TRUE(results.ok()) << results.status();
      const std::vector<Alone> alone = ScoreEachAlone(spec, matrices);
      ASSERT_EQ(results->attacks_size(), static_cast<int>(alone.size()));
      for (size_t i = 0; i < alone.size(); ++i) {
        const v1::AttackResult& a = results->attacks(static_cast<int>(i));
        EXPECT_EQ(Bits(a.auc()), Bits(scoring::Auc(alone[i].roc))) << i;
        EXPECT_EQ(Bits(a.auc_low()), Bits(alone[i].clustered.interval.lo)) << i;
        EXPECT_EQ(Bits(a.auc_high()), Bits(alone[i].clustered.interval.hi)) << i;
        EXPECT_EQ(Bits(a.balanced_accuracy()), Bits(scoring::BalancedAccuracy(alone[i].roc))) << i;
        EXPECT_EQ(Bits(a.balanced_accuracy_low()), Bits(alone[i].balanced.interval.lo)) << i;
        EXPECT_EQ(Bits(a.balanced_accuracy_high()), Bits(alone[i].balanced.interval.hi)) << i;
        ASSERT_EQ(a.operating_points_size(), spec.membership().fpr_points_size());
        for (const v1::OperatingPoint& p : a.operating_points()) {
          auto point = scoring::TprAtFpr(alone[i].roc, p.fpr_target());
          ASSERT_TRUE(point.ok());
          EXPECT_EQ(Bits(p.tpr()), Bits(point->tpr)) << i;
          EXPECT_EQ(Bits(p.fpr()), Bits(point->fpr)) << i;
          EXPECT_EQ(p.threshold(), point->threshold) << i;  // of both zeros, either
        }
        const std::vector<std::pair<double, double>> curve = PlottedCurve(alone[i].roc);
        ASSERT_EQ(a.roc_size(), static_cast<int>(curve.size())) << i;
        for (int k = 0; k < a.roc_size(); ++k) {
          EXPECT_EQ(Bits(a.roc(k).fpr()), Bits(curve[k].first)) << i << " point " << k;
          EXPECT_EQ(Bits(a.roc(k).tpr()), Bits(curve[k].second)) << i << " point " << k;
        }
      }
    }
  }
}

}  // namespace
}  // namespace memaudit::scorer
