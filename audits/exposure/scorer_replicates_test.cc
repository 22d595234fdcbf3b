// Across-seed replication of the exposure audit's canary model (spec
// replicates): the scorer waits for every replicate, maps each to its task,
// and aggregates the replicates' group means into a Student-t interval.
#include "audits/exposure/scorer_replicates.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "audits/exposure/signals.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/scorer/kind_handler.h"
#include "services/scorer/scorer.h"

namespace memaudit::scorer {
namespace {

using ::testing::HasSubstr;

// t_{0.975} with 2 degrees of freedom (the 95% interval of 3 replicates),
// in closed form: (2p - 1) / sqrt(2p(1 - p)) = 4.3027.
const double kT2 = 0.95 / std::sqrt(2 * 0.975 * 0.025);

// Two inserted canaries (x1, x8) and two controls, 3 digits (|R| = 1000),
// |S| = 32, three replicates.
v1::AuditSpec Spec(uint32_t replicates) {
  v1::AuditSpec spec;
  spec.set_name("test");
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->mutable_canary()->set_digits(3);
  e->add_repeats(1);
  e->add_repeats(8);
  e->set_controls(2);
  e->set_estimator("all");
  e->set_reference_samples(32);
  e->set_extraction(true);
  e->set_replicates(replicates);
  return spec;
}

v1::Observation Obs(const std::string& point, const std::string& signal,
                    std::vector<double> values) {
  v1::Observation o;
  o.set_audit_id("r");
  o.set_run(0);
  o.set_point(point);
  o.set_signal(signal);
  o.mutable_values()->Add(values.begin(), values.end());
  return o;
}

std::vector<double> Bytes(const std::string& s) {
  std::vector<double> out;
  exposure::AppendBytes(s, &out);
  return out;
}

// One canary model: the x1 canary at Px `x1_px` and rank `x1_rank`, the x8
// canary at rank `x8_rank`, the controls at ranks 500 and 250 in every
// replicate. References: Px 20 ... 51.
std::vector<v1::Observation> Model(const std::string& point, double x1_px, double x1_rank,
                                   double x8_rank,
                                   const std::string& secrets = "904\n271\n118\n653\n") {
  std::vector<double> refs;
  for (int i = 0; i < 32; ++i) refs.push_back(20 + i);
  std::vector<v1::Observation> out = {
      Obs(point, exposure::kPxBits, {x1_px, 5.0, 36.0, 44.0}),
      Obs(point, exposure::kRank, {x1_rank, x8_rank, 500, 250}),
      Obs(point, exposure::kExact, {1, 1, 1, 1}),
      Obs(point, exposure::kRankQueries, {900, 40, 5000, 2000}),
      Obs(point, exposure::kSecretsUtf8, Bytes(secrets)),
      Obs(point, exposure::kReferencePxBits, refs),
      Obs(point, exposure::kModel, {3 * std::log2(10.0), 120, 1.25})};
  if (point == exposure::kCanaryPoint) {
    std::vector<double> extraction = {1, 1, 345};
    for (double b : Bytes("271")) extraction.push_back(b);
    out.push_back(Obs(point, exposure::kRepeats, {1, 8, 0, 0}));
    out.push_back(Obs(point, exposure::kExtraction, extraction));
  }
  return out;
}

// Replicate 0 (the canary model) and replicates 1 and 2: the x1 canary at
// ranks 100, 200, 50 and Px 27.5, 23.5, 30.5; the x8 canary at ranks 1, 2, 4.
// Replicate 2 drew other canaries, as a replicate of its own seed does.
std::vector<v1::Observation> AllReplicates() {
  std::vector<v1::Observation> out = Model(exposure::kCanaryPoint, 27.5, 100, 1);
  for (const v1::Observation& o : Model(exposure::ReplicatePoint(1), 23.5, 200, 2)) {
    out.push_back(o);
  }
  for (const v1::Observation& o :
       Model(exposure::ReplicatePoint(2), 30.5, 50, 4, "111\n222\n333\n444\n")) {
    out.push_back(o);
  }
  return out;
}

// The value of `series` in an exposition; NaN when absent.
double Sample(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return std::nan("");
  return std::strtod(text.c_str() + at + series.size() + 2, nullptr);
}

class ExposureReplicatesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/exposure_replicates_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    std::remove(path_.c_str());
    store_ = std::move(*ScorerStore::Open(path_));
    scorer_ = std::move(*Scorer::Create(store_.get(), &registry_));
  }
  void TearDown() override { std::remove(path_.c_str()); }

