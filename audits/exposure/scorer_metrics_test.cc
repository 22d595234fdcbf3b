#include "audits/exposure/scorer_metrics.h"

#include <unistd.h>

#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "audits/exposure/signals.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scoring/mann_whitney_interval.h"
#include "services/scorer/scorer.h"

namespace memaudit::scorer {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

// Two inserted canaries (x1, x8) and two controls, 3 digits (|R| = 1000),
// a reference sample of 32.
v1::AuditSpec Spec() {
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

// The held-out sequences' signals of a canary model: 2 inserted 16 times,
// then 2 controls.
std::vector<v1::Observation> ExtractableObservations(const std::vector<double>& loss) {
  return {Obs(exposure::kExtractableDuplicates, {16, 16, 0, 0}),
          Obs(exposure::kExtractableExtracted, {1, 0, 0, 0}),
          Obs(exposure::kExtractableMatched, {4, 1, 0, 0}),
          Obs(exposure::kExtractableLoss, loss),
          Obs(exposure::kExtractableZlib, {-0.1, -0.2, -0.3, -0.4}),
          Obs(exposure::kExtractableMinK, {-1, -2, -3, -4}),
          Obs(exposure::kExtractableMinKPlus, {1, 2, 3, 4})};
}

class ExposureScorerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/exposure_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    std::remove(path_.c_str());
    store_ = std::move(*ScorerStore::Open(path_));
    scorer_ = std::move(*Scorer::Create(store_.get(), &registry_));
    MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("x", Spec()));
  }
  void TearDown() override { std::remove(path_.c_str()); }

  std::string path_;
  prometheus::Registry registry_;
  std::unique_ptr<ScorerStore> store_;
  std::unique_ptr<Scorer> scorer_;
};

// With reference models every held-out sequence's loss score l under each
// of them calibrates the canary model's: by hand, l_target = (-0.5, -0.6 |
// -0.6, -0.9), the references' (-1.0, -1.1 | -0.7, -0.8) and (-1.2, -0.9 |
// -1.5, -1.0): means (-1.1, -1.0 | -1.1, -0.9), so `reference` scores
// (0.6, 0.4 | 0.5, 0.0), AUC 3/4; sample sds (0.2, 0.2 | 0.8, 0.2)/sqrt(2),
// so `lira_offline` scores (4.24, 2.83 | 0.88, 0), AUC 1; the loss alone
// ties -0.6 with -0.6: AUC 3.5/4.
TEST_F(ExposureScorerTest, ReferenceModelsCalibrateEachSequencesLoss) {
  v1::AuditSpec spec = Spec();
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->set_reference_models(2);
  v1::ExtractableSpec* extractable = e->mutable_extractable();
  extractable->set_prefix_chars(4);
  extractable->set_suffix_chars(4);
  extractable->add_duplicates(16);
  extractable->set_sequences(2);
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("r", spec));
  const auto in = [&](v1::Observation o, const std::string& point) {
    o.set_audit_id("r");
    o.set_point(point);
    return scorer_->Ingest(o);
  };
  for (const v1::Observation& o : Observations()) MEMAUDIT_ASSERT_OK(in(o, "final"));
  for (const v1::Observation& o : ExtractableObservations({-0.5, -0.6, -0.6, -0.9})) {
    MEMAUDIT_ASSERT_OK(in(o, "final"));
  }
  const std::vector<std::vector<double>> reference_loss = {{-1.0, -1.1, -0.7, -0.8},
                                                           {-1.2, -0.9, -1.5, -1.0}};
  for (uint32_t j = 0; j < 2; ++j) {
    const std::string point = exposure::ReferencePoint(j);
    std::vector<double> refs;
    for (int k = 0; k < 32; ++k) refs.push_back(20 + k + j);
    MEMAUDIT_ASSERT_OK(in(Obs(exposure::kPxBits, {30, 31, 32, 33}), point));
    MEMAUDIT_ASSERT_OK(in(Obs(exposure::kReferencePxBits, refs), point));
    MEMAUDIT_ASSERT_OK(in(Obs(exposure::kSecretsUtf8, Bytes("904\n271\n118\n653\n")), point));
    MEMAUDIT_ASSERT_OK(in(Obs(exposure::kModel, {3 * std::log2(10.0), 100, 1.5}), point));
    MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("r"));
    EXPECT_FALSE(scorer_->GetResults("r")->complete()) << "reference " << j << "'s loss is missing";
    EXPECT_THAT(in(Obs(exposure::kExtractableLoss, {-1, -1, -1}), point),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected 4 values")));
    MEMAUDIT_ASSERT_OK(in(Obs(exposure::kExtractableLoss, reference_loss[j]), point));
  }
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("r"));
  auto results = scorer_->GetResults("r");
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  const auto& groups = results->exposure().extractable();
  ASSERT_EQ(groups.size(), 2);
  std::map<std::string, double> auc;
  for (const v1::SequenceMembership& m : groups[0].membership()) auc[m.attack()] = m.auc();
  ASSERT_EQ(auc.size(), 6u);
  EXPECT_DOUBLE_EQ(auc["loss"], 0.875);
  EXPECT_DOUBLE_EQ(auc["reference"], 0.75);
  EXPECT_DOUBLE_EQ(auc["lira_offline"], 1.0);
  EXPECT_EQ(groups[1].membership_size(), 0) << "the controls are no group of members";
}

