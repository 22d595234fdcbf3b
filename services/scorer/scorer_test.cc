#include "services/scorer/scorer.h"

#include <unistd.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/base/seeding.h"
#include "common/base/sqlite.h"
#include "common/messages/content_key.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::scorer {
namespace {

using ::memaudit::testing::IsOkAndHolds;
using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

constexpr uint32_t kModels = 8;
constexpr uint32_t kPool = 200;

v1::AuditSpec Spec() {
  v1::AuditSpec spec;
  spec.set_name("test");
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
    path_ = ::testing::TempDir() + "/scorer_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    std::remove(path_.c_str());
    Restart();
    MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("a", Spec()));
  }
  void TearDown() override { std::remove(path_.c_str()); }
  void Restart() {
    scorer_.reset();
    store_.reset();
    store_ = std::move(*ScorerStore::Open(path_));
    registry_ = std::make_unique<prometheus::Registry>();
    auto s = Scorer::Create(store_.get(), registry_.get(), options_);
    MEMAUDIT_ASSERT_OK(s);
    scorer_ = std::move(*s);
  }
  // Every observation of `audit_id` as its tasks' first leases send them,
  // held by worker w-0, then each task's Complete check (which seals the
  // lease and scores the audit once every lease is sealed).
  void IngestAll(const std::string& audit_id = "a") {
    std::set<std::string> tasks;
    std::vector<TaskRef> refs;
    for (uint32_t r = 0; r < kModels; ++r) {
      for (const char* signal : {"phi", "loss"}) {
        v1::Observation o = Observe(r, signal);
        o.set_audit_id(audit_id);
        MEMAUDIT_ASSERT_OK_AND_ASSIGN(const TaskRef task, scorer_->TaskOf(o));
        MEMAUDIT_ASSERT_OK(scorer_->Ingest(o, {task.ToString(), 1, "worker w-0"}));
        if (tasks.insert(task.ToString()).second) refs.push_back(task);
      }
    }
    for (const TaskRef& task : refs) {
      MEMAUDIT_ASSERT_OK_AND_ASSIGN(const TaskCheck check, scorer_->CheckTask(audit_id, task, 1));
      ASSERT_TRUE(check.missing.empty()) << task.ToString();
    }
    MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete(audit_id));
  }

  std::string path_;
  ScorerOptions options_;  // what Restart creates the scorer with
  std::unique_ptr<ScorerStore> store_;
  std::unique_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Scorer> scorer_;
};

// One audit's long scoring holds that audit only: another is scored (and
// its CheckTask answered) meanwhile, and the same audit waits its turn.
TEST_F(ScorerTest, AnAuditBeingScoredHoldsNoOtherAudit) {
  std::atomic<bool> hold{false};
  absl::Notification inside, release;
  options_.before_scoring = [&](const std::string& audit_id) {
    if (audit_id != "a" || !hold.exchange(false)) return;
    inside.Notify();
    release.WaitForNotification();
  };
  Restart();
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("b", Spec()));
  for (uint32_t r = 0; r < kModels; ++r) {
    for (const char* signal : {"phi", "loss"}) {
      v1::Observation o = Observe(r, signal);
      MEMAUDIT_ASSERT_OK(scorer_->Ingest(o));
      o.set_audit_id("b");
      MEMAUDIT_ASSERT_OK(scorer_->Ingest(o));
    }
  }
  hold = true;
  std::thread scoring_a([&] { EXPECT_TRUE(scorer_->ScoreIfComplete("a").ok()); });
  inside.WaitForNotification();
  absl::Notification a_again_done, b_done;
  std::thread a_again([&] {
    EXPECT_TRUE(scorer_->ScoreIfComplete("a").ok());
    a_again_done.Notify();
  });
  std::thread scoring_b([&] {
    EXPECT_TRUE(scorer_->ScoreIfComplete("b").ok());
    b_done.Notify();
  });
  EXPECT_TRUE(b_done.WaitForNotificationWithTimeout(absl::Seconds(60)))
      << "audit b waited for audit a's scoring";
  EXPECT_TRUE(scorer_->GetResults("b")->complete());
  EXPECT_FALSE(a_again_done.WaitForNotificationWithTimeout(absl::Milliseconds(200)))
      << "audit a was scored twice at once";
  EXPECT_FALSE(scorer_->GetResults("a")->complete());
  release.Notify();
  scoring_a.join();
  a_again.join();
  scoring_b.join();
  EXPECT_TRUE(scorer_->GetResults("a")->complete());
  EXPECT_EQ(scorer_->GetResults("a")->attacks(0).auc(), scorer_->GetResults("b")->attacks(0).auc())
      << "the same observations, the same numbers";
}