  std::string path_;
  prometheus::Registry registry_;
  std::unique_ptr<ScorerStore> store_;
  std::unique_ptr<Scorer> scorer_;
};

TEST_F(ExposureReplicatesTest, ThreeReplicatesGiveTheMeanAndStudentTIntervalPerGroup) {
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("r", Spec(3)));
  const std::vector<v1::Observation> all = AllReplicates();
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    MEMAUDIT_ASSERT_OK(scorer_->Ingest(all[i])) << all[i].point() << " " << all[i].signal();
  }
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("r"));
  EXPECT_FALSE(scorer_->GetResults("r")->complete()) << "replicate 2's last signal is missing";
  EXPECT_EQ(scorer_->GetResults("r")->models(), 3u);
  MEMAUDIT_ASSERT_OK(scorer_->Ingest(all.back()));
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("r"));
  auto results = scorer_->GetResults("r");
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  const v1::ExposureResults& x = results->exposure();
  const double log2_r = 3 * std::log2(10.0);

  // The per-canary fields are replicate 0's.
  ASSERT_EQ(x.canaries_size(), 4);
  EXPECT_EQ(x.canaries(0).rank(), 100u);
  EXPECT_EQ(x.canaries(1).rank(), 1u);
  ASSERT_EQ(x.replicates().count(), 3u);
  ASSERT_EQ(x.replicates().models_size(), 3);
  EXPECT_EQ(x.replicates().models(1).replicate(), 1u);
  EXPECT_EQ(x.replicates().models(1).rank(0), 200u);
  EXPECT_NEAR(x.replicates().models(2).exposure(1), log2_r - 2, 1e-12);
  EXPECT_EQ(x.replicates().models(2).sampled_exposure_size(), 4);
  // Each replicate names its own canaries.
  EXPECT_EQ(x.replicates().models(0).secret(1), "271");
  EXPECT_EQ(x.replicates().models(1).secret(1), "271");
  EXPECT_EQ(x.replicates().models(2).secret(0), "111");
  EXPECT_EQ(x.replicates().models(2).secret_size(), 4);

  ASSERT_EQ(x.by_repeats_size(), 3);  // controls, x1, x8
  // x1: exposures log2|R| - log2 {100, 200, 50}: mean log2|R| - log2 100,
  // standard deviation 1.
  const v1::ExposureAcrossReplicates& x1 = x.by_repeats(1).across_replicates();
  EXPECT_EQ(x1.replicates(), 3u);
  EXPECT_NEAR(x1.exposure().mean(), log2_r - std::log2(100.0), 1e-12);
  EXPECT_NEAR(x1.exposure().stddev(), 1.0, 1e-12);
  EXPECT_NEAR(x1.exposure().low(), log2_r - std::log2(100.0) - kT2 / std::sqrt(3.0), 1e-9);
  EXPECT_NEAR(x1.exposure().high(), log2_r - std::log2(100.0) + kT2 / std::sqrt(3.0), 1e-9);
  // Sampled: 8, 4 and 11 of S at or below Px 27.5, 23.5, 30.5.
  const std::vector<double> sampled = {5 - std::log2(9.0), 5 - std::log2(5.0), 5 - std::log2(12.0)};
  const double mean = (sampled[0] + sampled[1] + sampled[2]) / 3;
  double ss = 0;
  for (double s : sampled) ss += (s - mean) * (s - mean);
  const double sd = std::sqrt(ss / 2);
  EXPECT_NEAR(x1.sampled_exposure().mean(), mean, 1e-12);
  EXPECT_NEAR(x1.sampled_exposure().stddev(), sd, 1e-12);
  EXPECT_NEAR(x1.sampled_exposure().low(), mean - kT2 * sd / std::sqrt(3.0), 1e-9);
  EXPECT_NEAR(x1.sampled_exposure().high(), mean + kT2 * sd / std::sqrt(3.0), 1e-9);
  ASSERT_TRUE(x1.has_extrapolated_exposure());
  EXPECT_LE(x1.extrapolated_exposure().low(), x1.extrapolated_exposure().mean());
  EXPECT_LE(x1.extrapolated_exposure().mean(), x1.extrapolated_exposure().high());
  // x8: ranks 1, 2, 4, mean log2|R| - 1; the interval is cut at log2|R|.
  const v1::ExposureAcrossReplicates& x8 = x.by_repeats(2).across_replicates();
  EXPECT_NEAR(x8.exposure().mean(), log2_r - 1, 1e-12);
  EXPECT_NEAR(x8.exposure().low(), log2_r - 1 - kT2 / std::sqrt(3.0), 1e-9);
  EXPECT_DOUBLE_EQ(x8.exposure().high(), log2_r);
  // Every replicate's x8 sampled value is the ceiling log2|S| = 5.
  EXPECT_DOUBLE_EQ(x8.sampled_exposure().mean(), 5.0);
  EXPECT_DOUBLE_EQ(x8.sampled_exposure().high(), 5.0);
  // Controls: the same ranks in every replicate, a zero-width interval.
  const v1::ExposureAcrossReplicates& controls = x.by_repeats(0).across_replicates();
  EXPECT_DOUBLE_EQ(controls.exposure().mean(), x.by_repeats(0).mean_exposure());
  EXPECT_DOUBLE_EQ(controls.exposure().low(), controls.exposure().high());
  EXPECT_TRUE(results->warnings().empty()) << "three replicates warn of nothing";

  // Gauges: the mean and its interval, labelled alike.
  const std::string text = metrics::Exposition(registry_);
  const std::string labels =
      "{audit=\"r\",estimator=\"exact\",insertions=\"1\",team=\"\",variant=\"base\"}";
  EXPECT_NEAR(Sample(text, "memaudit_exposure_replicated_log2" + labels), x1.exposure().mean(),
              1e-9);
  EXPECT_NEAR(Sample(text, "memaudit_exposure_replicated_low_log2" + labels), x1.exposure().low(),
              1e-9);
  EXPECT_NEAR(Sample(text, "memaudit_exposure_replicated_high_log2" + labels), x1.exposure().high(),
              1e-9);
}

