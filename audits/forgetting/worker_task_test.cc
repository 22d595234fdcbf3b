#include "audits/forgetting/worker_task.h"

#include <string>
#include <vector>

#include "audits/forgetting/signals.h"
#include "common/base/seeding.h"
#include "common/testing/status_matchers.h"
#include "data/labeled_examples.h"
#include "gtest/gtest.h"

namespace memaudit::worker {
namespace {

// A fully specified (defaults written out) image forgetting task.
v1::Task ImageTask(const std::string& strategy, const std::string& inject_mode, uint32_t repeats,
                   const std::string& attack) {
  v1::Task task;
  task.set_audit_id("f1");
  task.set_role("forgetting_trial");
  task.set_index(1);
  v1::AuditSpec* spec = task.mutable_spec();
  spec->set_seed(5);
  spec->mutable_resources()->set_threads_per_task(1);
  v1::ForgettingAudit* f = spec->mutable_forgetting();
  f->mutable_dataset()->set_name("fashion_mnist");
  f->mutable_dataset()->set_pool_size(300);
  f->mutable_model()->set_architecture("logreg");
  v1::ForgettingTraining* t = f->mutable_training();
  t->set_optimizer("momentum");
  t->set_learning_rate(0.05);
  t->set_momentum(0.9);
  t->set_batch_size(32);
  t->set_steps_before_injection(70);
  t->set_steps_after_injection(90);
  f->set_strategy(strategy);
  f->set_repeats(repeats);
  f->set_inject_mode(inject_mode);
  f->mutable_injected()->set_size(45);
  f->mutable_injected()->set_selection("random");
  f->set_trials(2);
  f->set_paired(true);
  for (uint64_t p : {0, 10, 90}) f->add_eval_points(p);
  f->set_attack(attack);
  if (forgetting::LiraAttack(*f)) f->set_reference_models(3);
  f->set_fpr(0.1);
  return task;
}

ForgettingData Sets(uint32_t clean, uint32_t injected) {
  ForgettingData sets;
  for (uint32_t i = 0; i < clean; ++i) sets.clean_rows.push_back(i);
  for (uint32_t i = 0; i < injected; ++i) {
    sets.injected_rows.push_back(clean + i);
    sets.injected_labels.push_back(static_cast<uint8_t>(i % 10));
  }
  return sets;
}

// Each trial draws its own D, Dp and flips from (seed, trial), as a re-run
// with another seed would; trial 0 keeps the rows of DeriveSeed(seed,
// "forgetting/pool", 0), and a trial drawn again gets the same rows.
TEST(ForgettingTaskTest, EachTrialDrawsItsOwnCleanAndInjectedSets) {
  data::LabeledExamples data;
  data.count = 1000;
  data.classes = 10;
  for (uint32_t i = 0; i < data.count; ++i) data.labels.push_back(static_cast<uint8_t>(i % 10));
  v1::AuditSpec spec = ImageTask("inject", "k_steps", 1, "checkpoint_calibrated").spec();
  spec.mutable_forgetting()->mutable_injected()->set_flip_labels(true);
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(const ForgettingData first, ForgettingDataFor(spec, 0, data, {}));
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(const ForgettingData second, ForgettingDataFor(spec, 1, data, {}));
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(const ForgettingData again, ForgettingDataFor(spec, 1, data, {}));
  const std::vector<uint32_t> pool = AuditPool(DeriveSeed(5, "forgetting/pool", 0), 1000, 345);
  EXPECT_EQ(first.clean_rows, std::vector<uint32_t>(pool.begin(), pool.begin() + 300));
  EXPECT_EQ(first.injected_rows, std::vector<uint32_t>(pool.begin() + 300, pool.end()));
  EXPECT_NE(second.clean_rows, first.clean_rows);
  EXPECT_NE(second.injected_rows, first.injected_rows);
  EXPECT_EQ(again.clean_rows, second.clean_rows);
  EXPECT_EQ(again.injected_rows, second.injected_rows);
  EXPECT_EQ(again.injected_labels, second.injected_labels);
  for (size_t i = 0; i < second.injected_rows.size(); ++i) {
    EXPECT_NE(second.injected_labels[i], data.labels[second.injected_rows[i]]) << "flipped";
  }
}

TEST(ForgettingTaskTest, PlannerStepsEqualTheEngineRunsSteps) {
  // forgetting::TrialSteps (the planner's steps_total) restates the engine's
  // count without torch; they must agree for every strategy, injection mode
  // and attack.
  for (const char* strategy : {"inject", "poison"}) {
    for (const char* mode : {"k_steps", "dup_in_batch"}) {
      for (uint32_t repeats : {1u, 3u}) {
        if (std::string(strategy) == "poison" && (repeats != 1 || std::string(mode) != "k_steps")) {
          continue;
        }
        for (const char* attack :
             {"checkpoint_calibrated", "deterministic_replay", "lira_references", "lira_online"}) {
          const v1::Task task = ImageTask(strategy, mode, repeats, attack);
          auto run = ForgettingRunSpecFor(task, Sets(300, 45));
          MEMAUDIT_ASSERT_OK(run);
          const v1::ForgettingAudit& f = task.spec().forgetting();
          EXPECT_EQ(run->reference_models, forgetting::ReferenceModels(f)) << attack;
          EXPECT_EQ(run->in_reference_models, forgetting::InReferenceModels(f)) << attack;
          EXPECT_EQ(engine::ForgettingTrialSteps(*run), forgetting::TrialSteps(f))
              << strategy << " " << mode << " r=" << repeats << " " << attack;
        }
      }
    }
  }
  const v1::ForgettingAudit online =
      ImageTask("inject", "k_steps", 1, "lira_online").spec().forgetting();
  EXPECT_EQ(forgetting::InReferenceModels(online), 3u);
  // 70 + (1 + 3) x ceil(45 / 32) + (2 + 3 + 3) x 90.
  EXPECT_EQ(forgetting::TrialSteps(online), 70u + 4u * 2u + 8u * 90u);
}

TEST(ForgettingTaskTest, InReferencesAreSentAsTheirOwnSignals) {
  const v1::Task task = ImageTask("inject", "k_steps", 1, "lira_online");
  engine::ForgettingRunResult result;
  result.phi_checkpoint = result.loss_checkpoint = {0.5, 1.5};
  engine::ForgettingPoint& p = result.points.emplace_back();
  p.steps_since_injection = 10;
  p.phi_injected = p.phi_baseline = p.loss_injected = p.loss_baseline = {1, 2};
  p.phi_references = {{3, 4}, {5, 6}};
  p.phi_in_references = {{7, 8}, {9, 10}};
  const std::vector<v1::Observation> out = ForgettingObservations(task, Sets(0, 0), result);
  std::vector<std::string> names;
  for (const v1::Observation& o : out) {
    EXPECT_EQ(o.run(), 1u);
    names.push_back(o.point() + "/" + o.signal());
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{
                "checkpoint/phi_checkpoint", "checkpoint/loss_checkpoint", "10/phi_injected",
                "10/phi_baseline", "10/loss_injected", "10/loss_baseline", "10/phi_reference_0",
                "10/phi_reference_1", "10/phi_in_reference_0", "10/phi_in_reference_1"}));
  EXPECT_EQ(out.back().values(0), 9);
  EXPECT_EQ(out.back().values(1), 10);
}

}  // namespace
}  // namespace memaudit::worker
