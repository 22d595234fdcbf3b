#include "services/scorer/exposure_metrics.h"

#include <unistd.h>

#include <cmath>

#include "common/exposure_signals.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/scorer/scorer.h"

namespace memaudit::scorer {
namespace {

using ::testing::HasSubstr;

// Two inserted canaries (x1, x8) and two controls, 3 digits (|R| = 1000),
// a reference sample of 32.
v1::AuditSpec Spec() {
  v1::AuditSpec spec;
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->mutable_canary()->set_digits(3);
  e->add_repeats(1);
  e->add_repeats(8);
  e->set_controls(2);
  e->set_estimator("all");
  e->set_reference_samples(32);
  e->set_extraction(true);
  return spec;
}

v1::Observation Obs(const std::string& signal, std::vector<double> values) {
  v1::Observation o;
  o.set_audit_id("x");
  o.set_run(0);
  o.set_point("final");
  o.set_signal(signal);
  o.mutable_values()->Add(values.begin(), values.end());
  return o;
}

std::vector<double> Bytes(const std::string& s) {
  std::vector<double> out;
  exposure::AppendBytes(s, &out);
  return out;
}

// Canary x8 is the most likely of all (rank 1); x1 is middling; the
// controls sit in the middle of the space. References: Px 20..51.
std::vector<v1::Observation> Observations() {
  std::vector<double> refs;
  for (int i = 0; i < 32; ++i) refs.push_back(20 + i);
  std::vector<double> extraction = {1, 1, 345};
  for (double b : Bytes("271")) extraction.push_back(b);
  return {Obs(exposure::kRepeats, {1, 8, 0, 0}),
          Obs(exposure::kPxBits, {27.5, 5.0, 36.0, 44.0}),
          Obs(exposure::kRank, {100, 1, 500, 250}),
          Obs(exposure::kExact, {1, 1, 1, 0}),
          Obs(exposure::kRankQueries, {900, 40, 5000, 2000000}),
          Obs(exposure::kSecretsUtf8, Bytes("904\n271\n118\n653\n")),
          Obs(exposure::kReferencePxBits, refs),
          Obs(exposure::kExtraction, extraction),
          Obs(exposure::kModel, {3 * std::log2(10.0), 120, 1.25})};
}

class ExposureScorerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::TempDir() + "/exposure_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    std::remove(path_.c_str());
    store_ = std::move(*ScorerStore::Open(path_));
    scorer_ = std::move(*Scorer::Create(store_.get(), &registry_));
    ASSERT_TRUE(scorer_->OpenAudit("x", Spec()).ok());
  }
  void TearDown() override { std::remove(path_.c_str()); }

  std::string path_;
  metrics::Registry registry_;
  std::unique_ptr<ScorerStore> store_;
  std::unique_ptr<Scorer> scorer_;
};