// A CheckTask that would score an audit another call is scoring waits for
// it kCheckTaskScoringWait at most, then answers UNAVAILABLE (the worker's
// Complete asks again): a long final scoring holds the thread that scores,
// not one more per retry. Asked again once the scoring is done, it answers.
TEST_F(ScorerTest, ACheckTaskWaitsForAnotherCallsScoringOnlySoLong) {
  std::atomic<bool> hold{false};
  absl::Notification inside, release;
  options_.before_scoring = [&](const std::string&) {
    if (!hold.exchange(false)) return;
    inside.Notify();
    release.WaitForNotification();
  };
  Restart();
  std::vector<TaskRef> tasks;
  for (uint32_t r = 0; r < kModels; ++r) {
    for (const char* signal : {"phi", "loss"}) {
      const v1::Observation o = Observe(r, signal);
      MEMAUDIT_ASSERT_OK_AND_ASSIGN(const TaskRef task, scorer_->TaskOf(o));
      MEMAUDIT_ASSERT_OK(scorer_->Ingest(o, {task.ToString(), 1, "worker w-0"}));
      if (tasks.empty() || tasks.back().ToString() != task.ToString()) tasks.push_back(task);
    }
  }
  for (size_t t = 0; t + 1 < tasks.size(); ++t) {
    MEMAUDIT_ASSERT_OK(scorer_->CheckTask("a", tasks[t], 1).status());
  }
  // The last task's Complete seals the last lease and scores the audit: held.
  hold = true;
  std::thread first([&] { MEMAUDIT_EXPECT_OK(scorer_->CheckTask("a", tasks.back(), 1).status()); });
  inside.WaitForNotification();
  const absl::Time asked = absl::Now();
  const absl::Status again = scorer_->CheckTask("a", tasks.back(), 1).status();
  const absl::Duration waited = absl::Now() - asked;
  EXPECT_THAT(again, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("being scored")));
  EXPECT_GE(waited, Scorer::kCheckTaskScoringWait - absl::Milliseconds(50));
  EXPECT_LT(waited, Scorer::kCheckTaskScoringWait + absl::Seconds(5));
  EXPECT_FALSE(scorer_->GetResults("a")->complete());
  release.Notify();
  first.join();
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(const TaskCheck check, scorer_->CheckTask("a", tasks.back(), 1));
  EXPECT_TRUE(check.missing.empty());
  EXPECT_TRUE(scorer_->GetResults("a")->complete());
}

TEST_F(ScorerTest, ScoresOnceEveryModelIsIn) {
  for (uint32_t r = 0; r + 1 < kModels; ++r) {
    MEMAUDIT_ASSERT_OK(scorer_->Ingest(Observe(r, "phi")));
    MEMAUDIT_ASSERT_OK(scorer_->Ingest(Observe(r, "loss")));
    MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("a"));
    EXPECT_FALSE(scorer_->GetResults("a")->complete());
  }
  MEMAUDIT_ASSERT_OK(scorer_->Ingest(Observe(kModels - 1, "phi")));
  MEMAUDIT_ASSERT_OK(scorer_->Ingest(Observe(kModels - 1, "loss")));
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("a"));
  auto results = scorer_->GetResults("a");
  ASSERT_TRUE(results->complete());
  ASSERT_EQ(results->attacks_size(), 3);
  EXPECT_EQ(results->members() + results->non_members(), uint64_t{kModels} * kPool);
  EXPECT_EQ(results->members(), uint64_t{kModels} * kPool / 2);
  // Calibrating per example (LiRA) must beat the raw loss on this data.
  EXPECT_GT(results->attacks(0).auc(), 0.8);
  EXPECT_GT(results->attacks(0).auc(), results->attacks(2).auc());
  // Each AUC comes with its interval (clustered by example), and the gauges
  // carry it.
  for (const v1::AttackResult& a : results->attacks()) {
    EXPECT_LE(a.auc_low(), a.auc());
    EXPECT_GE(a.auc_high(), a.auc());
    EXPECT_LT(a.auc_low(), a.auc_high());
    // The balanced accuracy's bootstrap interval holds it, within [0.5, 1].
    EXPECT_GE(a.balanced_accuracy_low(), 0.5);
    EXPECT_LE(a.balanced_accuracy_low(), a.balanced_accuracy());
    EXPECT_GE(a.balanced_accuracy_high(), a.balanced_accuracy());
    EXPECT_LE(a.balanced_accuracy_high(), 1.0);
    EXPECT_LT(a.balanced_accuracy_low(), a.balanced_accuracy_high());
  }
  EXPECT_THAT(metrics::Exposition(*registry_),
              HasSubstr("memaudit_membership_auc_low_ratio{attack=\"lira_online\",audit=\"a\""));
  EXPECT_EQ(results->attacks(0).operating_points(0).fpr_target(), 0.01);
  EXPECT_LE(results->attacks(0).operating_points(0).fpr(), 0.01);
  EXPECT_THAT(
      metrics::Exposition(*registry_),
      HasSubstr("memaudit_membership_auc_ratio{attack=\"lira_online\",audit=\"a\",team=\"\"}"));
  // The ranking puts the examples flagged most often first.
  ASSERT_EQ(results->most_vulnerable_size(), 20);
  EXPECT_EQ(results->vulnerability_attack(), v1::LIRA_ONLINE);
  EXPECT_EQ(results->vulnerability_fpr(), 0.01);
  for (int i = 1; i < 20; ++i) {
    EXPECT_GE(results->most_vulnerable(i - 1).detected(), results->most_vulnerable(i).detected());
  }
  EXPECT_EQ(results->most_vulnerable(0).member_models(), kModels / 2);
  EXPECT_GT(results->most_vulnerable(0).detected(), 0u);
}

