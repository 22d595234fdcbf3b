// Forgetting audits (Inject and Poison, Fashion-MNIST, logistic regression;
// the standard, deterministic-replay and LiRA-reference attacks; Dp chosen
// at random or by hardness; canaries in a character-LM corpus) through real
// coordinator, scorer and worker processes, scaled down to seconds.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "cli/csv_export.h"
#include "cli/html_report.h"
#include "cli/render.h"
#include "common/base/seeding.h"
#include "common/messages/spec_yaml.h"
#include "common/testing/random_text.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "memaudit/v1/scorer.grpc.pb.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/prometheus_server.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ForgettingAuditTest : public ClusterTest {};

TEST_F(ForgettingAuditTest, CurveFillsInWhileTrainingRuns) {
  // One worker runs the trials one after the other, so the curve's points
  // become complete one by one while the second trial trains.
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  v1::AuditSpec spec = TinyForgettingSpec();
  spec.mutable_forgetting()->mutable_training()->set_steps_after_injection(3000);
  spec.mutable_forgetting()->clear_eval_points();
  for (uint64_t p : {0, 1500, 3000}) spec.mutable_forgetting()->add_eval_points(p);
  auto submitted = client_->Submit(spec);
  MEMAUDIT_ASSERT_OK(submitted);
  auto scorer = v1::ScorerService::NewStub(AdminChannel(cluster_->scorer_address()));
  grpc::ClientContext ctx;
  v1::GetResultsRequest req;
  req.set_audit_id(submitted->audit_id());
  auto reader = scorer->WatchResults(&ctx, req);
  int partial_points = 0;
  v1::AuditResults update, last;
  while (reader->Read(&update)) {
    if (!update.complete() && update.forgetting().curve_size() > 0) {
      partial_points = std::max(partial_points, update.forgetting().curve_size());
    }
    last = update;
  }
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_TRUE(last.complete());
  EXPECT_EQ(last.forgetting().curve_size(), 3);
  EXPECT_GE(partial_points, 1) << "the curve must be published before the audit ends";
  EXPECT_LT(partial_points, 3);
}

TEST_F(ForgettingAuditTest, InjectedExamplesAreDetectedThenForgotten) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  auto submitted = client_->Submit(TinyForgettingSpec());
  MEMAUDIT_ASSERT_OK(submitted);
  EXPECT_EQ(submitted->tasks(), 2u);
  v1::Audit audit = WaitForEnd(submitted->audit_id());
  ASSERT_EQ(audit.state(), v1::SUCCEEDED) << audit.error();
  auto results = client_->Report(submitted->audit_id());
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  EXPECT_EQ(results->kind(), v1::FORGETTING);
  const v1::ForgettingResults& f = results->forgetting();
  // The planner's step count is exact: 2 trials x (200 + 1 + 2 x 400).
  EXPECT_EQ(audit.steps_total(), 2u * f.training_steps());
  EXPECT_EQ(f.training_steps(), 200u + 1u + 800u);
  EXPECT_EQ(f.trials(), 2u);
  ASSERT_EQ(f.curve_size(), 4);
  const v1::ForgettingCurvePoint& first = f.curve(0);
  const v1::ForgettingCurvePoint& last = f.curve(3);
  EXPECT_EQ(first.steps_since_injection(), 0u);
  EXPECT_EQ(last.steps_since_injection(), 400u);
  EXPECT_GE(first.accuracy().mean(), 0.75);
  EXPECT_GT(first.accuracy().mean(), last.accuracy().mean());
  EXPECT_LE(first.accuracy().low(), first.accuracy().mean());

  // Gauges with bounded labels.
  const std::string metrics = HttpGet(cluster_->scorer_metrics_port(), "/metrics");
  EXPECT_TRUE(HasSeries(
      metrics, "memaudit_forgetting_mi_accuracy_ratio",
      {{"audit", submitted->audit_id()}, {"steps_since_injection", "0"}, {"strategy", "inject"}}))
      << metrics;
  EXPECT_THAT(metrics, HasSubstr("memaudit_forgetting_tpr_ratio{audit="));
  EXPECT_THAT(metrics, HasSubstr("memaudit_forgetting_epsilon_lower_bound{audit="));
  if (access(kPromtoolBinary, X_OK) == 0) {
    const PromtoolLint lint = RunPromtool(dir_, "forgetting-scorer", metrics);
    EXPECT_EQ(lint.exit_code, 0) << lint.output;
    EXPECT_EQ(lint.output, "");
  }

  // The CLI's renderings.
  const std::string table = cli::ResultsTable(*results);
  EXPECT_THAT(table, HasSubstr("forgetting curve"));
  const std::string html = cli::HtmlReport(audit, *results);
  EXPECT_THAT(html, HasSubstr("Forgetting curve"));
  const std::string csv_dir = dir_ + "/csv";
  MEMAUDIT_ASSERT_OK(cli::WriteResultsCsv(*results, csv_dir));
  const std::string csv = Slurp(csv_dir + "/forgetting_curve.csv");
  EXPECT_THAT(csv, HasSubstr(absl::StrCat(submitted->audit_id(), ",inject,")));
}

