// Every kind's per-example export (docs/export.md) from real services: each
// array as documented, and a headline number of the results recomputed here
// from the exported arrays alone.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "audits/membership/attacks.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

using ::memaudit::testing::IsOk;
using ::memaudit::testing::StatusIs;
using Arrays = std::map<std::string, v1::ExportArray>;

Arrays ByName(const std::vector<v1::ExportArray>& arrays) {
  Arrays out;
  for (const v1::ExportArray& a : arrays) out[a.name()] = a;
  return out;
}

// ROC AUC as the Mann-Whitney statistic with mid-ranks: written here, apart
// from the scorer's ROC code, so the two can disagree.
double MannWhitneyAuc(const std::vector<double>& positives, const std::vector<double>& negatives) {
  std::vector<std::pair<double, bool>> all;
  for (double v : positives) all.push_back({v, true});
  for (double v : negatives) all.push_back({v, false});
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double rank_sum = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double mid_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k) rank_sum += all[k].second ? mid_rank : 0;
    i = j;
  }
  const double p = static_cast<double>(positives.size()), n = static_cast<double>(negatives.size());
  return (rank_sum - p * (p + 1) / 2) / (p * n);
}

class ExportTest : public ClusterTest {
 protected:
  Arrays Export(const std::string& audit_id) {
    auto arrays = client_->Export(audit_id);
    EXPECT_THAT(arrays, IsOk());
    return arrays.ok() ? ByName(*arrays) : Arrays();
  }

  void CheckMembership(const v1::AuditResults& results, const Arrays& arrays);
  void CheckExposure(const v1::AuditResults& results, const Arrays& arrays);
  void CheckForgetting(const v1::AuditResults& results, const Arrays& arrays);
  void CheckUnlearning(const v1::AuditResults& results, const Arrays& arrays);
  void CheckRelational(const v1::AuditResults& results, const Arrays& arrays);
};

void ExportTest::CheckMembership(const v1::AuditResults& results, const Arrays& arrays) {
  const v1::ExportArray& keep = arrays.at("keep");
  ASSERT_THAT(keep.shape(), ::testing::ElementsAre(results.models(), results.examples()));
  EXPECT_EQ(keep.dtype(), v1::UINT8);
  ASSERT_TRUE(arrays.count("phi") && arrays.count("loss") && arrays.count("dataset_index"));
  const v1::ExportArray& targets = arrays.at("target_model");
  ASSERT_EQ(results.attacks_size(), 4);
  for (const v1::AttackResult& attack : results.attacks()) {
    const v1::ExportArray& scores =
        arrays.at(absl::StrCat("score_", membership::AttackName(attack.attack())));
    std::vector<double> members, non_members;
    const uint64_t examples = scores.shape(1);
    for (int t = 0; t < targets.values_size(); ++t) {
      const uint64_t model = static_cast<uint64_t>(targets.values(t));
      for (uint64_t j = 0; j < examples; ++j) {
        const double s = scores.values(t * examples + j);
        (keep.values(model * examples + j) == 1 ? members : non_members).push_back(s);
      }
    }
    EXPECT_EQ(members.size(), results.members());
    EXPECT_NEAR(MannWhitneyAuc(members, non_members), attack.auc(), 1e-12)
        << membership::AttackName(attack.attack());
  }
}

void ExportTest::CheckExposure(const v1::AuditResults& results, const Arrays& arrays) {
  const v1::ExposureResults& x = results.exposure();
  const v1::ExportArray& px = arrays.at("px_bits");
  const v1::ExportArray& rank = arrays.at("rank");
  const v1::ExportArray& refs = arrays.at("reference_px_bits");
  ASSERT_EQ(px.values_size(), x.canaries_size());
  ASSERT_EQ(static_cast<uint32_t>(refs.values_size()), x.reference_samples());
  for (int i = 0; i < x.canaries_size(); ++i) {
    const v1::CanaryResult& c = x.canaries(i);
    EXPECT_EQ(px.values(i), c.px_bits());
    EXPECT_EQ(static_cast<uint64_t>(rank.values(i)), c.rank());
    EXPECT_EQ(arrays.at("canary_repeats").values(i), c.repeats());
    // Sampled exposure: log2|S| - log2(1 + |{s : Px(s) <= Px(canary)}|).
    double below = 0;
    for (double r : refs.values()) below += r <= px.values(i);
    EXPECT_NEAR(std::log2(refs.values_size()) - std::log2(1 + below), c.sampled_exposure(), 1e-12)
        << "canary " << i;
  }
}

