#include "services/scorer/exposure_metrics.h"

#include <unistd.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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
  // Gauges: bounded labels (audit, variant, insertions, estimator), no secrets.
  const std::string exposition = registry_.Serialize();
  EXPECT_THAT(exposition, HasSubstr("memaudit_exposure_space_log2{audit=\"x\"}"));
  EXPECT_THAT(exposition,
              HasSubstr("memaudit_exposure_log2{audit=\"x\",estimator=\"exact\",insertions=\"8\","
                        "variant=\"base\"}"));
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
  v1::Observation baseline = Obs(exposure::kPxBits, {1, 2, 3, 4});
  baseline.set_point(exposure::kBaselinePoint);  // the spec asks for no baseline
  EXPECT_THAT(std::string(code(baseline).message()), HasSubstr("observation.point"));
  EXPECT_THAT(std::string(code(Obs(exposure::kDp, {1, 1e-5})).message()),
              HasSubstr("observation.signal"));
  EXPECT_FALSE(scorer_->GetResults("x")->complete());
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
    ASSERT_TRUE(scorer_->OpenAudit("s", SweepSpec()).ok());
  }
  static v1::Observation At(v1::Observation o, const std::string& point, uint32_t run) {
    o.set_audit_id("s");
    o.set_point(point);
    o.set_run(run);
    return o;
  }
  // Every model of both variants; reference model j sees canary i at
  // 30 + i + j and reference k at 20 + k + j (so its mean is 30.5 + i and
  // 20.5 + k).
  static std::vector<v1::Observation> All() {
    std::vector<v1::Observation> out;
    for (uint32_t v = 0; v < 2; ++v) {
      for (const v1::Observation& o : Observations()) out.push_back(At(o, "final", v));
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
      }
    }
    out.push_back(At(Obs(exposure::kDp, {2.5, 1e-5}), "final", 1));
    return out;
  }
};

TEST_F(ExposureSweepScorerTest, ScoresEveryVariantWithBaselineAndCalibration) {
  std::vector<v1::Observation> all = All();
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    ASSERT_TRUE(scorer_->Ingest(all[i]).ok()) << all[i].point() << " " << all[i].signal();
  }
  ASSERT_TRUE(scorer_->ScoreIfComplete("s").ok());
  EXPECT_FALSE(scorer_->GetResults("s")->complete()) << "the DP variant's epsilon is missing";
  EXPECT_EQ(scorer_->GetResults("s")->models(), 8u);
  ASSERT_TRUE(scorer_->Ingest(all.back()).ok());
  ASSERT_TRUE(scorer_->ScoreIfComplete("s").ok());
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
  // One gauge series per variant and estimator.
  const std::string exposition = registry_.Serialize();
  for (const char* series :
       {"{audit=\"s\",estimator=\"exact\",insertions=\"8\",variant=\"dp\"}",
        "{audit=\"s\",estimator=\"baseline\",insertions=\"8\",variant=\"wide\"}",
        "{audit=\"s\",estimator=\"calibrated\",insertions=\"0\",variant=\"wide\"}"}) {
    EXPECT_THAT(exposition, HasSubstr(absl::StrCat("memaudit_exposure_log2", series)));
  }
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
  // A baseline that scored other canaries fails the audit's scoring loudly.
  for (v1::Observation o : All()) {
    if (o.point() == "baseline" && o.signal() == exposure::kSecretsUtf8) {
      o.clear_values();
      for (double b : Bytes("905\n271\n118\n653\n")) o.add_values(b);
    }
    ASSERT_TRUE(scorer_->Ingest(o).ok());
  }
  absl::Status scored = scorer_->ScoreIfComplete("s");
  EXPECT_THAT(std::string(scored.message()), HasSubstr("baseline model secrets_utf8"));
}

}  // namespace
}  // namespace memaudit::scorer