TEST_F(ForgettingAuditTest, PoisonedExamplesAreDetectedAfterRemovalThenForgotten) {
  // Alg. 1: the injected arm trains on D u Dp for T_I = 300 steps (about 9
  // epochs of 2050 rows, so each Dp example about 9 times), then on D only.
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  v1::AuditSpec spec = TinyForgettingSpec();
  spec.mutable_forgetting()->set_strategy("poison");
  spec.mutable_forgetting()->mutable_training()->set_steps_before_injection(300);
  Finished run;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &run));
  const v1::Audit& audit = run.audit;
  const v1::AuditResults* results = &run.results;
  const v1::ForgettingResults& f = results->forgetting();
  EXPECT_EQ(f.strategy(), "poison");
  // Both arms train T_I and 400 clean steps: 2 x 300 + 2 x 400.
  EXPECT_EQ(f.training_steps(), 2u * 300u + 2u * 400u);
  EXPECT_EQ(audit.steps_total(), 2u * f.training_steps());
  ASSERT_EQ(f.curve_size(), 4);
  // Right after removal the poisoned examples stand out; 400 clean steps
  // later much less so.
  const double first = f.curve(0).accuracy().mean();
  const double last = f.curve(3).accuracy().mean();
  EXPECT_GE(first, 0.85);
  EXPECT_LT(last, first - 0.1);
  EXPECT_GT(f.curve(0).tpr().mean(), f.curve(3).tpr().mean());
}

TEST_F(ForgettingAuditTest, ReplayAdversaryStillDetectsWhatTheStandardAttackForgot) {
  // Section 5.2: an adversary who knows the seeds and data order replays the
  // baseline world; bit-deterministic CPU training makes the baseline arm
  // exactly its replay, so any difference means the injected arm.
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  v1::AuditSpec spec = TinyForgettingSpec();
  spec.mutable_forgetting()->set_attack("deterministic_replay");
  Finished run;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &run));
  const v1::Audit& audit = run.audit;
  const v1::AuditResults* results = &run.results;
  const v1::ForgettingResults& f = results->forgetting();
  // The replay retrains the baseline's 400 post-injection steps.
  EXPECT_EQ(f.training_steps(), 200u + 1u + 3u * 400u);
  EXPECT_EQ(audit.steps_total(), 2u * f.training_steps());
  ASSERT_EQ(f.curve_size(), 4);
  ASSERT_EQ(f.standard_curve_size(), 4);
  EXPECT_EQ(f.standard_attack(), "checkpoint_calibrated");
  for (const v1::ForgettingCurvePoint& p : f.curve()) {
    EXPECT_EQ(p.replay_exact_trials(), 2u) << p.steps_since_injection();
    EXPECT_GT(p.accuracy().mean(), 0.95) << p.steps_since_injection();
  }
  const double replay_last = f.curve(3).accuracy().mean();
  const double standard_last = f.standard_curve(3).accuracy().mean();
  EXPECT_GT(replay_last, 0.95);
  EXPECT_LT(standard_last, replay_last - 0.1);
  EXPECT_LT(standard_last, f.standard_curve(0).accuracy().mean());

  // Both curves reach the table and the CSV.
  EXPECT_THAT(cli::ResultsTable(*results), HasSubstr("standard attack checkpoint_calibrated"));
  const std::string csv_dir = dir_ + "/csv";
  MEMAUDIT_ASSERT_OK(cli::WriteResultsCsv(*results, csv_dir));
  const std::string csv = Slurp(csv_dir + "/forgetting_curve.csv");
  EXPECT_THAT(csv, HasSubstr(",inject,deterministic_replay,400,"));
  EXPECT_THAT(csv, HasSubstr(",inject,checkpoint_calibrated,400,"));
}

