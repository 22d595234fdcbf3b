#include "services/scorer/scorer.h"

#include <unistd.h>

#include "common/seeding.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::scorer {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t kModels = 8;
constexpr uint32_t kPool = 200;

v1::AuditSpec Spec() {
  v1::AuditSpec spec;
  spec.set_seed(3);
  v1::MembershipAudit* m = spec.mutable_membership();
  m->mutable_dataset()->set_pool_size(kPool);
  m->set_reference_models(kModels);
  for (const char* a : {"lira_online", "lira_offline", "loss"}) m->add_attacks(a);
  m->add_fpr_points(0.01);
  return spec;
}

// Members get a higher phi and a lower loss, plus per-example difficulty.
v1::Observation Observe(uint32_t run, const std::string& signal) {
  const KeepMatrix keep = BuildKeepMatrix(3, kModels, kPool);
  SplitMix64 rng(run * 7919 + (signal == "phi"));
  v1::Observation o;
  o.set_audit_id("a");
  o.set_run(run);
  o.set_point("final");
  o.set_signal(signal);
  for (uint32_t j = 0; j < kPool; ++j) {
    const double difficulty = (j % 10) * 0.3;
    const double phi = 2.0 - difficulty + (keep.in(run, j) ? 1.0 : 0.0) + rng.UniformDouble();
    o.add_values(signal == "phi" ? phi : std::log1p(std::exp(-phi)));
  }
  return o;
}

class ScorerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::TempDir() + "/scorer_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    std::remove(path_.c_str());
    Restart();
    ASSERT_TRUE(scorer_->OpenAudit("a", Spec()).ok());
  }
  void TearDown() override { std::remove(path_.c_str()); }
  void Restart() {
    scorer_.reset();
    store_.reset();
    store_ = std::move(*ScorerStore::Open(path_));
    registry_ = std::make_unique<metrics::Registry>();
    auto s = Scorer::Create(store_.get(), registry_.get());
    ASSERT_TRUE(s.ok()) << s.status();
    scorer_ = std::move(*s);
  }
  void IngestAll() {
    for (uint32_t r = 0; r < kModels; ++r) {
      for (const char* signal : {"phi", "loss"}) {
        ASSERT_TRUE(scorer_->Ingest(Observe(r, signal)).ok());
      }
      ASSERT_TRUE(scorer_->ScoreIfComplete("a").ok());
    }
  }

  std::string path_;
  std::unique_ptr<ScorerStore> store_;
  std::unique_ptr<metrics::Registry> registry_;
  std::unique_ptr<Scorer> scorer_;
};

TEST_F(ScorerTest, ScoresOnceEveryModelIsIn) {
  for (uint32_t r = 0; r + 1 < kModels; ++r) {
    ASSERT_TRUE(scorer_->Ingest(Observe(r, "phi")).ok());
    ASSERT_TRUE(scorer_->Ingest(Observe(r, "loss")).ok());
    ASSERT_TRUE(scorer_->ScoreIfComplete("a").ok());
    EXPECT_FALSE(scorer_->GetResults("a")->complete());
  }
  ASSERT_TRUE(scorer_->Ingest(Observe(kModels - 1, "phi")).ok());
  ASSERT_TRUE(scorer_->Ingest(Observe(kModels - 1, "loss")).ok());
  ASSERT_TRUE(scorer_->ScoreIfComplete("a").ok());
  auto results = scorer_->GetResults("a");
  ASSERT_TRUE(results->complete());
  ASSERT_EQ(results->attacks_size(), 3);
  EXPECT_EQ(results->members() + results->non_members(), uint64_t{kModels} * kPool);
  EXPECT_EQ(results->members(), uint64_t{kModels} * kPool / 2);
  // Calibrating per example (LiRA) must beat the raw loss on this data.
  EXPECT_GT(results->attacks(0).auc(), 0.8);
  EXPECT_GT(results->attacks(0).auc(), results->attacks(2).auc());
  EXPECT_EQ(results->attacks(0).operating_points(0).fpr_target(), 0.01);
  EXPECT_LE(results->attacks(0).operating_points(0).fpr(), 0.01);
  EXPECT_THAT(registry_->Serialize(),
              HasSubstr("memaudit_membership_auc_ratio{attack=\"lira_online\",audit=\"a\"}"));
  // The ranking puts the examples flagged most often first.
  ASSERT_EQ(results->most_vulnerable_size(), 20);
  EXPECT_EQ(results->vulnerability_attack(), "lira_online");
  EXPECT_EQ(results->vulnerability_fpr(), 0.01);
  for (int i = 1; i < 20; ++i) {
    EXPECT_GE(results->most_vulnerable(i - 1).detected(), results->most_vulnerable(i).detected());
  }
  EXPECT_EQ(results->most_vulnerable(0).member_models(), kModels / 2);
  EXPECT_GT(results->most_vulnerable(0).detected(), 0u);
}