void ExportTest::CheckForgetting(const v1::AuditResults& results, const Arrays& arrays) {
  const v1::ForgettingResults& f = results.forgetting();
  const v1::ExportArray& auc = arrays.at("auc");
  const v1::ExportArray& injected = arrays.at("score_injected");
  const v1::ExportArray& baseline = arrays.at("score_baseline");
  const uint64_t points = auc.shape(0), trials = auc.shape(1), examples = injected.shape(2);
  ASSERT_EQ(static_cast<int>(points), f.curve_size());
  ASSERT_EQ(trials, f.trials());
  for (uint64_t p = 0; p < points; ++p) {
    EXPECT_EQ(arrays.at("steps_since_injection").values(p), f.curve(p).steps_since_injection());
    double sum = 0;
    for (uint64_t t = 0; t < trials; ++t) {
      const auto from = (p * trials + t) * examples;
      std::vector<double> in(injected.values().begin() + from,
                             injected.values().begin() + from + examples);
      std::vector<double> out(baseline.values().begin() + from,
                              baseline.values().begin() + from + examples);
      EXPECT_NEAR(MannWhitneyAuc(in, out), auc.values(p * trials + t), 1e-12);
      sum += auc.values(p * trials + t);
    }
    EXPECT_NEAR(sum / trials, f.curve(p).auc().mean(), 1e-12) << "point " << p;
  }
}

void ExportTest::CheckUnlearning(const v1::AuditResults& results, const Arrays& arrays) {
  const v1::ExportArray& member = arrays.at("member");
  ASSERT_EQ(static_cast<uint32_t>(member.values_size()), results.unlearning().target_rows());
  ASSERT_TRUE(arrays.count("posterior_original_none") && arrays.count("posterior_unlearned_none"));
  for (const v1::UnlearningAttackResult& a : results.unlearning().attacks()) {
    const v1::ExportArray& p =
        arrays.at(absl::StrCat("probability_", a.defense(), "_", a.feature(), "_", a.classifier()));
    std::vector<double> positives, negatives;
    for (int r = 0; r < member.values_size(); ++r) {
      (member.values(r) == 1 ? positives : negatives).push_back(p.values(r));
    }
    EXPECT_NEAR(MannWhitneyAuc(positives, negatives), a.auc(), 1e-12) << p.name();
  }
}

void ExportTest::CheckRelational(const v1::AuditResults& results, const Arrays& arrays) {
  for (int v = 0; v < results.relational().curves_size(); ++v) {
    const v1::RelationalCurve& curve = results.relational().curves(v);
    for (int i = 0; i < curve.points_size(); ++i) {
      const v1::RelationalPoint& point = curve.points(i);
      for (const char* side : {"train", "val"}) {
        const v1::ExportArray& s = arrays.at(absl::StrCat("success_", side, "_", point.metric()));
        // [variant, point, record]
        const uint64_t records = s.shape(2), points = s.shape(1);
        double sum = 0;
        for (uint64_t r = 0; r < records; ++r) sum += s.values((v * points + i) * records + r);
        const double want =
            std::string(side) == "train" ? point.success_train() : point.success_val();
        EXPECT_NEAR(sum / records, want, 1e-12) << curve.variant() << " step " << point.step();
      }
    }
  }
}

TEST_F(ExportTest, EveryKindExportsItsPerExampleDataAndItsNumbersFollowFromIt) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  const std::vector<v1::AuditSpec> specs = {TinyMembershipSpec(), TinyExposureSpec(),
                                            TinyForgettingSpec(), TinyUnlearningSpec(),
                                            TinyLinearRelationalSpec()};
  std::vector<std::string> ids;
  for (const v1::AuditSpec& spec : specs) {
    auto submitted = client_->Submit(spec);
    MEMAUDIT_ASSERT_OK(submitted);
    ids.push_back(submitted->audit_id());
  }
  for (const std::string& id : ids) {
    ASSERT_EQ(WaitForEnd(id).state(), v1::SUCCEEDED) << id;
    auto results = client_->Report(id);
    MEMAUDIT_ASSERT_OK(results);
    const Arrays arrays = Export(id);
    ASSERT_FALSE(arrays.empty());
    for (const auto& [name, a] : arrays) {
      EXPECT_FALSE(a.description().empty()) << name;
      EXPECT_EQ(a.audit_id(), id) << name;
    }
    switch (results->kind()) {
      case v1::MEMBERSHIP:
        CheckMembership(*results, arrays);
        break;
      case v1::EXPOSURE:
        CheckExposure(*results, arrays);
        break;
      case v1::FORGETTING:
        CheckForgetting(*results, arrays);
        break;
      case v1::UNLEARNING:
        CheckUnlearning(*results, arrays);
        break;
      case v1::RELATIONAL:
        CheckRelational(*results, arrays);
        break;
      default:
        ADD_FAILURE() << "unexpected kind";
    }
    // Exporting twice gives the same arrays: the scorer recomputes them
    // deterministically from the stored observations.
    auto again = client_->Export(id);
    MEMAUDIT_ASSERT_OK(again);
    ASSERT_EQ(again->size(), arrays.size());
    for (const v1::ExportArray& a : *again) {
      EXPECT_EQ(a.SerializeAsString(), arrays.at(a.name()).SerializeAsString()) << a.name();
    }
  }
  // An audit that does not exist is NOT_FOUND, like every other RPC.
  EXPECT_THAT(client_->Export("a-00000000000000000000000000000000"),
              StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace memaudit::testing