TEST_F(ForgettingAuditTest, HardExamplesAreForgottenMoreSlowlyThanEasyOnes) {
  // The paper's Fig. 2c direction: Dp of held-out examples with the highest
  // loss under a reference model stays detectable longer than the lowest.
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  std::map<std::string, v1::AuditResults> by_selection;
  for (const char* selection : {"hard", "easy"}) {
    v1::AuditSpec spec = TinyForgettingSpec();
    spec.mutable_forgetting()->mutable_injected()->set_selection(selection);
    Finished run;
    ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &run));
    const v1::Audit& audit = run.audit;
    const v1::ForgettingResults& f = run.results.forgetting();
    // The reference model's 600 steps (T_I + steps after, by default) come
    // first in every trial: 600 + 200 + 1 + 2 x 400.
    EXPECT_EQ(f.training_steps(), 600u + 200u + 1u + 800u);
    EXPECT_EQ(audit.steps_total(), 2u * f.training_steps());
    EXPECT_EQ(f.selection(), selection);
    ASSERT_EQ(f.curve_size(), 4);
    by_selection[selection] = run.results;
  }
  const v1::ForgettingResults& hard = by_selection["hard"].forgetting();
  const v1::ForgettingResults& easy = by_selection["easy"].forgetting();
  // One reference model per (audit seed, trial): both audits scored the
  // same candidates alike, then took opposite ends.
  EXPECT_EQ(hard.candidate_loss_mean(), easy.candidate_loss_mean());
  EXPECT_GT(hard.selection_loss_mean(), 2 * hard.candidate_loss_mean());
  EXPECT_LT(easy.selection_loss_mean(), 0.1 * easy.candidate_loss_mean());
  // After the first few steps the hard set stays further from chance. (At
  // k = 0 the baseline is the checkpoint itself, a degenerate point.) Seed
  // 21: 0.07 and 0.04; over seeds 21-30 at least 0.04 at k = 50 and 0.015 at
  // k = 400, hard ahead at all 30 later points.
  for (int i : {2, 3}) {
    EXPECT_GT(hard.curve(i).accuracy().mean(), easy.curve(i).accuracy().mean() + 0.02)
        << hard.curve(i).steps_since_injection();
  }
  EXPECT_GT(hard.curve(3).auc().mean(), easy.curve(3).auc().mean());
  EXPECT_THAT(cli::ResultsTable(by_selection["hard"]), HasSubstr("Dp selection hard: mean loss"));
}