// Extractable memorization: per group (ascending insertions, then the
// controls) the fraction extracted with its Clopper-Pearson interval and the
// mean characters matched; values that cannot be are refused.
TEST_F(ExposureScorerTest, ExtractableGroupsCountTheExtractedWithTheirInterval) {
  v1::AuditSpec spec = Spec();
  v1::ExtractableSpec* extractable = spec.mutable_exposure()->mutable_extractable();
  extractable->set_prefix_chars(4);
  extractable->set_suffix_chars(4);
  extractable->add_duplicates(2);
  extractable->add_duplicates(16);
  extractable->set_sequences(2);
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("y", spec));
  const auto in = [&](v1::Observation o) {
    o.set_audit_id("y");
    return scorer_->Ingest(o);
  };
  EXPECT_THAT(in(Obs(exposure::kExtractableDuplicates, {2, 2, 16, 16, 0, 1})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("values[5]")));
  EXPECT_THAT(in(Obs(exposure::kExtractableMatched, {0, 1, 4, 5, 0, 0})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("values[3]")));
  EXPECT_THAT(in(Obs(exposure::kExtractableExtracted, {0, 1, 1})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected 6 values")));
  for (const v1::Observation& o : Observations()) MEMAUDIT_ASSERT_OK(in(o));
  EXPECT_THAT(in(Obs(exposure::kExtractableLoss, {-1, -0.5, 0.1, -0.2, -2, -1.5})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("values[2]")))
      << "a mean log-probability above 0";
  MEMAUDIT_ASSERT_OK(in(Obs(exposure::kExtractableDuplicates, {2, 2, 16, 16, 0, 0})));
  MEMAUDIT_ASSERT_OK(in(Obs(exposure::kExtractableExtracted, {0, 1, 1, 1, 0, 0})));
  MEMAUDIT_ASSERT_OK(in(Obs(exposure::kExtractableLoss, {-1, -0.5, -0.1, -0.2, -2, -1.5})));
  MEMAUDIT_ASSERT_OK(in(Obs(exposure::kExtractableZlib, {-0.3, -0.9, -0.2, -0.1, -0.5, -0.4})));
  MEMAUDIT_ASSERT_OK(in(Obs(exposure::kExtractableMinK, {-3, -3, -3, -3, -3, -3})));
  MEMAUDIT_ASSERT_OK(in(Obs(exposure::kExtractableMinKPlus, {1, 2, 3, 4, 0, -1})));
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("y"));
  EXPECT_FALSE(scorer_->GetResults("y")->complete()) << "the matched characters are missing";
  MEMAUDIT_ASSERT_OK(in(Obs(exposure::kExtractableMatched, {2, 4, 4, 4, 1, 0})));
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("y"));
  auto results = scorer_->GetResults("y");
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  const auto& groups = results->exposure().extractable();
  ASSERT_EQ(groups.size(), 3);
  EXPECT_EQ(groups[0].duplicates(), 2u);
  EXPECT_EQ(groups[0].sequences(), 2u);
  EXPECT_EQ(groups[0].extracted(), 1u);
  EXPECT_DOUBLE_EQ(groups[0].fraction(), 0.5);
  // Clopper-Pearson of 1 in 2: 1 - sqrt(0.975) on either side.
  EXPECT_NEAR(groups[0].fraction_low(), 1 - std::sqrt(0.975), 1e-9);
  EXPECT_NEAR(groups[0].fraction_high(), std::sqrt(0.975), 1e-9);
  EXPECT_DOUBLE_EQ(groups[0].mean_matched_chars(), 3.0);
  EXPECT_EQ(groups[1].duplicates(), 16u);
  EXPECT_DOUBLE_EQ(groups[1].fraction(), 1.0);
  EXPECT_NEAR(groups[1].fraction_low(), std::sqrt(0.025), 1e-9);
  EXPECT_DOUBLE_EQ(groups[1].fraction_high(), 1.0);
  // Membership of each inserted group against the controls, by AUC:
  // loss separates both; zlib orders x2 half right ({-0.3, -0.9} against
  // {-0.5, -0.4}); equal Min-K% scores tie at 1/2.
  const std::map<std::string, std::pair<double, double>> expected = {{"loss", {1.0, 1.0}},
                                                                     {"zlib", {0.5, 1.0}},
                                                                     {"min_k", {0.5, 0.5}},
                                                                     {"min_k_plus", {1.0, 1.0}}};
  for (int g = 0; g < 2; ++g) {
    ASSERT_EQ(groups[g].membership_size(), 4);
    for (const v1::SequenceMembership& m : groups[g].membership()) {
      const double want = g == 0 ? expected.at(m.attack()).first : expected.at(m.attack()).second;
      EXPECT_DOUBLE_EQ(m.auc(), want) << g << " " << m.attack();
      // The score-type interval of 2 members and 2 controls
      // (scoring/mann_whitney_interval.h): a perfect AUC is no certainty.
      auto interval = scoring::MannWhitneyScoreInterval(want, 2, 2);
      MEMAUDIT_ASSERT_OK(interval);
      EXPECT_DOUBLE_EQ(m.auc_low(), interval->lo) << g << " " << m.attack();
      EXPECT_DOUBLE_EQ(m.auc_high(), interval->hi) << g << " " << m.attack();
      if (want == 1.0) {
        EXPECT_LT(m.auc_low(), 0.6);
      }
    }
  }
  EXPECT_EQ(groups[2].membership_size(), 0) << "the controls are no group of members";
  EXPECT_EQ(groups[2].duplicates(), 0u) << "the controls come last";
  EXPECT_DOUBLE_EQ(groups[2].fraction(), 0.0);
  EXPECT_NEAR(groups[2].fraction_high(), 1 - std::sqrt(0.025), 1e-9);
  EXPECT_DOUBLE_EQ(groups[2].mean_matched_chars(), 0.5);
  EXPECT_THAT(metrics::Exposition(registry_),
              HasSubstr("memaudit_exposure_extractable_ratio{audit=\"y\",duplicates=\"16\","
                        "team=\"\",variant=\"base\"} 1"));
}