// The export follows the complete results, from the same stored signals:
// refused before, and the same arrays every time after.
TEST_F(ScorerTest, ExportsThePerExampleDataOfScoredAuditsOnly) {
  EXPECT_THAT(scorer_->Export("nobody"), StatusIs(absl::StatusCode::kNotFound));
  MEMAUDIT_ASSERT_OK(scorer_->Ingest(Observe(0, "phi")));
  EXPECT_THAT(scorer_->Export("a"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not scored yet")));
  IngestAll();
  auto arrays = scorer_->Export("a");
  MEMAUDIT_ASSERT_OK(arrays);
  std::vector<std::string> names;
  for (const v1::ExportArray& a : *arrays) names.push_back(a.name());
  EXPECT_THAT(names,
              ::testing::ElementsAre("keep", "phi", "loss", "target_model", "score_lira_online",
                                     "score_lira_offline", "score_loss", "dataset_index"));
  // phi as it was ingested, row by row.
  const v1::Observation phi = Observe(5, "phi");
  EXPECT_EQ((*arrays)[1].values(5 * kPool + 7), phi.values(7));
  auto again = scorer_->Export("a");
  MEMAUDIT_ASSERT_OK(again);
  for (size_t i = 0; i < arrays->size(); ++i) {
    EXPECT_EQ((*arrays)[i].SerializeAsString(), (*again)[i].SerializeAsString());
  }
}

// memaudit_scorer_audit_warnings: the size of the results' warnings, set
// wherever the results' gauges are, a restart's republishing included.
TEST_F(ScorerTest, PublishesHowManyWarningsTheResultsCarry) {
  IngestAll();
  auto results = scorer_->GetResults("a");
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  EXPECT_THAT(metrics::Exposition(*registry_),
              HasSubstr(absl::StrCat("memaudit_scorer_audit_warnings{audit=\"a\",team=\"\"} ",
                                     results->warnings_size(), "\n")));
  auto stored = store_->GetResults("a");
  MEMAUDIT_ASSERT_OK(stored);
  ASSERT_TRUE(stored->has_value());
  v1::AuditResults warned = **stored;
  warned.clear_warnings();
  for (const char* code : {"few_reference_models", "few_trials"}) {
    v1::ResultWarning* w = warned.add_warnings();
    w->set_code(code);
    w->set_message("test");
  }
  MEMAUDIT_ASSERT_OK(store_->PutResults(warned));
  Restart();
  EXPECT_THAT(metrics::Exposition(*registry_),
              HasSubstr("memaudit_scorer_audit_warnings{audit=\"a\",team=\"\"} 2\n"));
}

// The reference code's variants, named: scored next to the paper's, and
// different from them (two-sided: φ below OUT's centre also reads as a
// member; reference variance: one σ of raw IN values).
TEST_F(ScorerTest, TheReferenceCodesVariantsAreScoredWhenNamed) {
  v1::AuditSpec spec = Spec();
  spec.mutable_membership()->clear_attacks();
  spec.mutable_membership()->add_attacks("lira_offline");
  spec.mutable_membership()->add_attacks("lira_offline_two_sided");
  spec.mutable_membership()->add_attacks("lira_online_fixed_variance");
  spec.mutable_membership()->add_attacks("lira_fixed_variance_reference");
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("b", spec));
  for (uint32_t r = 0; r < kModels; ++r) {
    for (const char* signal : {"phi", "loss"}) {
      v1::Observation o = Observe(r, signal);
      o.set_audit_id("b");
      MEMAUDIT_ASSERT_OK(scorer_->Ingest(o));
    }
  }
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("b"));
  auto results = scorer_->GetResults("b");
  ASSERT_TRUE(results->complete());
  ASSERT_EQ(results->attacks_size(), 4);
  EXPECT_EQ(results->attacks(1).attack(), v1::LIRA_OFFLINE_TWO_SIDED);
  EXPECT_GT(results->attacks(1).auc(), 0.5);
  EXPECT_NE(results->attacks(1).auc(), results->attacks(0).auc());
  EXPECT_EQ(results->attacks(3).attack(), v1::LIRA_FIXED_VARIANCE_REFERENCE);
  EXPECT_GT(results->attacks(3).auc(), 0.8) << "online: calibrated per example";
  EXPECT_NE(results->attacks(3).auc(), results->attacks(2).auc());
}

// Forged values past what any model gives would overflow the scoring
// (exp(-loss) of a loss of -1000 is inf): refused at Ingest, naming the value.
TEST_F(ScorerTest, SignalsOutsideTheirRangeAreRefused) {
  v1::Observation loss = Observe(0, "loss");
  loss.set_values(3, -1000);
  EXPECT_THAT(
      scorer_->Ingest(loss),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("observation.values[3]: a loss must be in [0, 1e+06] (got -1000)")));
  v1::Observation phi = Observe(0, "phi");
  phi.set_values(0, 1e308);
  EXPECT_THAT(scorer_->Ingest(phi), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("observation.values[0]: phi must be in")));
  phi.set_values(0, -1e6);
  MEMAUDIT_EXPECT_OK(scorer_->Ingest(phi));
}

TEST_F(ScorerTest, ResentObservationsAreNotCountedTwice) {
  auto first = scorer_->Ingest(Observe(0, "phi"));
  auto again = scorer_->Ingest(Observe(0, "phi"));
  MEMAUDIT_ASSERT_OK(first);
  MEMAUDIT_ASSERT_OK(again);
  EXPECT_TRUE(*first);
  EXPECT_FALSE(*again);
  EXPECT_EQ(*store_->CountObservations("a"), 1);
}