TEST_F(ForgettingAuditTest, LiraReferencesDetectLongerThanTheCheckpointAttack) {
  // Offline LiRA against baseline-arm forks with their own data order
  // calibrates each Dp example at the same step, not at the checkpoint.
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  v1::AuditSpec spec = TinyForgettingSpec();
  spec.mutable_forgetting()->set_attack("lira_references");
  Finished run;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &run));
  const v1::Audit& audit = run.audit;
  const v1::AuditResults* results = &run.results;
  const v1::ForgettingResults& f = results->forgetting();
  EXPECT_EQ(f.reference_models(), 4u);  // the default
  // Four references fork at the checkpoint: 200 + 1 + (2 + 4) x 400.
  EXPECT_EQ(f.training_steps(), 200u + 1u + 6u * 400u);
  EXPECT_EQ(audit.steps_total(), 2u * f.training_steps());
  EXPECT_EQ(results->models(), 4u) << "the adversary's references are not audited models";
  ASSERT_EQ(f.curve_size(), 4);
  ASSERT_EQ(f.standard_curve_size(), 4);
  EXPECT_EQ(f.standard_attack(), "checkpoint_calibrated");
  // At k = 0 every reference is the checkpoint: the same ranking.
  EXPECT_DOUBLE_EQ(f.curve(0).accuracy().mean(), f.standard_curve(0).accuracy().mean());
  // Later the references see the same drift as the arms. (Seed 21: margins
  // 0.06, 0.035 and 0.03; over seeds 21-30 LiRA led at 26 of 30 later
  // points, mean margins 0.048, 0.023 and 0.069, tied at one and trailed by
  // 0.005 at three.)
  for (int i : {1, 2, 3}) {
    EXPECT_GT(f.curve(i).accuracy().mean(), f.standard_curve(i).accuracy().mean() + 0.02)
        << f.curve(i).steps_since_injection();
  }
  EXPECT_THAT(cli::ResultsTable(*results), HasSubstr("4 LiRA reference models per trial"));
  EXPECT_THAT(cli::ResultsTable(*results), Not(HasSubstr("replay reproduced")));
  const std::string csv_dir = dir_ + "/csv";
  MEMAUDIT_ASSERT_OK(cli::WriteResultsCsv(*results, csv_dir));
  const std::string csv = Slurp(csv_dir + "/forgetting_curve.csv");
  EXPECT_THAT(csv, HasSubstr(",inject,lira_references,400,"));
  EXPECT_THAT(csv, HasSubstr(",inject,checkpoint_calibrated,400,"));
}

TEST_F(ForgettingAuditTest, OnlineLiraTrainsInAndOutReferencesAndReportsBothCurves) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  v1::AuditSpec spec = TinyForgettingSpec();
  spec.mutable_forgetting()->set_attack("lira_online");
  Finished run;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &run));
  const v1::ForgettingResults& f = run.results.forgetting();
  EXPECT_EQ(f.reference_models(), 4u);
  EXPECT_EQ(f.in_reference_models(), 4u);
  // 4 OUT and 4 IN references; the IN ones take the injection step too:
  // 200 + (1 + 4) x 1 + (2 + 2 x 4) x 400.
  EXPECT_EQ(f.training_steps(), 200u + 5u + 10u * 400u);
  EXPECT_EQ(run.audit.steps_total(), 2u * f.training_steps());
  ASSERT_EQ(f.curve_size(), 4);
  ASSERT_EQ(f.offline_curve_size(), 4);
  EXPECT_EQ(f.offline_attack(), "lira_references");
  // At k = 0 every IN reference is the injected arm itself: a perfect split.
  EXPECT_DOUBLE_EQ(f.curve(0).accuracy().mean(), 1.0);
  // Then the IN models drift with their own data order, like the OUT ones.
  EXPECT_LT(f.curve(3).accuracy().mean(), 1.0);
  EXPECT_GT(f.curve(1).accuracy().mean(), 0.5);
}