TEST_F(ScorerTest, ResentObservationsAreNotCountedTwice) {
  auto first = scorer_->Ingest(Observe(0, "phi"));
  auto again = scorer_->Ingest(Observe(0, "phi"));
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_TRUE(*first);
  EXPECT_FALSE(*again);
  EXPECT_EQ(*store_->CountObservations("a"), 1);
}

TEST_F(ScorerTest, BadObservationsNameTheField) {
  v1::Observation o = Observe(0, "phi");
  o.set_audit_id("nope");
  EXPECT_EQ(scorer_->Ingest(o).status().code(), absl::StatusCode::kNotFound);
  o = Observe(0, "phi");
  o.set_run(kModels);
  EXPECT_THAT(std::string(scorer_->Ingest(o).status().message()), HasSubstr("observation.run"));
  o = Observe(0, "phi");
  o.mutable_values()->RemoveLast();
  auto short_values = scorer_->Ingest(o);
  EXPECT_EQ(short_values.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(short_values.status().message()), HasSubstr("observation.values"));
  o = Observe(0, "logits");
  EXPECT_THAT(std::string(scorer_->Ingest(o).status().message()), HasSubstr("observation.signal"));
  o = Observe(0, "phi");
  o.set_values(3, std::nan(""));
  EXPECT_THAT(std::string(scorer_->Ingest(o).status().message()),
              HasSubstr("observation.values[3]"));
  EXPECT_EQ(*store_->CountObservations("a"), 0);
}

TEST_F(ScorerTest, ReopeningWithADifferentSpecIsRefused) {
  EXPECT_TRUE(scorer_->OpenAudit("a", Spec()).ok());
  v1::AuditSpec other = Spec();
  other.set_seed(4);
  EXPECT_EQ(scorer_->OpenAudit("a", other).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ScorerTest, RestartKeepsResultsAndScoresWhatWasPending) {
  IngestAll();
  const std::string before = scorer_->GetResults("a")->SerializeAsString();
  Restart();
  EXPECT_EQ(scorer_->GetResults("a")->SerializeAsString(), before);
  EXPECT_THAT(registry_->Serialize(), HasSubstr("memaudit_membership_auc_ratio"));
  // Inputs completed but never scored (a crash in between): scored at start.
  ASSERT_TRUE(scorer_->OpenAudit("b", Spec()).ok());
  for (uint32_t r = 0; r < kModels; ++r) {
    for (const char* signal : {"phi", "loss"}) {
      v1::Observation o = Observe(r, signal);
      o.set_audit_id("b");
      ASSERT_TRUE(scorer_->Ingest(o).ok());
    }
  }
  Restart();
  auto b = scorer_->GetResults("b");
  ASSERT_TRUE(b->complete());
  b->set_audit_id("a");
  EXPECT_EQ(b->SerializeAsString(), before);
}

}  // namespace
}  // namespace memaudit::scorer