TEST_F(ScorerTest, BadObservationsNameTheField) {
  v1::Observation o = Observe(0, "phi");
  o.set_audit_id("nope");
  EXPECT_THAT(scorer_->Ingest(o), StatusIs(absl::StatusCode::kNotFound));
  o = Observe(0, "phi");
  o.set_run(kModels);
  EXPECT_THAT(std::string(scorer_->Ingest(o).status().message()), HasSubstr("observation.run"));
  o = Observe(0, "phi");
  o.mutable_values()->RemoveLast();
  auto short_values = scorer_->Ingest(o);
  EXPECT_THAT(short_values, StatusIs(absl::StatusCode::kInvalidArgument));
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
  MEMAUDIT_EXPECT_OK(scorer_->OpenAudit("a", Spec()));
  v1::AuditSpec other = Spec();
  other.set_seed(4);
  EXPECT_THAT(scorer_->OpenAudit("a", other), StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST_F(ScorerTest, RestartKeepsResultsAndScoresWhatWasPending) {
  IngestAll();
  const std::string before = scorer_->GetResults("a")->SerializeAsString();
  Restart();
  EXPECT_EQ(scorer_->GetResults("a")->SerializeAsString(), before);
  EXPECT_THAT(metrics::Exposition(*registry_), HasSubstr("memaudit_membership_auc_ratio"));
  // Inputs completed but never scored (a crash in between): scored at start.
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("b", Spec()));
  for (uint32_t r = 0; r < kModels; ++r) {
    for (const char* signal : {"phi", "loss"}) {
      v1::Observation o = Observe(r, signal);
      o.set_audit_id("b");
      MEMAUDIT_ASSERT_OK(scorer_->Ingest(o));
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

namespace memaudit::scorer {
namespace {

TEST_F(ScorerTest, LargerAuditReusesTheModelsAnEarlierOneTrained) {
  auto none = scorer_->ReuseStoredRuns("a");
  MEMAUDIT_ASSERT_OK(none);
  EXPECT_TRUE(none->empty());
  IngestAll();

  v1::AuditSpec grown = Spec();
  grown.mutable_membership()->set_reference_models(2 * kModels);
  grown.mutable_membership()->clear_attacks();  // attacks do not change a model
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("b", grown));
  auto reused = scorer_->ReuseStoredRuns("b");
  MEMAUDIT_ASSERT_OK(reused);
  ASSERT_EQ(reused->size(), kModels);
  for (uint32_t r = 0; r < kModels; ++r) {
    EXPECT_EQ((*reused)[r].run(), r);
    EXPECT_EQ((*reused)[r].from_audit_id(), "a");
  }
  auto copied = store_->LoadSignal("b", "final", "phi");
  MEMAUDIT_ASSERT_OK(copied);
  ASSERT_EQ(copied->size(), kModels);
  const v1::Observation original = Observe(3, "phi");
  EXPECT_EQ(copied->at(3), std::vector<double>(original.values().begin(), original.values().end()));
  // Half the models are missing: nothing is scored yet.
  auto partial = scorer_->GetResults("b");
  MEMAUDIT_ASSERT_OK(partial);
  EXPECT_FALSE(partial->complete());

  // The same spec again is scored at once from the stored models.
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("again", Spec()));
  auto all = scorer_->ReuseStoredRuns("again");
  MEMAUDIT_ASSERT_OK(all);
  EXPECT_EQ(all->size(), kModels);
  auto results = scorer_->GetResults("again");
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_TRUE(results->complete());
  EXPECT_EQ(results->attacks(0).auc(), scorer_->GetResults("a")->attacks(0).auc());

  // Anything that decides the weights differs: nothing to reuse.
  v1::AuditSpec other_seed = Spec();
  other_seed.set_seed(4);
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("c", other_seed));
  EXPECT_TRUE(scorer_->ReuseStoredRuns("c")->empty());
  v1::AuditSpec other_recipe = Spec();
  other_recipe.mutable_membership()->mutable_training()->set_epochs(7);
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("d", other_recipe));
  EXPECT_TRUE(scorer_->ReuseStoredRuns("d")->empty());
}

}  // namespace
}  // namespace memaudit::scorer