TEST_F(ExposureScorerTest, ScoresOnceEverySignalIsIn) {
  const std::vector<v1::Observation> all = Observations();
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    MEMAUDIT_ASSERT_OK(scorer_->Ingest(all[i])) << all[i].signal();
    MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("x"));
    EXPECT_FALSE(scorer_->GetResults("x")->complete()) << "after " << all[i].signal();
  }
  EXPECT_EQ(scorer_->GetResults("x")->kind(), v1::EXPOSURE);
  MEMAUDIT_ASSERT_OK(scorer_->Ingest(all.back()));
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("x"));
  auto results = scorer_->GetResults("x");
  MEMAUDIT_ASSERT_OK(results);
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
  // Gauges: bounded labels (audit, variant, insertions, estimator), no secrets.
  const std::string exposition = metrics::Exposition(registry_);
  EXPECT_THAT(exposition, HasSubstr("memaudit_exposure_space_log2{audit=\"x\",team=\"\"}"));
  EXPECT_THAT(exposition,
              HasSubstr("memaudit_exposure_log2{audit=\"x\",estimator=\"exact\",insertions=\"8\","
                        "team=\"\",variant=\"base\"}"));
  // The secret must not leak into any label; values (durations) may hold any digits.
  for (absl::string_view line : absl::StrSplit(exposition, '\n')) {
    const size_t open = line.find('{');
    if (open == absl::string_view::npos) continue;
    EXPECT_THAT(std::string(line.substr(open, line.find('}') - open)),
                ::testing::Not(HasSubstr("271")))
        << line;
  }
}

TEST_F(ExposureScorerTest, IngestNamesTheBadField) {
  auto code = [&](const v1::Observation& o) { return scorer_->Ingest(o).status(); };
  absl::Status s = code(Obs(exposure::kPxBits, {1, 2, 3}));
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument));
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
  v1::Observation baseline = Obs(exposure::kPxBits, {1, 2, 3, 4});
  baseline.set_point(exposure::kBaselinePoint);  // the spec asks for no baseline
  EXPECT_THAT(std::string(code(baseline).message()), HasSubstr("observation.point"));
  EXPECT_THAT(std::string(code(Obs(exposure::kDp, {1, 1e-5})).message()),
              HasSubstr("observation.signal"));
  EXPECT_FALSE(scorer_->GetResults("x")->complete());
}

// Evaluation points every 40 steps of the 120-step canary model: "step/40"
// and "step/80" send Px and exact ranks, the final model is the last point.
class ExposureCurveScorerTest : public ExposureScorerTest {
 protected:
  void SetUp() override {
    ExposureScorerTest::SetUp();
    v1::AuditSpec spec = Spec();
    spec.mutable_exposure()->set_eval_every_steps(40);
    MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("c", spec));
  }
  static v1::Observation At(v1::Observation o, const std::string& point) {
    o.set_audit_id("c");
    o.set_point(point);
    return o;
  }
  static std::vector<v1::Observation> Point(const std::string& point, std::vector<double> rank) {
    return {At(Obs(exposure::kPxBits, {30, 20, 36, 40}), point),
            At(Obs(exposure::kRank, std::move(rank)), point),
            At(Obs(exposure::kExact, {1, 1, 1, 1}), point),
            At(Obs(exposure::kRankQueries, {1, 2, 3, 4}), point)};
  }
};