// Extractable memorization as a forgetting curve: held-out lines inserted
// 32 times into the canary batch are continued exactly from their prefix
// right after the injection, then less and less as training goes on; the
// controls and the baseline arm never.
TEST_F(ForgettingAuditTest, ExtractableSequencesAreExtractedThenForgotten) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  v1::AuditSpec spec;
  spec.set_name("tiny-extractable");
  spec.set_seed(21);
  v1::ForgettingAudit* f = spec.mutable_forgetting();
  v1::ForgettingCanaries* c = f->mutable_canaries();
  c->mutable_corpus()->set_max_chars(30000);
  c->mutable_model()->set_units(128);
  c->mutable_model()->set_embedding(32);
  c->mutable_canary()->set_prefix("pin ");
  c->mutable_canary()->set_digits(3);
  c->add_repeats(1);
  c->set_per_group(1);
  c->set_controls(1);
  c->set_window(32);
  v1::ExtractableSpec* x = c->mutable_extractable();
  x->set_prefix_chars(8);
  x->set_suffix_chars(12);
  x->add_duplicates(4);
  x->add_duplicates(64);
  x->set_sequences(8);
  f->mutable_training()->set_learning_rate(0.01);
  f->mutable_training()->set_batch_size(16);
  f->mutable_training()->set_steps_before_injection(100);
  f->mutable_training()->set_steps_after_injection(100);
  f->set_repeats(3);
  f->set_trials(2);
  for (uint64_t p : {0, 20, 100}) f->add_eval_points(p);
  Finished run;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &run));
  const v1::ForgettingResults& r = run.results.forgetting();
  // 1 canary window and 8 x (4 + 64) sequence windows: 35 batches of 16, 3
  // passes.
  EXPECT_EQ(r.training_steps(), 100u + 3u * 35u + 2u * 100u);
  EXPECT_EQ(run.audit.steps_done(), run.audit.steps_total());
  ASSERT_EQ(r.extractable_curves_size(), 3);
  const v1::ForgettingExtractableCurve& few = r.extractable_curves(0);
  const v1::ForgettingExtractableCurve& many = r.extractable_curves(1);
  const v1::ForgettingExtractableCurve& controls = r.extractable_curves(2);
  EXPECT_EQ(many.duplicates(), 64u);
  ASSERT_EQ(many.points_size(), 3);
  // (Seed 21: all 8 of the 64-times sequences at k = 0, none of the
  // 4-times ones; none 100 steps later.)
  const double many0 = many.points(0).fraction().mean();
  EXPECT_GE(many0, 0.75);
  EXPECT_LT(few.points(0).fraction().mean(), many0);
  EXPECT_LT(many.points(2).fraction().mean(), many0);
  EXPECT_EQ(many.points(0).baseline_fraction().mean(), 0.0) << "the baseline arm never saw them";
  for (const v1::ForgettingExtractablePoint& p : controls.points()) {
    EXPECT_EQ(p.fraction().mean(), 0.0);
  }
  EXPECT_THAT(cli::ResultsTable(run.results), HasSubstr("extractable memorization"));
  EXPECT_THAT(cli::HtmlReport(run.audit, run.results),
              HasSubstr("extractable memorization against steps since injection"));
  const std::string csv_dir = dir_ + "/extractable-csv";
  MEMAUDIT_ASSERT_OK(cli::WriteResultsCsv(run.results, csv_dir));
  EXPECT_THAT(Slurp(csv_dir + "/forgetting_extractable.csv"),
              HasSubstr(absl::StrCat(run.results.audit_id(), ",64,8,0,")));
  EXPECT_THAT(HttpGet(cluster_->scorer_metrics_port(), "/metrics"),
              HasSubstr("memaudit_forgetting_extractable_ratio{"));
  // The per-sequence outcomes the curves are means of.
  auto exported = client_->Export(run.audit_id);
  MEMAUDIT_ASSERT_OK(exported);
  std::map<std::string, const v1::ExportArray*> arrays;
  for (const v1::ExportArray& a : *exported) arrays[a.name()] = &a;
  ASSERT_TRUE(arrays.count("extracted_injected"));
  EXPECT_THAT(arrays.at("extracted_injected")->shape(), ::testing::ElementsAre(3, 2, 24));
  EXPECT_EQ(arrays.at("sequence_duplicates")->values(8), 64);
}