namespace memaudit::scorer {
namespace {

// Population examples: never members, so no +1 on phi.
v1::Observation ObservePopulation(uint32_t run, uint32_t size) {
  SplitMix64 rng(run * 104729 + 5);
  v1::Observation o;
  o.set_audit_id("r");
  o.set_run(run);
  o.set_point("final");
  o.set_signal("loss_population");
  for (uint32_t z = 0; z < size; ++z) {
    const double phi = 2.0 - (z % 10) * 0.3 + rng.UniformDouble();
    o.add_values(std::log1p(std::exp(-phi)));
  }
  return o;
}

TEST_F(ScorerTest, RmiaUsesThePopulationAndATargetCanBeChosen) {
  for (bool one_target : {false, true}) {
    SCOPED_TRACE(one_target ? "target model 3" : "every target");
    ASSERT_NO_FATAL_FAILURE(Restart());
    v1::AuditSpec spec = Spec();
    spec.mutable_membership()->add_attacks("rmia");
    spec.mutable_membership()->set_population_size(60);
    if (one_target) spec.mutable_membership()->set_target_model(3);
    const std::string id = one_target ? "r1" : "r";
    MEMAUDIT_ASSERT_OK(scorer_->OpenAudit(id, spec));
    for (uint32_t r = 0; r < kModels; ++r) {
      for (const char* signal : {"phi", "loss"}) {
        v1::Observation o = Observe(r, signal);
        o.set_audit_id(id);
        MEMAUDIT_ASSERT_OK(scorer_->Ingest(o));
      }
      MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete(id));
      EXPECT_FALSE(scorer_->GetResults(id)->complete()) << "population missing";
      v1::Observation population = ObservePopulation(r, 60);
      population.set_audit_id(id);
      MEMAUDIT_ASSERT_OK(scorer_->Ingest(population));
    }
    // A population vector of the wrong length names the field.
    v1::Observation wrong = ObservePopulation(0, 59);
    wrong.set_audit_id(id);
    absl::StatusOr<bool> refused = scorer_->Ingest(wrong);
    EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(refused.status().message(), HasSubstr("population"));

    MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete(id));
    auto results = scorer_->GetResults(id);
    MEMAUDIT_ASSERT_OK(results);
    ASSERT_TRUE(results->complete());
    EXPECT_EQ(results->members() + results->non_members(),
              (one_target ? 1 : kModels) * uint64_t{kPool});
    const v1::AttackResult& rmia = results->attacks(results->attacks_size() - 1);
    ASSERT_EQ(rmia.attack(), v1::RMIA);
    // Members carry a +1 on phi that the population never has.
    EXPECT_GT(rmia.auc(), 0.7);
  }
}

}  // namespace
}  // namespace memaudit::scorer

namespace memaudit::scorer {
namespace {

// A membership spec whose RMIA turns losses into exp(-loss): a stored loss of
// -1000 (forged, from before Ingest bounded the values, as in issue 13's
// outage) makes it infinite, which the scoring refuses.
v1::AuditSpec RmiaSpec() {
  v1::AuditSpec spec = Spec();
  spec.mutable_membership()->add_attacks("rmia");
  spec.mutable_membership()->set_population_size(8);
  return spec;
}

// Every observation of `audit_id` (a RmiaSpec audit) straight into the
// store, past Ingest's checks, with losses of -1000; all but run
// `except_run`'s population loss.
void StoreForged(ScorerStore* store, const std::string& audit_id, int except_run = -1) {
  for (uint32_t r = 0; r < kModels; ++r) {
    for (const char* signal : {"phi", "loss", "loss_population"}) {
      if (static_cast<int>(r) == except_run && std::string(signal) == "loss_population") continue;
      v1::Observation o = Observe(r, signal == std::string("loss_population") ? "loss" : signal);
      o.set_audit_id(audit_id);
      o.set_signal(signal);
      o.clear_values();
      const uint32_t n = o.signal() == "loss_population" ? 8 : kPool;
      for (uint32_t j = 0; j < n; ++j) o.add_values(o.signal() == "phi" ? 1.0 : -1000.0);
      MEMAUDIT_ASSERT_OK(store->PutObservation(o));
    }
  }
}

TEST_F(ScorerTest, StoredValuesThatCannotBeScoredFailTheirAuditAndTheScorerStarts) {
  IngestAll();
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("forged", RmiaSpec()));
  ASSERT_NO_FATAL_FAILURE(StoreForged(store_.get(), "forged"));
  // Scorer::Create scores every stored audit: it starts all the same.
  ASSERT_NO_FATAL_FAILURE(Restart());
  auto forged = scorer_->GetResults("forged");
  MEMAUDIT_ASSERT_OK(forged);
  EXPECT_FALSE(forged->complete());
  EXPECT_THAT(forged->error(), HasSubstr("inf"));
  EXPECT_TRUE(scorer_->GetResults("a")->complete()) << "the other audits are served";
  EXPECT_THAT(metrics::Exposition(*registry_),
              HasSubstr("memaudit_scorer_audits_unscorable_total 1"));
  // Failed for good: the next start keeps the reason and does not score it again.
  const std::string error = forged->error();
  ASSERT_NO_FATAL_FAILURE(Restart());
  EXPECT_EQ(scorer_->GetResults("forged")->error(), error);
  EXPECT_THAT(metrics::Exposition(*registry_),
              HasSubstr("memaudit_scorer_audits_unscorable_total 0"));
  // Its runs are no source of reuse.
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("same-recipe", RmiaSpec()));
  auto reused = scorer_->ReuseStoredRuns("same-recipe");
  MEMAUDIT_ASSERT_OK(reused);
  EXPECT_TRUE(reused->empty());
  EXPECT_TRUE(scorer_->GetResults("same-recipe")->error().empty());
}