TEST_F(ExposureCurveScorerTest, ScoresExposurePerCanaryAndEvaluationPoint) {
  std::vector<v1::Observation> all;
  for (const v1::Observation& o : Observations()) all.push_back(At(o, "final"));
  for (const v1::Observation& o : Point("step/40", {500, 300, 400, 250})) all.push_back(o);
  const std::vector<v1::Observation> last = Point("step/80", {200, 4, 500, 100});
  all.insert(all.end(), last.begin(), last.end() - 1);
  for (const v1::Observation& o : all) MEMAUDIT_ASSERT_OK(scorer_->Ingest(o)) << o.point();
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("c"));
  EXPECT_FALSE(scorer_->GetResults("c")->complete()) << "step/80 rank_queries is missing";
  MEMAUDIT_ASSERT_OK(scorer_->Ingest(last.back()));
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("c"));
  auto results = scorer_->GetResults("c");
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  const v1::ExposureResults& x = results->exposure();
  const double l = x.log2_space();
  auto e = [&](double rank) { return l - std::log2(rank); };
  ASSERT_EQ(x.curve_size(), 3);
  EXPECT_EQ(x.curve(0).step(), 40u);
  EXPECT_EQ(x.curve(1).step(), 80u);
  EXPECT_EQ(x.curve(2).step(), 120u);  // the final model
  // Per canary at step 80.
  ASSERT_EQ(x.curve(1).exposure_size(), 4);
  EXPECT_NEAR(x.curve(1).exposure(1), e(4), 1e-12);
  EXPECT_EQ(x.curve(1).rank(1), 4u);
  EXPECT_EQ(x.curve(1).px_bits(1), 20);
  // By insertions at step 40: controls (median of 2), x1, x8.
  ASSERT_EQ(x.curve(0).by_repeats_size(), 3);
  EXPECT_EQ(x.curve(0).by_repeats(0).repeats(), 0u);
  EXPECT_NEAR(x.curve(0).by_repeats(0).median_exposure(), (e(400) + e(250)) / 2, 1e-12);
  EXPECT_NEAR(x.curve(0).control_median_exposure(), (e(400) + e(250)) / 2, 1e-12);
  EXPECT_NEAR(x.curve(0).by_repeats(1).mean_exposure(), e(500), 1e-12);
  EXPECT_EQ(x.curve(0).by_repeats(2).repeats(), 8u);
  EXPECT_NEAR(x.curve(0).by_repeats(2).mean_exposure(), e(300), 1e-12);
  // The last point is the final model's exact exposure.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(x.curve(2).exposure(i), x.canaries(i).exposure());
  EXPECT_NEAR(x.curve(2).by_repeats(2).mean_exposure(), l, 1e-12);
  EXPECT_EQ(x.curve(2).control_median_exposure(), x.control_median_exposure());
  // The gauge: one series per (variant, insertions, step).
  const std::string exposition = metrics::Exposition(registry_);
  EXPECT_THAT(exposition,
              HasSubstr(absl::StrCat("memaudit_exposure_curve_log2{audit=\"c\",insertions=\"8\","
                                     "step=\"80\",team=\"\",variant=\"base\"} ")));
  EXPECT_THAT(exposition, HasSubstr("insertions=\"0\",step=\"120\""));
}

TEST_F(ExposureCurveScorerTest, RefusesPointsAndSignalsOutsideTheCurve) {
  auto message = [&](const v1::Observation& o) {
    return std::string(scorer_->Ingest(o).status().message());
  };
  EXPECT_THAT(message(At(Obs(exposure::kRank, {1, 2, 3, 4}), "step/7")),
              HasSubstr("observation.point"));  // not a multiple of 40
  EXPECT_THAT(message(At(Obs(exposure::kRank, {1, 2, 3, 4}), "step/040")),
              HasSubstr("observation.point"));
  EXPECT_THAT(message(At(Obs(exposure::kModel, {1, 2, 3}), "step/40")),
              HasSubstr("observation.signal"));
  EXPECT_THAT(message(At(Obs(exposure::kRank, {1, 2, 3}), "step/40")),
              HasSubstr("observation.values: expected 4"));
  EXPECT_THAT(message(At(Obs(exposure::kRank, {1, 0, 3, 4}), "step/40")),
              HasSubstr("observation.values[1]"));
  // Without evaluation points in the spec, no step point is accepted.
  v1::Observation plain = Obs(exposure::kRank, {1, 2, 3, 4});
  plain.set_point("step/40");
  EXPECT_THAT(std::string(scorer_->Ingest(plain).status().message()),
              HasSubstr("observation.point"));
  MEMAUDIT_EXPECT_OK(scorer_->Ingest(At(Obs(exposure::kRank, {1, 2, 3, 4}), "step/40")));
}