TEST_F(ExposureReplicatesTest, OneReplicateAddsNothingAndTwoWarn) {
  v1::AuditSpec one = Spec(3);
  one.mutable_exposure()->clear_replicates();
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("r", one));
  for (const v1::Observation& o : Model(exposure::kCanaryPoint, 27.5, 100, 1)) {
    MEMAUDIT_ASSERT_OK(scorer_->Ingest(o));
  }
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("r"));
  auto results = scorer_->GetResults("r");
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  EXPECT_FALSE(results->exposure().has_replicates());
  for (const v1::ExposureByRepeats& g : results->exposure().by_repeats()) {
    EXPECT_FALSE(g.has_across_replicates());
  }
  EXPECT_THAT(metrics::Exposition(registry_),
              ::testing::Not(HasSubstr("memaudit_exposure_replicated")));
  // A replicate point the spec does not train is refused, naming the field.
  EXPECT_THAT(scorer_->Ingest(Obs(exposure::ReplicatePoint(1), exposure::kPxBits, {1, 2, 3, 4})),
              memaudit::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("observation.point")));

  const std::vector<v1::ResultWarning> two =
      HandlerFor(v1::AuditSpec::kExposure)->Warnings(Spec(2));
  ASSERT_EQ(two.size(), 1u);
  EXPECT_EQ(two[0].code(), "few_replicates");
  EXPECT_TRUE(HandlerFor(v1::AuditSpec::kExposure)->Warnings(one).empty());
}

// Each replicate's observations belong to its own task (the idempotency key
// (audit, run, point, signal) differs per replicate), as the plan names it.
TEST_F(ExposureReplicatesTest, ReplicateObservationsMapToTheirTasks) {
  v1::AuditSpec spec = Spec(3);
  spec.mutable_exposure()->add_sweep()->set_name("a");
  spec.mutable_exposure()->add_sweep()->set_name("b");
  const KindHandler* kind = HandlerFor(v1::AuditSpec::kExposure);
  for (uint32_t v = 0; v < 2; ++v) {
    for (uint32_t r = 1; r < 3; ++r) {
      const TaskRef task{exposure::kReplicateRole, v * 2 + r - 1};
      auto keys = kind->TaskObservations(*store_, "r", spec, task);
      MEMAUDIT_ASSERT_OK(keys);
      ASSERT_FALSE(keys->empty());
      for (const ObservationKey& key : *keys) {
        EXPECT_EQ(key.run, v);
        EXPECT_EQ(key.point, exposure::ReplicatePoint(r));
        v1::Observation o = Obs(key.point, key.signal, {});
        o.set_run(key.run);
        auto of = kind->TaskOf(spec, o);
        MEMAUDIT_ASSERT_OK(of);
        EXPECT_EQ(of->ToString(), task.ToString());
      }
    }
  }
  v1::Observation past = Obs(exposure::ReplicatePoint(3), exposure::kPxBits, {});
  EXPECT_FALSE(kind->TaskOf(spec, past).ok());
}

}  // namespace
}  // namespace memaudit::scorer