// At run time too: the Ingest that completes an audit whose values cannot be
// scored succeeds, the audit fails, and other audits go on.
TEST_F(ScorerTest, AScoringErrorFailsThatAuditNotTheIngest) {
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("forged", RmiaSpec()));
  ASSERT_NO_FATAL_FAILURE(StoreForged(store_.get(), "forged", /*except_run=*/0));
  v1::Observation last;
  last.set_audit_id("forged");
  last.set_point("final");
  last.set_signal("loss_population");
  for (int j = 0; j < 8; ++j) last.add_values(0.5);
  MEMAUDIT_ASSERT_OK(scorer_->Ingest(last));
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("forged"));
  EXPECT_THAT(scorer_->GetResults("forged")->error(), HasSubstr("inf"));
  IngestAll();
  EXPECT_TRUE(scorer_->GetResults("a")->complete());
  EXPECT_TRUE(scorer_->GetResults("a")->error().empty());
}

// Content-keyed reuse draws on the same team's runs only, unless the scorer
// runs with --cross-team-reuse.
TEST_F(ScorerTest, ReuseStaysWithinTheSubmittingTeam) {
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("alpha-1", Spec(), "alpha"));
  MEMAUDIT_ASSERT_OK(scorer_->ReuseStoredRuns("alpha-1"));  // records its content keys
  ASSERT_NO_FATAL_FAILURE(IngestAll("alpha-1"));
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("beta-1", Spec(), "beta"));
  EXPECT_TRUE(scorer_->ReuseStoredRuns("beta-1")->empty()) << "another team's runs";
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("alpha-2", Spec(), "alpha"));
  auto same_team = scorer_->ReuseStoredRuns("alpha-2");
  MEMAUDIT_ASSERT_OK(same_team);
  ASSERT_EQ(same_team->size(), kModels);
  EXPECT_EQ((*same_team)[0].from_audit_id(), "alpha-1");
  EXPECT_THAT(scorer_->OpenAudit("alpha-2", Spec(), "beta"),
              StatusIs(absl::StatusCode::kFailedPrecondition))
      << "an audit keeps the team it was opened with";
  EXPECT_THAT(scorer_->OpenAudit("x", Spec(), "no spaces"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("team")));

  options_.cross_team_reuse = true;
  ASSERT_NO_FATAL_FAILURE(Restart());
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("beta-2", Spec(), "beta"));
  auto cross = scorer_->ReuseStoredRuns("beta-2");
  MEMAUDIT_ASSERT_OK(cross);
  ASSERT_EQ(cross->size(), kModels);
  EXPECT_EQ((*cross)[0].from_audit_id(), "alpha-1");
}

// A database from before capabilities: its audits migrate with reusable = 0,
// since who wrote their observations is unknown; they are still scored.
TEST_F(ScorerTest, RunsStoredBeforeCapabilitiesAreNeverReused) {
  scorer_.reset();
  store_.reset();
  std::remove(path_.c_str());
  {
    auto db = sql::Database::Open(path_);
    MEMAUDIT_ASSERT_OK(db);
    // The first release's audits table (PRAGMA user_version 0).
    MEMAUDIT_ASSERT_OK(
        (*db)->Exec("CREATE TABLE audits (audit_id TEXT PRIMARY KEY, spec BLOB NOT NULL);"));
    auto insert = (*db)->Prepare("INSERT INTO audits VALUES ('legacy', ?)");
    MEMAUDIT_ASSERT_OK(insert);
    insert->BindBlob(1, Spec().SerializeAsString());
    MEMAUDIT_ASSERT_OK(insert->Run());
  }
  ASSERT_NO_FATAL_FAILURE(Restart());
  auto info = store_->GetAuditInfo("legacy");
  MEMAUDIT_ASSERT_OK(info);
  EXPECT_FALSE(info->reusable);
  for (uint32_t r = 0; r < kModels; ++r) {
    MEMAUDIT_ASSERT_OK(store_->PutModelKey("legacy", r, MembershipModelKey(Spec(), r)));
    for (const char* signal : {"phi", "loss"}) {
      v1::Observation o = Observe(r, signal);
      o.set_audit_id("legacy");
      MEMAUDIT_ASSERT_OK(scorer_->Ingest(o));
    }
  }
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("legacy"));
  EXPECT_TRUE(scorer_->GetResults("legacy")->complete());
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("new", Spec()));
  EXPECT_TRUE(store_->GetAuditInfo("new")->reusable);
  EXPECT_TRUE(scorer_->ReuseStoredRuns("new")->empty());
}