// Two variants (the second DP-SGD), a baseline model and two reference models
// per variant. Variant 1's canary model reuses variant 0's numbers shifted,
// so only the calibration and the DP summary tell them apart.
class ExposureSweepScorerTest : public ExposureScorerTest {
 protected:
  static v1::AuditSpec SweepSpec() {
    v1::AuditSpec spec = Spec();
    v1::ExposureAudit* e = spec.mutable_exposure();
    e->add_sweep()->set_name("wide");
    v1::ExposureVariant* dp = e->add_sweep();
    dp->set_name("dp");
    dp->mutable_dp_sgd()->set_noise_multiplier(1.1);
    dp->mutable_dp_sgd()->set_clip_norm(1);
    dp->mutable_dp_sgd()->set_delta(1e-5);
    e->set_baseline(true);
    e->set_reference_models(2);
    return spec;
  }
  void SetUp() override {
    ExposureScorerTest::SetUp();
    MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("s", SweepSpec()));
  }
  static v1::Observation At(v1::Observation o, const std::string& point, uint32_t run) {
    o.set_audit_id("s");
    o.set_point(point);
    o.set_run(run);
    return o;
  }
  // Every model of both variants; reference model j sees canary i at
  // 30 + i + j and reference k at 20 + k + j (so its mean is 30.5 + i and
  // 20.5 + k); the baseline sees reference k at 29.5 + k.
  // With `space` (exact calibration), every candidate r of R = 000..999 too:
  // the canary model at r / 10 + 1, reference model j at 2j (mean 1), except
  // at the canaries (904, 271, 118, 653), where each model's Px is its
  // px_bits; so every candidate but the canaries calibrates to r / 10.
  static std::vector<v1::Observation> All(bool space = false) {
    const std::vector<uint64_t> index = {904, 271, 118, 653};
    auto space_of = [&](const std::vector<double>& px, double elsewhere_offset, bool target) {
      std::vector<double> out;
      for (int r = 0; r < 1000; ++r) {
        out.push_back(target ? r / 10.0 + elsewhere_offset : elsewhere_offset);
      }
      for (size_t i = 0; i < index.size(); ++i) out[index[i]] = px[i];
      return out;
    };
    std::vector<v1::Observation> out;
    for (uint32_t v = 0; v < 2; ++v) {
      for (const v1::Observation& o : Observations()) out.push_back(At(o, "final", v));
      if (space) {
        out.push_back(At(Obs(exposure::kSpacePxBits, space_of({27.5, 5.0, 36.0, 44.0}, 1, true)),
                         "final", v));
        out.push_back(At(Obs(exposure::kSpaceIndex, {904, 271, 118, 653}), "final", v));
      }
      std::vector<double> baseline_refs;
      for (int k = 0; k < 32; ++k) baseline_refs.push_back(29.5 + k);
      out.push_back(At(Obs(exposure::kReferencePxBits, baseline_refs), "baseline", v));
      out.push_back(At(Obs(exposure::kPxBits, {30, 31, 32, 33}), "baseline", v));
      out.push_back(At(Obs(exposure::kRank, {400, 500, 600, 700}), "baseline", v));
      out.push_back(At(Obs(exposure::kExact, {1, 1, 1, 0}), "baseline", v));
      out.push_back(At(Obs(exposure::kRankQueries, {1, 2, 3, 4}), "baseline", v));
      out.push_back(At(Obs(exposure::kSecretsUtf8, Bytes("904\n271\n118\n653\n")), "baseline", v));
      out.push_back(At(Obs(exposure::kModel, {3 * std::log2(10.0), 100, 1.5}), "baseline", v));
      for (uint32_t j = 0; j < 2; ++j) {
        const std::string point = exposure::ReferencePoint(j);
        std::vector<double> canaries, refs;
        for (int i = 0; i < 4; ++i) canaries.push_back(30 + i + j);
        for (int k = 0; k < 32; ++k) refs.push_back(20 + k + j);
        out.push_back(At(Obs(exposure::kPxBits, canaries), point, v));
        out.push_back(At(Obs(exposure::kReferencePxBits, refs), point, v));
        out.push_back(At(Obs(exposure::kSecretsUtf8, Bytes("904\n271\n118\n653\n")), point, v));
        out.push_back(At(Obs(exposure::kModel, {3 * std::log2(10.0), 100, 1.5}), point, v));
        if (space) {
          out.push_back(
              At(Obs(exposure::kSpacePxBits, space_of(canaries, 2.0 * j, false)), point, v));
        }
      }
    }
    out.push_back(At(Obs(exposure::kDp, {2.5, 1e-5}), "final", 1));
    return out;
  }
};