TEST_F(ForgettingAuditTest, CanariesInjectedMoreOftenAreExposedMoreThenFade) {
  // The paper's LM setup in miniature: canaries injected 1 or 32 times in one
  // canary batch, exposure against steps since injection.
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  v1::AuditSpec spec;
  spec.set_name("tiny-canaries");
  spec.set_seed(21);
  v1::ForgettingAudit* f = spec.mutable_forgetting();
  v1::ForgettingCanaries* c = f->mutable_canaries();
  c->mutable_corpus()->set_text(RandomLetterLines(30000));
  c->mutable_model()->set_units(32);
  c->mutable_model()->set_embedding(8);
  c->mutable_canary()->set_prefix("pin ");
  c->mutable_canary()->set_digits(3);
  c->add_repeats(1);
  c->add_repeats(32);
  c->set_per_group(2);
  c->set_controls(4);
  c->set_window(24);
  f->mutable_training()->set_learning_rate(0.01);
  f->mutable_training()->set_batch_size(16);
  f->mutable_training()->set_steps_before_injection(100);
  f->mutable_training()->set_steps_after_injection(400);
  f->set_repeats(3);
  f->set_trials(2);
  for (uint64_t p : {0, 50, 100, 200, 400}) f->add_eval_points(p);
  Finished run;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &run));
  const v1::Audit& audit = run.audit;
  const v1::AuditResults* results = &run.results;
  const v1::ForgettingResults& r = results->forgetting();
  // 2 x (1 + 32) = 66 canary windows: 5 batches of 16 per pass, 3 passes.
  EXPECT_EQ(r.training_steps(), 100u + 15u + 2u * 400u);
  EXPECT_EQ(audit.steps_total(), 2u * r.training_steps());
  EXPECT_EQ(r.curve_size(), 0);
  EXPECT_NEAR(r.log2_space(), 3 * std::log2(10.0), 1e-12);
  ASSERT_EQ(r.exposure_curves_size(), 3);
  const v1::ForgettingExposureCurve& once = r.exposure_curves(0);
  const v1::ForgettingExposureCurve& often = r.exposure_curves(1);
  const v1::ForgettingExposureCurve& controls = r.exposure_curves(2);
  EXPECT_EQ(often.repeats(), 32u);
  EXPECT_EQ(controls.repeats(), 0u);
  ASSERT_EQ(often.points_size(), 5);
  for (const auto* g : {&once, &often, &controls}) {
    for (const v1::ForgettingExposurePoint& p : g->points()) EXPECT_EQ(p.bounded(), 0u);
  }
  // Right after injection the 32-copy canaries stand far above chance and
  // above the single-copy ones; 400 steps later they have partly faded.
  // (Seed 21: 8.57 bits at k = 0 and 7.37 at 400 of log2|R| = 9.97; single
  // copies 2.45, controls 1.60.)
  const double often0 = often.points(0).exposure().mean();
  EXPECT_GT(often0, controls.points(0).exposure().mean() + 3);
  EXPECT_GT(often0, once.points(0).exposure().mean() + 2);
  EXPECT_LT(often.points(4).exposure().mean(), often0 - 0.5);
  // The baseline arm never saw them.
  EXPECT_LT(often.points(0).baseline_exposure().mean(), often0 - 3);

  EXPECT_THAT(cli::ResultsTable(*results), HasSubstr("LM canaries"));
  EXPECT_THAT(cli::HtmlReport(audit, *results), HasSubstr("canary exposure against steps"));
  const std::string csv_dir = dir_ + "/csv";
  MEMAUDIT_ASSERT_OK(cli::WriteResultsCsv(*results, csv_dir));
  const std::string csv = Slurp(csv_dir + "/forgetting_exposure.csv");
  EXPECT_THAT(csv, HasSubstr(absl::StrCat(run.audit_id, ",32,2,400,")));
}