// What the coordinator asks before it counts a Complete: the observations of
// one task (here models 3..5 with three models per task) the scorer lacks.
TEST_F(ScorerTest, CheckTaskNamesWhatATaskHasNotSent) {
  v1::AuditSpec spec = Spec();
  spec.mutable_resources()->set_models_per_task(3);
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("p", spec));
  auto observe = [](uint32_t run, const char* signal) {
    v1::Observation o = Observe(run, signal);
    o.set_audit_id("p");
    return o;
  };
  const TaskRef task{"reference_model", 1};
  EXPECT_THAT(scorer_->TaskOf(observe(4, "loss")), IsOkAndHolds(task));
  EXPECT_THAT(scorer_->TaskOf(observe(7, "phi")), IsOkAndHolds(TaskRef{"reference_model", 2}));
  MEMAUDIT_ASSERT_OK(scorer_->Ingest(observe(3, "phi")));
  MEMAUDIT_ASSERT_OK(scorer_->Ingest(observe(3, "loss")));
  MEMAUDIT_ASSERT_OK(scorer_->Ingest(observe(4, "phi")));
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(TaskCheck check, scorer_->CheckTask("p", task));
  std::vector<std::string> missing;
  for (const ObservationKey& k : check.missing) missing.push_back(k.ToString());
  EXPECT_THAT(missing, ::testing::ElementsAre("run 4 point final signal loss",
                                              "run 5 point final signal phi",
                                              "run 5 point final signal loss"));
  EXPECT_TRUE(check.audit_error.empty());
  for (const auto& [run, signal] : {std::pair{4u, "loss"}, {5u, "phi"}, {5u, "loss"}}) {
    MEMAUDIT_ASSERT_OK(scorer_->Ingest(observe(run, signal)));
  }
  EXPECT_TRUE(scorer_->CheckTask("p", task)->missing.empty());
  EXPECT_THAT(scorer_->CheckTask("p", {"reference_model", 3}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(scorer_->CheckTask("p", {"canary_model", 0}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(scorer_->CheckTask("nope", task), StatusIs(absl::StatusCode::kNotFound));
  v1::Observation past_the_plan = observe(7, "phi");  // Observe knows runs 0..7 only
  past_the_plan.set_run(8);
  EXPECT_THAT(scorer_->TaskOf(past_the_plan),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("observation.run")));
}

}  // namespace
}  // namespace memaudit::scorer

namespace memaudit::scorer {
namespace {

// A capability is a lease (docs/security.md): the first write of a task's
// later lease drops what earlier leases stored and shuts them out; a lease
// that ended (given back) or was sealed (completed) takes no more writes.
TEST_F(ScorerTest, ALaterLeaseSupersedesAnEarlierOneAndEndedLeasesTakeNoWrites) {
  v1::Observation phi = Observe(3, "phi");
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(const TaskRef task, scorer_->TaskOf(phi));
  const std::string t = task.ToString();
  const ObservationWriter first{t, 1, "worker w-0"};
  const ObservationWriter second{t, 2, "worker w-1"};
  EXPECT_THAT(scorer_->Ingest(phi, first), IsOkAndHolds(true));
  EXPECT_EQ(*store_->CountObservations("a"), 1);
  // Lease 2's first write drops lease 1's, and lease 1 is refused from then on.
  v1::Observation loss = Observe(3, "loss");
  EXPECT_THAT(scorer_->Ingest(loss, second), IsOkAndHolds(true));
  EXPECT_EQ(*store_->CountObservations("a"), 1) << "lease 1's phi was dropped";
  EXPECT_THAT(scorer_->Ingest(phi, first),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("superseded by lease 2")));
  // Lease 2 given back: its observations go, and it takes no more.
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(const int64_t dropped, scorer_->EndLease("a", task, 2));
  EXPECT_EQ(dropped, 1);
  EXPECT_EQ(*store_->CountObservations("a"), 0);
  EXPECT_THAT(scorer_->Ingest(phi, second),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("has ended (given back)")));
  // Lease 3 completes: the Complete check counts only its own observations
  // and seals it; nothing more is stored under it.
  const ObservationWriter third{t, 3, "worker w-0"};
  MEMAUDIT_ASSERT_OK(scorer_->Ingest(phi, third));
  EXPECT_FALSE(scorer_->CheckTask("a", task, 3)->missing.empty());
  MEMAUDIT_ASSERT_OK(scorer_->Ingest(loss, third));
  EXPECT_FALSE(scorer_->CheckTask("a", task, 2)->missing.empty()) << "not lease 2's";
  EXPECT_TRUE(scorer_->CheckTask("a", task, 3)->missing.empty());
  EXPECT_THAT(scorer_->Ingest(loss, third),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("has ended (completed)")));
  // An end that arrives after a later lease, or for a sealed one, changes nothing.
  EXPECT_THAT(scorer_->EndLease("a", task, 3), IsOkAndHolds(0));
  EXPECT_THAT(scorer_->EndLease("a", task, 1), IsOkAndHolds(0));
  EXPECT_EQ(*store_->CountObservations("a"), 2);
}

// Results are final only once every lease is sealed: values written under a
// lease that may still lapse are never scored as the audit's answer.
TEST_F(ScorerTest, ResultsWaitForEveryLeaseToBeSealed) {
  std::vector<TaskRef> tasks;
  for (uint32_t r = 0; r < kModels; ++r) {
    for (const char* signal : {"phi", "loss"}) {
      v1::Observation o = Observe(r, signal);
      MEMAUDIT_ASSERT_OK_AND_ASSIGN(const TaskRef task, scorer_->TaskOf(o));
      MEMAUDIT_ASSERT_OK(scorer_->Ingest(o, {task.ToString(), 1, "worker w-0"}));
      if (tasks.empty() || !(tasks.back() == task)) tasks.push_back(task);
    }
  }
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("a"));
  EXPECT_FALSE(scorer_->GetResults("a")->complete()) << "every value is in, no lease sealed";
  for (size_t i = 0; i + 1 < tasks.size(); ++i) {
    EXPECT_TRUE(scorer_->CheckTask("a", tasks[i], 1)->missing.empty());
  }
  EXPECT_FALSE(scorer_->GetResults("a")->complete()) << "one lease still open";
  EXPECT_TRUE(scorer_->CheckTask("a", tasks.back(), 1)->missing.empty());
  EXPECT_TRUE(scorer_->GetResults("a")->complete()) << "the last seal scores it";
}