TEST_F(ExposureSweepScorerTest, ScoresEveryVariantWithBaselineAndCalibration) {
  std::vector<v1::Observation> all = All();
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    MEMAUDIT_ASSERT_OK(scorer_->Ingest(all[i])) << all[i].point() << " " << all[i].signal();
  }
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("s"));
  EXPECT_FALSE(scorer_->GetResults("s")->complete()) << "the DP variant's epsilon is missing";
  EXPECT_EQ(scorer_->GetResults("s")->models(), 8u);
  MEMAUDIT_ASSERT_OK(scorer_->Ingest(all.back()));
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("s"));
  auto results = scorer_->GetResults("s");
  ASSERT_TRUE(results->complete());
  EXPECT_EQ(results->models(), 8u);
  const v1::ExposureResults& x = results->exposure();
  ASSERT_EQ(x.variants_size(), 2);
  EXPECT_EQ(x.variants(0).name(), "wide");
  EXPECT_EQ(x.variants(1).name(), "dp");
  EXPECT_EQ(x.variants(0).dp_clip_norm(), 0);
  EXPECT_DOUBLE_EQ(x.variants(1).dp_epsilon(), 2.5);
  EXPECT_DOUBLE_EQ(x.variants(1).dp_noise_multiplier(), 1.1);
  EXPECT_DOUBLE_EQ(x.variants(1).dp_delta(), 1e-5);
  // The top level is the first variant, as in a single-model audit.
  v1::ExposureResults first = x;
  first.clear_variants();
  EXPECT_EQ(first.SerializeAsString(), x.variants(0).results().SerializeAsString());
  EXPECT_TRUE(x.baseline_model());
  EXPECT_EQ(x.reference_models(), 2u);
  EXPECT_DOUBLE_EQ(x.baseline_final_loss(), 1.5);
  const v1::CanaryResult& heavy = x.canaries(1);
  EXPECT_EQ(heavy.baseline_rank(), 500u);
  EXPECT_NEAR(heavy.baseline_exposure(), x.log2_space() - std::log2(500.0), 1e-12);
  EXPECT_FALSE(x.canaries(3).baseline_exact());
  // Calibrated: x8's Px 5.0 - 31.5 = -26.5, below every calibrated
  // reference (Px_k - (20.5 + k) = -0.5 .. ), so the ceiling log2 32.
  EXPECT_DOUBLE_EQ(heavy.calibrated_px_bits(), 5.0 - 31.5);
  EXPECT_DOUBLE_EQ(heavy.calibrated_exposure(), 5.0);
  EXPECT_TRUE(heavy.calibrated_lower_bound());
  // x1: 27.5 - 30.5 = -3 against 32 references all at -0.5: rank 1 too.
  // The control 653 at 44 - 33.5 = 10.5, above all 32: rank 33.
  EXPECT_NEAR(x.canaries(3).calibrated_exposure(), 5 - std::log2(33.0), 1e-12);
  EXPECT_FALSE(x.canaries(3).calibrated_lower_bound());
  const v1::ExposureByRepeats& controls = x.by_repeats(0);
  EXPECT_EQ(controls.repeats(), 0u);
  EXPECT_NEAR(controls.median_baseline_exposure(),
              x.log2_space() - (std::log2(600.0) + std::log2(700.0)) / 2, 1e-12);
  EXPECT_DOUBLE_EQ(x.control_median_baseline_exposure(), controls.median_baseline_exposure());
  EXPECT_DOUBLE_EQ(x.control_median_calibrated_exposure(), controls.median_calibrated_exposure());
  // The baseline under the sampled estimator, against its own S (29.5 ..
  // 60.5): Px 30 beats all but 29.5, rank 2: 5 - 1 = 4 bits; Px 31 rank 3;
  // the controls at 32 and 33 rank 4 and 5.
  EXPECT_DOUBLE_EQ(x.canaries(0).baseline_sampled_exposure(), 4.0);
  EXPECT_NEAR(heavy.baseline_sampled_exposure(), 5 - std::log2(3.0), 1e-12);
  EXPECT_FALSE(heavy.baseline_sampled_lower_bound());
  EXPECT_NEAR(controls.median_baseline_sampled_exposure(), (3 + 5 - std::log2(5.0)) / 2, 1e-12);
  EXPECT_DOUBLE_EQ(x.control_median_baseline_sampled_exposure(),
                   controls.median_baseline_sampled_exposure());
  // Extrapolated under the baseline: its own skew-normal fit; lower Px, more
  // exposure.
  EXPECT_GT(x.baseline_fit_scale(), 0);
  EXPECT_NE(x.baseline_fit_location(), x.fit_location()) << "fitted to the baseline's S";
  EXPECT_TRUE(std::isfinite(heavy.baseline_extrapolated_exposure()));
  EXPECT_GT(x.canaries(0).baseline_extrapolated_exposure(),
            x.canaries(3).baseline_extrapolated_exposure());
  EXPECT_GT(x.canaries(0).baseline_extrapolated_exposure(), 0);
  EXPECT_DOUBLE_EQ(x.control_median_baseline_extrapolated_exposure(),
                   controls.median_baseline_extrapolated_exposure());
  EXPECT_FALSE(x.calibrated_exact()) << "the spec leaves exact calibration unset";
  EXPECT_EQ(heavy.calibrated_rank(), 0u);
  // One gauge series per variant and estimator: at most 8 estimator values.
  const std::string exposition = metrics::Exposition(registry_);
  for (const char* series :
       {"{audit=\"s\",estimator=\"exact\",insertions=\"8\",team=\"\",variant=\"dp\"}",
        "{audit=\"s\",estimator=\"baseline\",insertions=\"8\",team=\"\",variant=\"wide\"}",
        "{audit=\"s\",estimator=\"baseline_sampled\",insertions=\"0\",team=\"\",variant=\"wide\"}",
        "{audit=\"s\",estimator=\"baseline_extrapolated\",insertions=\"1\",team=\"\",variant="
        "\"dp\"}",
        "{audit=\"s\",estimator=\"calibrated\",insertions=\"0\",team=\"\",variant=\"wide\"}"}) {
    EXPECT_THAT(exposition, HasSubstr(absl::StrCat("memaudit_exposure_log2", series)));
  }
  EXPECT_THAT(exposition, ::testing::Not(HasSubstr("estimator=\"calibrated_exact\"")));
}