TEST_F(ForgettingAuditTest, KilledWorkerMidTrialGivesTheSameCurve) {
  // Two trials on one worker: the curve fills in while trial 1 trains, so a
  // kill after the first partial curve lands mid-trial, after that trial has
  // streamed its early points.
  v1::AuditSpec spec = TinyForgettingSpec();
  spec.mutable_forgetting()->mutable_training()->set_steps_after_injection(4000);
  spec.mutable_forgetting()->clear_eval_points();
  for (uint64_t p : {0, 10, 50, 4000}) spec.mutable_forgetting()->add_eval_points(p);
  ASSERT_NO_FATAL_FAILURE(RunBaseline(spec));

  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1, /*lease_ttl_ms=*/1000, "-killed"));
  auto submitted = client_->Submit(spec);
  MEMAUDIT_ASSERT_OK(submitted);
  auto scorer = v1::ScorerService::NewStub(AdminChannel(cluster_->scorer_address()));
  grpc::ClientContext ctx;
  v1::GetResultsRequest req;
  req.set_audit_id(submitted->audit_id());
  auto reader = scorer->WatchResults(&ctx, req);
  int points_when_killed = 0;
  v1::AuditResults update;
  while (reader->Read(&update)) {
    const int points = update.forgetting().curve_size();
    if (points_when_killed == 0 && !update.complete() && points > 0) {
      cluster_->worker(0)->Signal(SIGKILL);
      points_when_killed = points;
      MEMAUDIT_EXPECT_OK(cluster_->AddWorker());
    }
  }
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_GT(points_when_killed, 0);
  EXPECT_LT(points_when_killed, 4) << "the kill must land while the trial still trains";
  EXPECT_EQ(cluster_->worker(0)->Wait(), 128 + SIGKILL);
  bool retried = false;
  MEMAUDIT_ASSERT_OK(client_->Watch(submitted->audit_id(), [&](const v1::AuditEvent& e) {
    // Re-queued without an attempt spent: a silent worker may have been preempted.
    if (e.type() == v1::TASK_RELEASED) {
      retried = true;
      EXPECT_THAT(e.message(), HasSubstr("lease expired"));
      EXPECT_THAT(e.message(), HasSubstr("attempt not counted"));
    }
    EXPECT_NE(e.type(), v1::TASK_RETRIED);
    return true;
  }));
  EXPECT_TRUE(retried) << "the dead worker's trial must be re-queued";
  auto audit = client_->Get(submitted->audit_id());
  ASSERT_EQ(audit->state(), v1::SUCCEEDED) << audit->error();
  auto results = client_->Report(submitted->audit_id());
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  ASSERT_EQ(results->forgetting().curve_size(), 4);
  EXPECT_EQ(Numbers(*results), Numbers(baseline_))
      << "a re-run trial must reproduce the undisturbed curve bit for bit";
}

// The examples themselves, through the services: Section 5's constructions.
v1::AuditSpec Example(const std::string& name) {
  auto spec = LoadSpecFile(absl::StrCat(MEMAUDIT_SOURCE_DIR, "/examples/", name));
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : v1::AuditSpec();
}

class ForgettingConstructionTest : public ForgettingAuditTest {
 protected:
  v1::ForgettingResults Run(const v1::AuditSpec& spec) {
    auto submitted = client_->Submit(spec);
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    if (!submitted.ok()) return {};
    EXPECT_EQ(submitted->tasks(), spec.forgetting().trials());
    const v1::Audit audit = WaitForEnd(submitted->audit_id());
    EXPECT_EQ(audit.state(), v1::SUCCEEDED) << audit.error();
    auto results = client_->Report(submitted->audit_id());
    EXPECT_TRUE(results.ok() && results->complete());
    return results.ok() ? results->forgetting() : v1::ForgettingResults();
  }
};