TEST_F(ExposureScorerTest, ScoresOnceEverySignalIsIn) {
  const std::vector<v1::Observation> all = Observations();
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    ASSERT_TRUE(scorer_->Ingest(all[i]).ok()) << all[i].signal();
    ASSERT_TRUE(scorer_->ScoreIfComplete("x").ok());
    EXPECT_FALSE(scorer_->GetResults("x")->complete()) << "after " << all[i].signal();
  }
  EXPECT_EQ(scorer_->GetResults("x")->kind(), "exposure");
  ASSERT_TRUE(scorer_->Ingest(all.back()).ok());
  ASSERT_TRUE(scorer_->ScoreIfComplete("x").ok());
  auto results = scorer_->GetResults("x");
  ASSERT_TRUE(results.ok());
  ASSERT_TRUE(results->complete());
  const v1::ExposureResults& x = results->exposure();
  EXPECT_NEAR(x.log2_space(), 9.965784, 1e-6);
  EXPECT_THAT(std::vector<std::string>(x.estimators().begin(), x.estimators().end()),
              ::testing::ElementsAre("exact", "sampled", "extrapolated"));
  ASSERT_EQ(x.canaries_size(), 4);
  const v1::CanaryResult& heavy = x.canaries(1);
  EXPECT_EQ(heavy.secret(), "271");
  EXPECT_EQ(heavy.repeats(), 8u);
  EXPECT_EQ(heavy.rank(), 1u);
  EXPECT_NEAR(heavy.exposure(), x.log2_space(), 1e-12);
  // Below every reference: sampled exposure is the ceiling log2 32, a bound.
  EXPECT_DOUBLE_EQ(heavy.sampled_exposure(), 5.0);
  EXPECT_TRUE(heavy.sampled_lower_bound());
  EXPECT_GT(heavy.extrapolated_exposure(), 5.0);
  // x1: 8 references (20..27) are <= 27.5, so rank 9: 5 - log2 9.
  EXPECT_NEAR(x.canaries(0).sampled_exposure(), 5 - std::log2(9.0), 1e-12);
  EXPECT_NEAR(x.canaries(0).exposure(), x.log2_space() - std::log2(100.0), 1e-12);
  EXPECT_FALSE(x.canaries(3).exact());
  // Exposure vs insertions: controls (0), then 1 and 8.
  ASSERT_EQ(x.by_repeats_size(), 3);
  EXPECT_EQ(x.by_repeats(0).repeats(), 0u);
  EXPECT_EQ(x.by_repeats(0).canaries(), 2u);
  const double controls = (2 * x.log2_space() - std::log2(500.0) - std::log2(250.0)) / 2;
  EXPECT_NEAR(x.by_repeats(0).median_exposure(), controls, 1e-12);
  EXPECT_NEAR(x.control_median_exposure(), controls, 1e-12);
  EXPECT_LT(x.by_repeats(1).mean_exposure(), x.by_repeats(2).mean_exposure());
  EXPECT_TRUE(x.extraction_attempted());
  EXPECT_TRUE(x.extracted());
  EXPECT_EQ(x.extraction(), "271");
  EXPECT_EQ(x.extraction_target(), "271");
  EXPECT_EQ(x.extraction_queries(), 345u);
  EXPECT_EQ(x.training_steps(), 120u);
  // The reference Px histogram for the report: 40 bins over [20, 51] holding
  // all 32 references; 20 alone in the first bin, 51 (the maximum) in the last.
  const v1::PxHistogram& h = x.reference_px_histogram();
  EXPECT_DOUBLE_EQ(h.low(), 20.0);
  EXPECT_DOUBLE_EQ(h.bin_width(), 31.0 / 40);
  ASSERT_EQ(h.counts_size(), 40);
  uint64_t binned = 0;
  for (uint64_t n : h.counts()) binned += n;
  EXPECT_EQ(binned, 32u);
  EXPECT_EQ(h.counts(0), 1u);
  EXPECT_EQ(h.counts(39), 1u);
  // Gauges: bounded labels (audit, insertions, estimator), no secrets.
  const std::string exposition = registry_.Serialize();
  EXPECT_THAT(exposition, HasSubstr("memaudit_exposure_space_log2{audit=\"x\"}"));
  EXPECT_THAT(
      exposition,
      HasSubstr("memaudit_exposure_log2{audit=\"x\",estimator=\"exact\",insertions=\"8\"}"));
  EXPECT_THAT(exposition, ::testing::Not(HasSubstr("271")));
}

TEST_F(ExposureScorerTest, IngestNamesTheBadField) {
  auto code = [&](const v1::Observation& o) { return scorer_->Ingest(o).status(); };
  absl::Status s = code(Obs(exposure::kPxBits, {1, 2, 3}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("observation.values: expected 4"));
  s = code(Obs("phi", {1, 2, 3, 4}));
  EXPECT_THAT(std::string(s.message()), HasSubstr("observation.signal"));
  s = code(Obs(exposure::kRank, {1, 0, 3, 4}));
  EXPECT_THAT(std::string(s.message()), HasSubstr("observation.values[1]"));
  s = code(Obs(exposure::kRepeats, {1, 4, 0, 0}));
  EXPECT_THAT(std::string(s.message()), HasSubstr("observation.values[1]"));
  s = code(Obs(exposure::kSecretsUtf8, Bytes("1\n2\n")));
  EXPECT_THAT(std::string(s.message()), HasSubstr("4 newline-ended secrets"));
  s = code(Obs(exposure::kReferencePxBits, {1, 2}));
  EXPECT_THAT(std::string(s.message()), HasSubstr("expected 32"));
  s = code(Obs(exposure::kPxBits, {1, 2, NAN, 4}));
  EXPECT_THAT(std::string(s.message()), HasSubstr("observation.values[2]"));
  v1::Observation run1 = Obs(exposure::kPxBits, {1, 2, 3, 4});
  run1.set_run(1);
  EXPECT_THAT(std::string(code(run1).message()), HasSubstr("observation.run"));
  EXPECT_FALSE(scorer_->GetResults("x")->complete());
}

}  // namespace
}  // namespace memaudit::scorer