// The same audit with exact calibration: every model also sends its Px of all
// of R (|R| = 1000).
class ExposureExactCalibrationScorerTest : public ExposureSweepScorerTest {
 protected:
  void SetUp() override {
    ExposureSweepScorerTest::SetUp();
    v1::AuditSpec spec = SweepSpec();
    spec.mutable_exposure()->set_exact_calibration(true);
    MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("c", spec));
  }
  static std::vector<v1::Observation> AllOf(bool space) {
    std::vector<v1::Observation> out = All(space);
    for (v1::Observation& o : out) o.set_audit_id("c");
    return out;
  }
};

TEST_F(ExposureExactCalibrationScorerTest, RanksEachCalibratedCanaryAmongAllOfR) {
  std::vector<v1::Observation> all = AllOf(/*space=*/true);
  for (const v1::Observation& o : all) {
    if (o.signal() == exposure::kSpacePxBits && o.point() == "reference/1" && o.run() == 1) {
      continue;  // held back: the audit waits for it
    }
    MEMAUDIT_ASSERT_OK(scorer_->Ingest(o)) << o.point() << " " << o.signal();
  }
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("c"));
  EXPECT_FALSE(scorer_->GetResults("c")->complete()) << "a reference model's R is missing";
  for (const v1::Observation& o : all) {
    if (o.signal() == exposure::kSpacePxBits && o.point() == "reference/1" && o.run() == 1) {
      MEMAUDIT_ASSERT_OK(scorer_->Ingest(o));
    }
  }
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("c"));
  auto results = scorer_->GetResults("c");
  ASSERT_TRUE(results.ok() && results->complete());
  for (const v1::ExposureVariantResult& v : results->exposure().variants()) {
    SCOPED_TRACE(v.name());
    const v1::ExposureResults& x = v.results();
    EXPECT_TRUE(x.calibrated_exact());
    // Calibrated Px': x1 (904) 27.5 - 30.5 = -3, x8 (271) 5 - 31.5 = -26.5,
    // the controls 118 at 36 - 32.5 = 3.5 and 653 at 44 - 33.5 = 10.5; every
    // other candidate r at r / 10.
    // x8: the lowest of all: rank 1, exposure log2 1000.
    EXPECT_EQ(x.canaries(1).calibrated_rank(), 1u);
    EXPECT_NEAR(x.canaries(1).calibrated_exact_exposure(), std::log2(1000.0), 1e-12);
    // x1: only x8 below it: rank 2.
    EXPECT_EQ(x.canaries(0).calibrated_rank(), 2u);
    EXPECT_NEAR(x.canaries(0).calibrated_exact_exposure(), std::log2(1000.0) - 1, 1e-12);
    // 118 at 3.5: r = 0 .. 35 (r = 35 ties at 3.5, counted against it), the
    // two canaries below and itself: 36 + 2 + 1 = rank 39.
    EXPECT_EQ(x.canaries(2).calibrated_rank(), 39u);
    // 653 at 10.5: r = 0 .. 105 (not 118, a canary here), three canaries
    // below, itself: 106 + 3 + 1 = rank 110.
    EXPECT_EQ(x.canaries(3).calibrated_rank(), 110u);
    EXPECT_NEAR(x.canaries(3).calibrated_exact_exposure(), std::log2(1000.0) - std::log2(110.0),
                1e-12);
    const v1::ExposureByRepeats& controls = x.by_repeats(0);
    EXPECT_NEAR(controls.median_calibrated_exact_exposure(),
                std::log2(1000.0) - (std::log2(39.0) + std::log2(110.0)) / 2, 1e-12);
    EXPECT_DOUBLE_EQ(x.control_median_calibrated_exact_exposure(),
                     controls.median_calibrated_exact_exposure());
    // The sampled calibrated numbers are the ones without exact calibration.
    EXPECT_NEAR(x.canaries(3).calibrated_exposure(), 5 - std::log2(33.0), 1e-12);
  }
  EXPECT_THAT(metrics::Exposition(registry_),
              HasSubstr("memaudit_exposure_log2{audit=\"c\",estimator=\"calibrated_exact\","
                        "insertions=\"8\",team=\"\",variant=\"dp\"}"));
}