TEST_F(ForgettingConstructionTest, KMeansRemembersTheOutlierWithPerfectPrecision) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  const v1::ForgettingResults f = Run(Example("forgetting-kmeans.yaml"));
  EXPECT_EQ(f.construction(), "kmeans");
  EXPECT_EQ(f.trials(), 200u);
  EXPECT_EQ(f.curve_size(), 0);
  ASSERT_EQ(f.construction_curve_size(), 1);
  const v1::ForgettingConstructionPoint& p = f.construction_curve(0);
  EXPECT_GE(p.accuracy(), 0.9);
  EXPECT_EQ(p.false_positives(), 0u);
  EXPECT_EQ(p.precision(), 1.0);
  EXPECT_LT(p.accuracy_low(), p.accuracy());
  EXPECT_EQ(p.true_positives() + p.false_negatives(), 200u);

  v1::AuditResults r;
  r.set_kind(v1::FORGETTING);
  r.set_complete(true);
  *r.mutable_forgetting() = f;
  EXPECT_THAT(cli::ResultsTable(r), HasSubstr("forgetting construction kmeans"));
  MEMAUDIT_ASSERT_OK(cli::WriteResultsCsv(r, dir_ + "/csv"));
  EXPECT_THAT(Slurp(dir_ + "/csv/forgetting_construction.csv"), HasSubstr(",kmeans,0,"));
}

TEST_F(ForgettingConstructionTest, MeanEstimationForgetsUnderRandomSamplingOnlyAndReproduces) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  v1::AuditSpec spec = Example("forgetting-mean-estimation.yaml");
  ASSERT_EQ(spec.forgetting().construction().sampling(), "random");
  const v1::ForgettingResults random = Run(spec);
  ASSERT_GE(random.construction_curve_size(), 10);
  const v1::ForgettingConstructionPoint& first = random.construction_curve(0);
  const v1::ForgettingConstructionPoint& last =
      random.construction_curve(random.construction_curve_size() - 1);
  EXPECT_EQ(first.steps_since_injection(), 0u);
  EXPECT_EQ(first.accuracy(), 1.0);
  EXPECT_EQ(last.steps_since_injection(), 1000u);
  EXPECT_LE(last.accuracy(), 0.6);
  for (const v1::ForgettingConstructionPoint& p : random.construction_curve()) {
    // The closed form lies in the measured interval, widened to 99.9% by
    // eye: 3.3 standard errors of 400 guesses at most 0.083.
    EXPECT_NEAR(p.accuracy(), p.optimal_accuracy(), 0.083) << p.steps_since_injection();
    if (p.steps_since_injection() > 0) {
      EXPECT_LE(p.kl_divergence(), p.kl_bound());
    }
  }

  spec.mutable_forgetting()->mutable_construction()->set_sampling("deterministic");
  const v1::ForgettingResults deterministic = Run(spec);
  ASSERT_EQ(deterministic.construction_curve_size(), random.construction_curve_size());
  for (const v1::ForgettingConstructionPoint& p : deterministic.construction_curve()) {
    EXPECT_EQ(p.accuracy(), 1.0) << p.steps_since_injection();
    EXPECT_EQ(p.identical_trials(), 0u);
    EXPECT_EQ(p.optimal_accuracy(), 0);
  }
  // Same spec and seed: the same guesses, bit for bit.
  spec.mutable_forgetting()->mutable_construction()->set_sampling("random");
  const v1::ForgettingResults again = Run(spec);
  EXPECT_EQ(again.SerializeAsString(), random.SerializeAsString());
}

TEST_F(ForgettingAuditTest, BadSpecIsRefusedWithTheFieldNamed) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  v1::AuditSpec spec = TinyForgettingSpec();
  spec.mutable_forgetting()->set_attack("lira");
  spec.mutable_forgetting()->mutable_training()->set_batch_size(100000);
  spec.mutable_forgetting()->mutable_injected()->set_selection("hardest");
  spec.mutable_forgetting()->set_reference_models(4);
  auto refused = client_->Submit(spec);
  ASSERT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("forgetting.attack"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("forgetting.training.batch_size"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("forgetting.injected.selection"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("forgetting.reference_models"));
}

}  // namespace
}  // namespace memaudit::testing