// Reuse draws only on runs confirmed under a sealed lease, of an audit scored
// complete and not cancelled, by a writer not revoked; each reused run says
// where it came from.
TEST_F(ScorerTest, ReuseDrawsOnlyOnConfirmedRunsAndRecordsTheirProvenance) {
  MEMAUDIT_ASSERT_OK(scorer_->ReuseStoredRuns("a"));  // records its content keys
  ASSERT_NO_FATAL_FAILURE(IngestAll());
  ASSERT_TRUE(scorer_->GetResults("a")->complete());
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("b", Spec()));
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(auto reused, scorer_->ReuseStoredRuns("b"));
  ASSERT_EQ(reused.size(), kModels);
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(const TaskRef task3, scorer_->TaskOf(Observe(3, "phi")));
  EXPECT_EQ(reused[3].from_audit_id(), "a");
  EXPECT_EQ(reused[3].from_run(), 3u);
  EXPECT_EQ(reused[3].from_task(), task3.ToString());
  EXPECT_EQ(reused[3].from_lease(), 1u);
  EXPECT_EQ(reused[3].from_worker(), "worker w-0");
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(const v1::AuditResults b, scorer_->GetResults("b"));
  EXPECT_TRUE(b.complete());
  ASSERT_EQ(b.reused_size(), static_cast<int>(kModels));
  EXPECT_EQ(b.reused(3).SerializeAsString(), reused[3].SerializeAsString());
  // A copy is never a source: a third audit draws on "a", not on "b".
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("c", Spec()));
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(auto again, scorer_->ReuseStoredRuns("c"));
  ASSERT_EQ(again.size(), kModels);
  EXPECT_EQ(again[0].from_audit_id(), "a");

  // Written but never sealed (its leases lapsed or it was cancelled midway):
  // not a source, although every value is stored.
  v1::AuditSpec other = Spec();
  other.set_seed(11);
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("open", other));
  MEMAUDIT_ASSERT_OK(scorer_->ReuseStoredRuns("open"));
  for (uint32_t r = 0; r < kModels; ++r) {
    for (const char* signal : {"phi", "loss"}) {
      v1::Observation o = Observe(r, signal);
      o.set_audit_id("open");
      MEMAUDIT_ASSERT_OK_AND_ASSIGN(const TaskRef task, scorer_->TaskOf(o));
      MEMAUDIT_ASSERT_OK(scorer_->Ingest(o, {task.ToString(), 1, "worker w-0"}));
    }
  }
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("open-2", other));
  EXPECT_TRUE(scorer_->ReuseStoredRuns("open-2")->empty());

  // Cancelled after it was scored: kept, never reused.
  EXPECT_THAT(scorer_->DropAudit("a", /*keep=*/true), IsOkAndHolds(false));
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("d", Spec()));
  // "b" and "c" hold copies only, which are never sources.
  EXPECT_TRUE(scorer_->ReuseStoredRuns("d")->empty());
}

TEST_F(ScorerTest, ARevokedWorkerIsRefusedAndItsRunsAreNeverReused) {
  MEMAUDIT_ASSERT_OK(scorer_->ReuseStoredRuns("a"));  // records its content keys
  ASSERT_NO_FATAL_FAILURE(IngestAll());
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("before", Spec()));
  EXPECT_EQ(scorer_->ReuseStoredRuns("before")->size(), kModels) << "reused until revoked";
  EXPECT_THAT(scorer_->RevokeWorker("w-0"), IsOkAndHolds(static_cast<int64_t>(kModels)));
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("b", Spec()));
  EXPECT_TRUE(scorer_->ReuseStoredRuns("b")->empty());
  v1::Observation o = Observe(0, "phi");
  o.set_audit_id("b");
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(const TaskRef task, scorer_->TaskOf(o));
  EXPECT_THAT(scorer_->Ingest(o, {task.ToString(), 1, "worker w-0"}),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("revoked")));
  EXPECT_THAT(scorer_->Ingest(o, {task.ToString(), 1, "worker w-1"}), IsOkAndHolds(true));
  // Recorded across restarts.
  ASSERT_NO_FATAL_FAILURE(Restart());
  EXPECT_THAT(scorer_->Ingest(o, {task.ToString(), 2, "worker w-0"}),
              StatusIs(absl::StatusCode::kPermissionDenied));
}

// A refused Submit's plan leaves nothing behind.
TEST_F(ScorerTest, DropAuditForgetsAnAuditWithNoObservations) {
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("refused", Spec()));
  MEMAUDIT_ASSERT_OK(scorer_->ReuseStoredRuns("refused"));
  EXPECT_THAT(scorer_->DropAudit("refused"), IsOkAndHolds(true));
  EXPECT_THAT(store_->GetAuditInfo("refused"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(*store_->ListAudits(), ::testing::Not(::testing::Contains("refused")));
  // A cancelled one is kept (its results stay readable), never reused.
  MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("cancelled", Spec()));
  EXPECT_THAT(scorer_->DropAudit("cancelled", /*keep=*/true), IsOkAndHolds(false));
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(const AuditInfo info, store_->GetAuditInfo("cancelled"));
  EXPECT_FALSE(info.reusable);
}

}  // namespace
}  // namespace memaudit::scorer