TEST_F(ExposureExactCalibrationScorerTest, RefusesAWrongSpaceAndACandidateOrderThatDisagrees) {
  auto message = [&](v1::Observation o) {
    o.set_audit_id("c");
    return std::string(scorer_->Ingest(o).status().message());
  };
  EXPECT_THAT(message(At(Obs(exposure::kSpacePxBits, {1, 2, 3}), "final", 0)),
              HasSubstr("observation.values: expected 1000 values for signal \"space_px_bits\""));
  EXPECT_THAT(message(At(Obs(exposure::kSpaceIndex, {904, 1000, 118, 653}), "final", 0)),
              HasSubstr("observation.values[1]: 1000 is not a valid \"space_index\" value"));
  EXPECT_THAT(message(At(Obs(exposure::kSpaceIndex, {1, 2, 3, 4}), "reference/0", 0)),
              HasSubstr("observation.signal"));
  std::vector<double> space(1000, 0.0);
  EXPECT_THAT(message(At(Obs(exposure::kSpacePxBits, space), "baseline", 0)),
              HasSubstr("observation.signal"))
      << "the baseline ranks no calibrated R";
  // Indices that are not where the canaries' Px sit fail the scoring.
  for (v1::Observation o : AllOf(/*space=*/true)) {
    if (o.signal() == exposure::kSpaceIndex) {
      o.clear_values();
      for (double i : {904, 271, 119, 653}) o.add_values(i);
    }
    MEMAUDIT_ASSERT_OK(scorer_->Ingest(o));
  }
  // The audit fails with the reason; the scorer goes on (ScoreIfComplete OK).
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("c"));
  EXPECT_THAT(scorer_->GetResults("c")->error(),
              HasSubstr("canary model space_px_bits: canary 2 has Px 36 but 12.9 at its index "
                        "119"));
}

TEST_F(ExposureSweepScorerTest, RefusesModelsOutsideTheSweepAndForeignCanaries) {
  auto message = [&](const v1::Observation& o) {
    return std::string(scorer_->Ingest(o).status().message());
  };
  EXPECT_THAT(message(At(Obs(exposure::kPxBits, {1, 2, 3, 4}), "final", 2)),
              HasSubstr("observation.run: 2 is outside the audit's 2 variant(s)"));
  EXPECT_THAT(message(At(Obs(exposure::kPxBits, {1, 2, 3, 4}), "reference/2", 0)),
              HasSubstr("observation.point"));
  EXPECT_THAT(message(At(Obs(exposure::kRank, {1, 2, 3, 4}), "reference/0", 0)),
              HasSubstr("observation.signal"));
  EXPECT_THAT(message(At(Obs(exposure::kDp, {1, 2}), "final", 1)),
              HasSubstr("observation.values[1]"));
  // A baseline that scored other canaries fails the audit, loudly, and
  // nothing else (ScoreIfComplete OK).
  for (v1::Observation o : All()) {
    if (o.point() == "baseline" && o.signal() == exposure::kSecretsUtf8) {
      o.clear_values();
      for (double b : Bytes("905\n271\n118\n653\n")) o.add_values(b);
    }
    MEMAUDIT_ASSERT_OK(scorer_->Ingest(o));
  }
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("s"));
  auto results = scorer_->GetResults("s");
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_FALSE(results->complete());
  EXPECT_THAT(results->error(), HasSubstr("baseline model secrets_utf8"));
}

}  // namespace
}  // namespace memaudit::scorer
