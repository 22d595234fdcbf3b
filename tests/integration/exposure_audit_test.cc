// An exposure audit (The Secret Sharer) through real coordinator, scorer and
// worker processes, scaled down to train in about a second.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "cli/csv_export.h"
#include "cli/html_report.h"
#include "cli/render.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/prometheus_server.h"
#include "tokenizers/sentencepiece_tokenizer.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;

class ExposureAuditTest : public ClusterTest {};

TEST_F(ExposureAuditTest, MostInsertedCanaryIsExposedAndExtracted) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  auto submitted = client_->Submit(TinyExposureSpec());
  MEMAUDIT_ASSERT_OK(submitted);
  EXPECT_EQ(submitted->tasks(), 1u);
  v1::Audit audit = WaitForEnd(submitted->audit_id());
  ASSERT_EQ(audit.state(), v1::SUCCEEDED) << audit.error();
  auto results = client_->Report(submitted->audit_id());
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  EXPECT_EQ(results->kind(), v1::EXPOSURE);
  const v1::ExposureResults& x = results->exposure();
  // The planner's step count is exact for an inline corpus.
  EXPECT_EQ(x.training_steps(), audit.steps_total());
  EXPECT_NEAR(x.log2_space(), 4 * std::log2(10.0), 1e-9);
  ASSERT_EQ(x.canaries_size(), 5);
  const v1::CanaryResult& heavy = x.canaries(1);
  EXPECT_EQ(heavy.repeats(), 40u);
  EXPECT_EQ(heavy.rank(), 1u);
  EXPECT_TRUE(heavy.exact());
  EXPECT_TRUE(heavy.sampled_lower_bound());
  EXPECT_GT(heavy.extrapolated_exposure(), x.log2_reference_samples());
  for (int i = 2; i < 5; ++i) {
    EXPECT_EQ(x.canaries(i).repeats(), 0u);
    EXPECT_GT(heavy.exposure(), x.canaries(i).exposure() + 5) << "control " << i;
  }
  EXPECT_GT(heavy.exposure(), x.control_median_exposure() + 5);
  EXPECT_TRUE(x.extraction_attempted());
  EXPECT_TRUE(x.extracted());
  EXPECT_EQ(x.extraction(), heavy.secret());
  ASSERT_EQ(x.by_repeats_size(), 3);
  EXPECT_LT(x.by_repeats(0).mean_exposure(), x.by_repeats(2).mean_exposure());

  // Gauges with bounded labels.
  const std::string metrics = HttpGet(cluster_->scorer_metrics_port(), "/metrics");
  EXPECT_TRUE(HasSeries(metrics, "memaudit_exposure_log2",
                        {{"audit", submitted->audit_id()},
                         {"estimator", "exact"},
                         {"insertions", "40"},
                         {"variant", "base"}}))
      << metrics;
  EXPECT_THAT(metrics, HasSubstr("memaudit_exposure_space_log2{audit="));
  EXPECT_THAT(metrics, ::testing::Not(HasSubstr(heavy.secret() + "\"")));
  if (access(kPromtoolBinary, X_OK) == 0) {
    const PromtoolLint lint = RunPromtool(dir_, "exposure-scorer", metrics);
    EXPECT_EQ(lint.exit_code, 0) << lint.output;
    EXPECT_EQ(lint.output, "");
  }

  // The CLI's renderings.
  const std::string table = cli::ResultsTable(*results);
  EXPECT_THAT(table, HasSubstr("exposure vs insertions"));
  EXPECT_THAT(table, HasSubstr("SUCCESS"));
  const std::string html = cli::HtmlReport(audit, *results);
  EXPECT_THAT(html, HasSubstr("<polyline class=\"curve\""));
  EXPECT_THAT(html, HasSubstr("class=\"ceiling\""));
  const std::string csv_dir = dir_ + "/csv";
  MEMAUDIT_ASSERT_OK(cli::WriteResultsCsv(*results, csv_dir));
  const std::string csv = Slurp(csv_dir + "/canaries.csv");
  EXPECT_THAT(csv, HasSubstr(absl::StrCat(",", heavy.secret(), ",40,")));

  // The same audit with an evaluation point per epoch: the canary model is
  // measured after each of its 6 epochs, streamed to the scorer; training is
  // unchanged, so the final numbers are the run's above.
  v1::AuditSpec curve_spec = TinyExposureSpec();
  curve_spec.mutable_exposure()->set_eval_every_epoch(true);
  auto curve_submitted = client_->Submit(curve_spec);
  MEMAUDIT_ASSERT_OK(curve_submitted);
  v1::Audit curve_audit = WaitForEnd(curve_submitted->audit_id());
  ASSERT_EQ(curve_audit.state(), v1::SUCCEEDED) << curve_audit.error();
  EXPECT_EQ(curve_audit.steps_total(), audit.steps_total());
  auto curve_results = client_->Report(curve_submitted->audit_id());
  MEMAUDIT_ASSERT_OK(curve_results);
  const v1::ExposureResults& cx = curve_results->exposure();
  ASSERT_EQ(cx.canaries_size(), x.canaries_size());
  for (int i = 0; i < x.canaries_size(); ++i) {
    EXPECT_EQ(cx.canaries(i).px_bits(), x.canaries(i).px_bits()) << "canary " << i;
    EXPECT_EQ(cx.canaries(i).rank(), x.canaries(i).rank()) << "canary " << i;
  }
  EXPECT_EQ(cx.final_loss(), x.final_loss());
  ASSERT_EQ(cx.curve_size(), 6);
  const uint64_t per_epoch = x.training_steps() / 6;
  for (int p = 0; p < 6; ++p) EXPECT_EQ(cx.curve(p).step(), (p + 1) * per_epoch);
  // The x40 canary (index 1) is at least as exposed at the end as after
  // epoch 1; the last point is the final model.
  EXPECT_GE(cx.curve(5).exposure(1), cx.curve(0).exposure(1));
  EXPECT_EQ(cx.curve(5).exposure(1), heavy.exposure());
  const std::string curve_metrics = HttpGet(cluster_->scorer_metrics_port(), "/metrics");
  EXPECT_TRUE(HasSeries(curve_metrics, "memaudit_exposure_curve_log2",
                        {{"audit", curve_submitted->audit_id()},
                         {"insertions", "40"},
                         {"step", absl::StrCat(per_epoch)},
                         {"variant", "base"}}))
      << curve_metrics;
  if (access(kPromtoolBinary, X_OK) == 0) {
    const PromtoolLint lint = RunPromtool(dir_, "exposure-curve-scorer", curve_metrics);
    EXPECT_EQ(lint.exit_code, 0) << lint.output;
    EXPECT_EQ(lint.output, "");
  }
  EXPECT_THAT(cli::ResultsTable(*curve_results), HasSubstr("exposure during training"));
  EXPECT_THAT(cli::HtmlReport(curve_audit, *curve_results), HasSubstr("exposure-curve"));
  // The curve's CSV: a header and one row per point and canary.
  const std::string curve_dir = dir_ + "/curve-csv";
  MEMAUDIT_ASSERT_OK(cli::WriteResultsCsv(*curve_results, curve_dir));
  const std::string curve_csv = Slurp(curve_dir + "/exposure_curve.csv");
  EXPECT_EQ(std::count(curve_csv.begin(), curve_csv.end(), '\n'), 1 + 6 * x.canaries_size());
  EXPECT_THAT(curve_csv, HasSubstr(absl::StrCat(",base,", per_epoch, ",", heavy.secret(), ",40,")));
  EXPECT_FALSE(std::ifstream(csv_dir + "/exposure_curve.csv").good()) << "no points, no curve file";
}

// Two recipes (the base and a narrower model at batch 8, trained for fewer
// epochs at a higher learning rate), each with a canary-free baseline model
// and one reference model: 6 models.
v1::AuditSpec TinySweepSpec() {
  v1::AuditSpec spec = TinyExposureSpec();
  spec.set_name("tiny-exposure-sweep");
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->add_sweep();
  v1::ExposureVariant* narrow = e->add_sweep();
  narrow->set_batch_size(8);
  narrow->set_units(32);
  narrow->set_epochs(4);
  narrow->set_learning_rate(0.02);
  e->set_baseline(true);
  e->set_reference_models(1);
  return spec;
}

// The tiny exposure audit with 4 held-out lines per entry of `duplicates`
// (and 4 never inserted), 12-character prompts and continuations, 20 epochs.
v1::AuditSpec TinyExtractableSpec(const std::vector<uint32_t>& duplicates) {
  v1::AuditSpec spec = TinyExposureSpec();
  v1::ExtractableSpec* x = spec.mutable_exposure()->mutable_extractable();
  x->set_prefix_chars(12);
  x->set_suffix_chars(12);
  for (uint32_t d : duplicates) x->add_duplicates(d);
  x->set_sequences(4);
  spec.mutable_exposure()->mutable_training()->set_epochs(20);
  return spec;
}

// Extractable memorization through the services: held-out lines inserted 1
// and 40 times and never; the planner's steps are the engine's (the text
// less the held-out lines, plus the insertions), the often-inserted ones are
// extracted and the controls are not, and the table, CSV and gauge show it.
TEST_F(ExposureAuditTest, ExtractableMemorizationGrowsWithInsertions) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  const v1::AuditSpec spec = TinyExtractableSpec({1, 40});
  auto submitted = client_->Submit(spec);
  MEMAUDIT_ASSERT_OK(submitted);
  v1::Audit audit = WaitForEnd(submitted->audit_id());
  ASSERT_EQ(audit.state(), v1::SUCCEEDED) << audit.error();
  auto results = client_->Report(submitted->audit_id());
  MEMAUDIT_ASSERT_OK(results);
  const v1::ExposureResults& r = results->exposure();
  EXPECT_EQ(r.training_steps(), audit.steps_total());
  ASSERT_EQ(r.extractable_size(), 3);
  EXPECT_EQ(r.extractable(0).duplicates(), 1u);
  EXPECT_EQ(r.extractable(1).duplicates(), 40u);
  EXPECT_EQ(r.extractable(2).duplicates(), 0u);
  for (const v1::ExtractableGroup& g : r.extractable()) EXPECT_EQ(g.sequences(), 4u);
  // Measured: x40 4 of 4 (12 characters), x1 and the controls none (about 2).
  EXPECT_GE(r.extractable(1).extracted(), 3u);
  EXPECT_EQ(r.extractable(2).extracted(), 0u);
  EXPECT_GT(r.extractable(1).mean_matched_chars(), r.extractable(2).mean_matched_chars());
  EXPECT_LE(r.extractable(1).fraction_low(), r.extractable(1).fraction());
  // The reference-free attacks tell the sequences inserted 40 times from the
  // never-inserted ones (each scored, members above non-members).
  ASSERT_EQ(r.extractable(1).membership_size(), 4);
  for (const v1::SequenceMembership& m : r.extractable(1).membership()) {
    EXPECT_GE(m.auc(), 0.9) << m.attack();
    EXPECT_LE(m.auc_low(), m.auc()) << m.attack();
  }
  EXPECT_EQ(r.extractable(2).membership_size(), 0) << "the controls";
  EXPECT_THAT(cli::ResultsTable(*results), HasSubstr("extractable memorization"));
  const std::string html = cli::HtmlReport(audit, *results);
  EXPECT_THAT(html, HasSubstr("extractable memorization against insertions")) << "the plot";
  EXPECT_THAT(html, HasSubstr("<th>min_k_plus AUC</th>"));
  const std::string csv_dir = dir_ + "/extractable-csv";
  MEMAUDIT_ASSERT_OK(cli::WriteResultsCsv(*results, csv_dir));
  EXPECT_THAT(Slurp(csv_dir + "/extractable.csv"),
              HasSubstr(absl::StrCat(submitted->audit_id(), ",base,40,4,")));
  EXPECT_THAT(Slurp(csv_dir + "/extractable_membership.csv"),
              HasSubstr(absl::StrCat(submitted->audit_id(), ",base,40,min_k_plus,")));
  EXPECT_TRUE(HasSeries(HttpGet(cluster_->scorer_metrics_port(), "/metrics"),
                        "memaudit_exposure_extractable_ratio",
                        {{"audit", submitted->audit_id()}, {"duplicates", "40"}}));
}

// With two reference models, each scores every held-out sequence too and
// the reference attacks calibrate the canary model's loss by theirs: both
// tell the 40-times sequences from the never-inserted ones.
TEST_F(ExposureAuditTest, ReferenceModelsScoreTheHeldOutSequencesForTheReferenceAttacks) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  v1::AuditSpec spec = TinyExtractableSpec({40});
  spec.mutable_exposure()->set_reference_models(2);
  Finished run;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &run));
  const v1::ExposureResults& r = run.results.exposure();
  ASSERT_EQ(r.extractable_size(), 2);
  std::map<std::string, const v1::SequenceMembership*> by_attack;
  for (const v1::SequenceMembership& m : r.extractable(0).membership()) by_attack[m.attack()] = &m;
  ASSERT_EQ(by_attack.size(), 6u);
  EXPECT_GE(by_attack.at("reference")->auc(), 0.9);
  EXPECT_GE(by_attack.at("lira_offline")->auc(), 0.9);
  EXPECT_LT(by_attack.at("reference")->auc_low(), by_attack.at("reference")->auc());
  EXPECT_THAT(cli::HtmlReport(run.audit, run.results), HasSubstr("<th>lira_offline AUC</th>"));
}

// The tiny exposure audit with a transformer of 2 blocks of width 32 (4
// heads, feed-forward 64), 20 epochs at learning rate 0.003.
v1::AuditSpec TinyTransformerExposureSpec() {
  v1::AuditSpec spec = TinyExposureSpec();
  v1::LanguageModelSpec* m = spec.mutable_exposure()->mutable_model();
  m->set_architecture("transformer");
  m->set_layers(2);
  m->set_embedding(32);
  m->set_heads(4);
  m->set_units(64);
  spec.mutable_exposure()->mutable_training()->set_learning_rate(0.003);
  spec.mutable_exposure()->mutable_training()->set_epochs(20);
  return spec;
}

// The built-in transformer through the services: the spec's heads reach the
// worker, the heavily inserted canary is exposed far above the controls and
// extracted, and a re-run gives the same numbers.
TEST_F(ExposureAuditTest, ATransformerLanguageModelIsAuditedEndToEnd) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  const v1::AuditSpec spec = TinyTransformerExposureSpec();
  std::vector<v1::ExposureResults> runs;
  for (int run = 0; run < 2; ++run) {
    auto submitted = client_->Submit(spec);
    MEMAUDIT_ASSERT_OK(submitted);
    v1::Audit audit = WaitForEnd(submitted->audit_id());
    ASSERT_EQ(audit.state(), v1::SUCCEEDED) << audit.error();
    auto results = client_->Report(submitted->audit_id());
    MEMAUDIT_ASSERT_OK(results);
    EXPECT_EQ(results->spec().exposure().model().heads(), 4u);
    runs.push_back(results->exposure());
  }
  const v1::ExposureResults& x = runs[0];
  ASSERT_EQ(x.canaries_size(), 5);
  const v1::CanaryResult& heavy = x.canaries(1);
  EXPECT_EQ(heavy.repeats(), 40u);
  EXPECT_TRUE(heavy.exact());
  EXPECT_GT(heavy.exposure(), x.control_median_exposure() + 5);
  EXPECT_GT(heavy.exposure(), x.canaries(0).exposure() + 4) << "inserted once";
  EXPECT_TRUE(x.extracted());
  EXPECT_EQ(x.extraction(), heavy.secret());
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(runs[1].canaries(i).px_bits(), x.canaries(i).px_bits()) << i;
  }
}

// Subword tokens through the services: the worker trains a SentencePiece
// tokenizer on the corpus and the transformer learns its ids; the 40-times
// canary is exposed and extracted, and a re-run gives the same numbers. The
// same tokenizer given as a file (its hash recorded at Submit) gives the
// same numbers bit for bit; a file outside the data roots is refused.
TEST_F(ExposureAuditTest, SubwordTokensFromATrainedOrAGivenSentencePieceModel) {
  const std::string model_dir = FreshTestDir("tokenizer");
  ASSERT_EQ(Shell(absl::StrCat("mkdir -p ", model_dir)).exit_code, 0);
  data_roots_ = {model_dir};
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  v1::AuditSpec spec = TinyTransformerExposureSpec();
  v1::TokenizerSpec* tokens = spec.mutable_exposure()->mutable_model()->mutable_tokenizer();
  tokens->set_kind("sentencepiece");
  tokens->set_vocab_size(100);
  spec.mutable_exposure()->mutable_training()->set_window(24);
  Finished first, second, third;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &first));
  const v1::AuditResults* trained = &first.results;
  EXPECT_EQ(trained->spec().exposure().model().tokenizer().model_type(), "bpe");
  const v1::ExposureResults& x = trained->exposure();
  ASSERT_EQ(x.canaries_size(), 5);
  const v1::CanaryResult& heavy = x.canaries(1);
  EXPECT_EQ(heavy.repeats(), 40u);
  EXPECT_TRUE(heavy.exact());
  EXPECT_GT(heavy.exposure(), x.control_median_exposure() + 5);
  EXPECT_TRUE(x.extracted());
  EXPECT_EQ(x.extraction(), heavy.secret());
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &second));
  const v1::AuditResults* again = &second.results;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(again->exposure().canaries(i).px_bits(), x.canaries(i).px_bits()) << i;
  }

  // The tokenizer the worker trained, as a team would give it.
  tokenizers::SentencePieceTraining options;
  options.vocab_size = 100;
  options.required_chars = spec.exposure().canary().prefix() + "0123456789";
  auto tokenizer =
      tokenizers::SentencePieceTokenizer::Train(spec.exposure().corpus().text(), options);
  MEMAUDIT_ASSERT_OK(tokenizer);
  const std::string file = model_dir + "/fortunes.model";
  std::ofstream(file, std::ios::binary) << (*tokenizer)->serialized();
  v1::AuditSpec given = spec;
  v1::TokenizerSpec* t = given.mutable_exposure()->mutable_model()->mutable_tokenizer();
  t->clear_vocab_size();
  t->set_model_path(file);
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(given, &third));
  const v1::AuditResults* from_file = &third.results;
  EXPECT_THAT(from_file->spec().exposure().model().tokenizer().content_hash(),
              ::testing::StartsWith("sha256:"));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(from_file->exposure().canaries(i).px_bits(), x.canaries(i).px_bits()) << i;
  }
  t->set_model_path("/etc/hostname");
  auto refused = client_->Submit(given);
  EXPECT_THAT(refused.status().message(), HasSubstr("exposure.model.tokenizer.model_path"));
}

// A team's own GPT over subword tokens, trained elsewhere (an exposure
// target): examples/models/export_gpt.py writes it over a SentencePiece
// model's ids, and the services rank its given secrets through that model
// file, nothing trained, both files' hashes recorded.
TEST_F(ExposureAuditTest, AGptOverSubwordTokensIsMeasuredAsATarget) {
  const std::string model_dir = FreshTestDir("gpt");
  ASSERT_EQ(Shell(absl::StrCat("mkdir -p ", model_dir)).exit_code, 0);
  v1::AuditSpec spec = TinyExposureSpec();
  v1::ExposureAudit* e = spec.mutable_exposure();
  tokenizers::SentencePieceTraining options;
  options.vocab_size = 100;
  options.required_chars = e->canary().prefix() + "0123456789";
  auto tokenizer = tokenizers::SentencePieceTokenizer::Train(e->corpus().text(), options);
  MEMAUDIT_ASSERT_OK(tokenizer);
  const std::string tokenizer_file = model_dir + "/t.model";
  std::ofstream(tokenizer_file, std::ios::binary) << (*tokenizer)->serialized();
  const std::string gpt = model_dir + "/gpt.pt";
  const Output exported =
      Shell(absl::StrCat("/usr/bin/python3 ", MEMAUDIT_SOURCE_DIR,
                         "/examples/models/export_gpt.py ", gpt, " --tokens ", (*tokenizer)->size(),
                         " --layers 1 --width 32 --heads 2 --ffn 64 --context 64"));
  if (exported.exit_code != 0) GTEST_SKIP() << "python3-torch: " << exported.text;
  data_roots_ = {model_dir};
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  e->mutable_model()->mutable_tokenizer()->set_kind("sentencepiece");
  e->mutable_model()->mutable_tokenizer()->set_model_path(tokenizer_file);
  e->set_estimator("exact");
  e->clear_reference_samples();
  e->mutable_target()->set_torchscript_path(gpt);
  e->mutable_target()->add_secrets("4821");
  e->mutable_target()->add_secrets("1907");
  Finished run;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &run));
  const v1::AuditResults* results = &run.results;
  EXPECT_THAT(results->spec().exposure().target().content_hash(), ::testing::StartsWith("sha256:"));
  EXPECT_THAT(results->spec().exposure().model().tokenizer().content_hash(),
              ::testing::StartsWith("sha256:"));
  const v1::ExposureResults& x = results->exposure();
  EXPECT_EQ(x.training_steps(), 0u);
  ASSERT_EQ(x.canaries_size(), 5);
  EXPECT_EQ(x.canaries(0).secret(), "4821");
  for (const v1::CanaryResult& c : x.canaries()) EXPECT_TRUE(c.exact()) << c.secret();
}

// A team's own language model: a character GRU exported as TorchScript by
// examples/models/export_char_lm.py (Debian's python3-torch), its vocabulary
// the corpus's characters plus the canary prefix's, audited end to end.
TEST_F(ExposureAuditTest, TorchScriptGruExportedByTheExampleScript) {
  const std::string model_dir = FreshTestDir("model");
  v1::AuditSpec spec = TinyExposureSpec();
  v1::ExposureAudit* e = spec.mutable_exposure();
  const std::string corpus = model_dir + "/corpus.txt";
  const std::string model = model_dir + "/char_gru.pt";
  ASSERT_EQ(Shell(absl::StrCat("mkdir -p ", model_dir)).exit_code, 0);
  std::ofstream(corpus) << e->corpus().text();
  const std::string export_cmd =
      absl::StrCat("/usr/bin/python3 ", MEMAUDIT_SOURCE_DIR, "/examples/models/export_char_lm.py ",
                   model, " --vocabulary-from ", corpus, " --extra-chars '", e->canary().prefix(),
                   "' --cell gru --units 48 --embedding 16 --seed 1");
  const Output exported = Shell(export_cmd);
  if (exported.exit_code != 0) GTEST_SKIP() << "python3-torch: " << exported.text;
  e->mutable_model()->set_architecture("torchscript");
  e->mutable_model()->set_torchscript_path(model);
  data_roots_ = {model_dir};  // the services may read the module there
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  Finished done;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &done));
  const v1::ExposureResults& x = done.results.exposure();
  EXPECT_EQ(x.training_steps(), done.audit.steps_total());
  ASSERT_EQ(x.canaries_size(), 5);  // 2 inserted, 3 controls
  for (const v1::CanaryResult& c : x.canaries()) {
    EXPECT_TRUE(c.exact()) << c.secret();
    EXPECT_GE(c.rank(), 1u);
    EXPECT_NEAR(c.exposure(), x.log2_space() - std::log2(static_cast<double>(c.rank())), 1e-9);
  }
  // Inserted 40 times, its canary stands out as with the built-in LSTM.
  EXPECT_GT(x.canaries(1).exposure(), x.control_median_exposure() + 3);
  EXPECT_TRUE(x.extraction_attempted());

  // lstm/gru sizes do not apply: a sweep over units is refused, naming it.
  v1::AuditSpec sweep = spec;
  sweep.mutable_exposure()->add_sweep()->set_units(64);
  auto refused = client_->Submit(sweep);
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("exposure.sweep[0].units: cannot vary")));
}

TEST_F(ExposureAuditTest, SweepWithBaselineAndReferenceModels) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  auto submitted = client_->Submit(TinySweepSpec());
  MEMAUDIT_ASSERT_OK(submitted);
  EXPECT_EQ(submitted->tasks(), 6u);
  v1::Audit audit = WaitForEnd(submitted->audit_id());
  ASSERT_EQ(audit.state(), v1::SUCCEEDED) << audit.error();
  auto results = client_->Report(submitted->audit_id());
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  EXPECT_EQ(results->models(), 6u);
  const v1::ExposureResults& x = results->exposure();
  ASSERT_EQ(x.variants_size(), 2);
  EXPECT_EQ(x.variants(0).name(), "base");
  EXPECT_EQ(x.variants(1).name(), "batch=8 units=32 epochs=4 lr=0.02");
  EXPECT_EQ(x.variants(1).batch_size(), 8u);
  EXPECT_EQ(x.variants(1).units(), 32u);
  EXPECT_EQ(x.variants(0).epochs(), 6u);
  EXPECT_DOUBLE_EQ(x.variants(0).learning_rate(), 0.01);
  EXPECT_EQ(x.variants(1).epochs(), 4u);
  EXPECT_DOUBLE_EQ(x.variants(1).learning_rate(), 0.02);
  // Whole epochs of each variant's own batches.
  EXPECT_EQ(x.variants(0).results().training_steps() % 6, 0u);
  EXPECT_EQ(x.variants(1).results().training_steps() % 4, 0u);
  // Planned steps: both canary models, both baselines, both references.
  uint64_t steps = 0;
  for (const v1::ExposureVariantResult& v : x.variants()) steps += v.results().training_steps();
  EXPECT_LT(steps, audit.steps_total());
  for (const v1::ExposureVariantResult& v : x.variants()) {
    const v1::ExposureResults& r = v.results();
    SCOPED_TRACE(v.name());
    EXPECT_TRUE(r.baseline_model());
    EXPECT_EQ(r.reference_models(), 1u);
    ASSERT_EQ(r.canaries_size(), 5);
    EXPECT_EQ(r.canaries(1).secret(), x.canaries(1).secret()) << "one set of canaries per audit";
    const v1::CanaryResult& heavy = r.canaries(1);
    EXPECT_EQ(heavy.rank(), 1u);
    // Without the canaries in the corpus the same secret is unremarkable, so
    // its exposure is memorization, not the corpus or format.
    EXPECT_LT(heavy.baseline_exposure(), heavy.exposure() - 5);
    EXPECT_GT(heavy.baseline_rank(), 1u);
    // Calibrated: at the top of S calibrated the same way, far above controls.
    EXPECT_TRUE(heavy.calibrated_lower_bound());
    EXPECT_GT(heavy.calibrated_exposure(), r.control_median_calibrated_exposure() + 3);
    EXPECT_GT(r.baseline_final_loss(), 0);
    // The baseline under the sampled and extrapolated estimators too, against
    // its own Px of the same S: the unseen secret is unremarkable there.
    EXPECT_LT(heavy.baseline_sampled_exposure(), heavy.sampled_exposure() - 2);
    EXPECT_FALSE(heavy.baseline_sampled_lower_bound());
    EXPECT_LT(heavy.baseline_extrapolated_exposure(), heavy.extrapolated_exposure() - 5);
    EXPECT_GT(r.baseline_fit_scale(), 0);
    // Exact calibration (on by default: |R| = 10^4, 4 models): the calibrated
    // x40 canary ranked among all 10^4 calibrated candidates, far above the
    // controls, and not above log2|R|.
    EXPECT_TRUE(r.calibrated_exact());
    EXPECT_GE(heavy.calibrated_rank(), 1u);
    EXPECT_LE(heavy.calibrated_exact_exposure(), r.log2_space() + 1e-9);
    EXPECT_GT(heavy.calibrated_exact_exposure(), r.control_median_calibrated_exact_exposure() + 5);
    for (const v1::CanaryResult& c : r.canaries()) {
      EXPECT_NEAR(c.calibrated_exact_exposure(),
                  r.log2_space() - std::log2(static_cast<double>(c.calibrated_rank())), 1e-9);
    }
  }
  // The top level is the first variant.
  v1::ExposureResults first = x;
  first.clear_variants();
  EXPECT_EQ(first.SerializeAsString(), x.variants(0).results().SerializeAsString());

  const std::string metrics = HttpGet(cluster_->scorer_metrics_port(), "/metrics");
  EXPECT_TRUE(HasSeries(metrics, "memaudit_exposure_log2",
                        {{"audit", submitted->audit_id()},
                         {"estimator", "baseline"},
                         {"insertions", "40"},
                         {"variant", "batch=8 units=32 epochs=4 lr=0.02"}}))
      << metrics;
  for (const char* estimator : {"baseline_sampled", "baseline_extrapolated", "calibrated_exact"}) {
    EXPECT_TRUE(HasSeries(metrics, "memaudit_exposure_log2",
                          {{"audit", submitted->audit_id()},
                           {"estimator", estimator},
                           {"insertions", "0"},
                           {"variant", "base"}}))
        << estimator;
  }
  if (access(kPromtoolBinary, X_OK) == 0) {
    const PromtoolLint lint = RunPromtool(dir_, "exposure-sweep-scorer", metrics);
    EXPECT_EQ(lint.exit_code, 0) << lint.output;
    EXPECT_EQ(lint.output, "");
  }
  const std::string table = cli::ResultsTable(*results);
  EXPECT_THAT(table, HasSubstr("variant \"batch=8 units=32 epochs=4 lr=0.02\" (batch 8, units 32, "
                               "dropout 0, epochs 4, lr 0.02)"));
  EXPECT_THAT(table, HasSubstr("b.sampled"));
  EXPECT_THAT(table, HasSubstr("cal.exact"));
  EXPECT_THAT(table, HasSubstr("sweep: mean exact exposure by insertions"));
  EXPECT_THAT(table, HasSubstr("baseline model (no canaries)"));
  const std::string html = cli::HtmlReport(audit, *results);
  EXPECT_THAT(html, HasSubstr("by sweep variant"));
  EXPECT_THAT(html, HasSubstr("<polyline class=\"curve baseline\""));
  const std::string csv_dir = dir_ + "/csv";
  MEMAUDIT_ASSERT_OK(cli::WriteResultsCsv(*results, csv_dir));
  const std::string csv = Slurp(csv_dir + "/exposure_variants.csv");
  EXPECT_THAT(csv, HasSubstr(",batch=8 units=32 epochs=4 lr=0.02,8,32,"));
  EXPECT_THAT(csv, HasSubstr(",4,0.02\n"));  // epochs, learning_rate last
}

TEST_F(ExposureAuditTest, KilledWorkerMidCanaryModelReproducesTheUndisturbedResults) {
  // Two variants and their baselines; a canary model trains for a second or
  // two, so heartbeats (every 200 ms) show its progress before the kill.
  v1::AuditSpec spec = TinySweepSpec();
  spec.mutable_exposure()->set_reference_models(0);
  spec.mutable_exposure()->mutable_training()->set_epochs(10);
  ASSERT_NO_FATAL_FAILURE(RunBaseline(spec));
  ASSERT_TRUE(baseline_.complete());
  ASSERT_EQ(baseline_.exposure().variants_size(), 2);

  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1, /*lease_ttl_ms=*/1000, "-killed"));
  auto submitted = client_->Submit(spec);
  MEMAUDIT_ASSERT_OK(submitted);
  bool killed = false;
  bool retried = false;
  absl::Status watched = client_->Watch(submitted->audit_id(), [&](const v1::AuditEvent& e) {
    // Re-queued without an attempt spent: a silent worker may have been preempted.
    if (e.type() == v1::TASK_RELEASED) {
      retried = true;
      EXPECT_THAT(e.message(), HasSubstr("lease expired"));
      EXPECT_THAT(e.message(), HasSubstr("attempt not counted"));
    }
    EXPECT_NE(e.type(), v1::TASK_RETRIED);
    // Mid-way through the first canary model: a heartbeat reported steps and
    // nothing has finished yet.
    if (!killed && e.audit().tasks().succeeded() == 0 && e.audit().tasks().running() == 1 &&
        e.audit().steps_done() > 0) {
      cluster_->worker(0)->Signal(SIGKILL);
      killed = true;
      MEMAUDIT_EXPECT_OK(cluster_->AddWorker());
    }
    return true;
  });
  MEMAUDIT_ASSERT_OK(watched);
  ASSERT_TRUE(killed);
  EXPECT_TRUE(retried) << "the dead worker's canary model must be re-queued";
  EXPECT_EQ(cluster_->worker(0)->Wait(), 128 + SIGKILL);
  auto audit = client_->Get(submitted->audit_id());
  ASSERT_EQ(audit->state(), v1::SUCCEEDED) << audit->error();
  auto results = client_->Report(submitted->audit_id());
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_EQ(Numbers(*results), Numbers(baseline_))
      << "a re-leased canary model must reproduce its signals bit for bit";
}

class ExposureReplicatesAuditTest : public ClusterTest {
 protected:
  // Submits `spec`, waits for it to succeed and fetches its results.
  void RunAudit(const v1::AuditSpec& spec, uint32_t tasks, v1::Audit* audit,
                v1::AuditResults* results) {
    auto submitted = client_->Submit(spec);
    MEMAUDIT_ASSERT_OK(submitted);
    EXPECT_EQ(submitted->tasks(), tasks);
    *audit = WaitForEnd(submitted->audit_id());
    ASSERT_EQ(audit->state(), v1::SUCCEEDED) << audit->error();
    auto r = client_->Report(submitted->audit_id());
    MEMAUDIT_ASSERT_OK(r);
    ASSERT_TRUE(r->complete());
    *results = *std::move(r);
  }
};

// replicates: 3 trains the canary model from three seeds: replicate 0 is the
// audit without replicates bit for bit, each group's interval holds its
// mean across replicates, and the same seed gives the same numbers.
TEST_F(ExposureReplicatesAuditTest, ReplicateZeroIsTheSingleRunAndTheIntervalHoldsTheMean) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  v1::Audit single_audit, audit, again_audit;
  v1::AuditResults single, results, again;
  ASSERT_NO_FATAL_FAILURE(RunAudit(TinyExposureSpec(), 1, &single_audit, &single));
  v1::AuditSpec spec = TinyExposureSpec();
  spec.mutable_exposure()->set_replicates(3);
  ASSERT_NO_FATAL_FAILURE(RunAudit(spec, 3, &audit, &results));
  EXPECT_EQ(audit.steps_total(), 3 * single_audit.steps_total());
  EXPECT_EQ(results.models(), 3u);

  // Without what replication adds, the exposure results are the single run's.
  const v1::ExposureResults& x = results.exposure();
  v1::ExposureResults replicate0 = x;
  replicate0.clear_replicates();
  for (v1::ExposureByRepeats& g : *replicate0.mutable_by_repeats()) g.clear_across_replicates();
  EXPECT_EQ(replicate0.SerializeAsString(), single.exposure().SerializeAsString());
  EXPECT_FALSE(single.exposure().has_replicates());

  ASSERT_EQ(x.replicates().count(), 3u);
  ASSERT_EQ(x.replicates().models_size(), 3);
  bool differ = false;
  for (int i = 0; i < x.canaries_size(); ++i) {
    EXPECT_EQ(x.replicates().models(0).px_bits(i), x.canaries(i).px_bits());
    EXPECT_EQ(x.replicates().models(0).exposure(i), x.canaries(i).exposure());
    differ = differ || x.replicates().models(1).px_bits(i) != x.canaries(i).px_bits();
  }
  EXPECT_TRUE(differ) << "replicate 1 trains from another seed";
  ASSERT_EQ(x.replicates().models(1).secret_size(), x.canaries_size());
  EXPECT_EQ(x.replicates().models(0).secret(0), x.canaries(0).secret());
  EXPECT_NE(x.replicates().models(1).secret(0), x.canaries(0).secret())
      << "replicate 1 draws canaries of its own";
  for (const v1::ExposureByRepeats& g : x.by_repeats()) {
    SCOPED_TRACE(absl::StrCat("x", g.repeats()));
    const v1::ExposureAcrossReplicates& a = g.across_replicates();
    EXPECT_EQ(a.replicates(), 3u);
    ASSERT_TRUE(a.has_exposure());
    ASSERT_TRUE(a.has_sampled_exposure());
    double sum = 0;
    for (const v1::ExposureReplicate& m : x.replicates().models()) {
      double group = 0;
      int n = 0;
      for (int i = 0; i < x.canaries_size(); ++i) {
        if (x.canaries(i).repeats() != g.repeats()) continue;
        group += m.exposure(i);
        ++n;
      }
      sum += group / n;
    }
    EXPECT_NEAR(a.exposure().mean(), sum / 3, 1e-12);
    for (const v1::TrialMean* m : {&a.exposure(), &a.sampled_exposure()}) {
      EXPECT_LE(m->low(), m->mean());
      EXPECT_LE(m->mean(), m->high());
    }
    EXPECT_GE(a.exposure().low(), 0);
    EXPECT_LE(a.exposure().high(), x.log2_space());
  }
  EXPECT_TRUE(results.warnings().empty());

  // Shown in the table, the report, the CSV and the gauges.
  EXPECT_THAT(cli::ResultsTable(results), HasSubstr("exposure across 3 replicates"));
  EXPECT_THAT(cli::ResultsTable(single), ::testing::Not(HasSubstr("replicates")));
  EXPECT_THAT(cli::HtmlReport(audit, results), HasSubstr("Exposure across 3 replicates"));
  const std::string csv_dir = dir_ + "/replicates-csv";
  MEMAUDIT_ASSERT_OK(cli::WriteResultsCsv(results, csv_dir));
  const std::string csv = Slurp(csv_dir + "/exposure_replicates.csv");
  EXPECT_THAT(csv, HasSubstr(",base,40,exact,3,"));
  const std::string per_model = Slurp(csv_dir + "/exposure_replicate_canaries.csv");
  EXPECT_EQ(std::count(per_model.begin(), per_model.end(), '\n'), 1 + 3 * x.canaries_size());
  EXPECT_THAT(per_model,
              HasSubstr(absl::StrCat(",base,1,", x.replicates().models(1).secret(0), ",")));
  const std::string metrics = HttpGet(cluster_->scorer_metrics_port(), "/metrics");
  for (const char* family :
       {"memaudit_exposure_replicated_log2", "memaudit_exposure_replicated_low_log2",
        "memaudit_exposure_replicated_high_log2"}) {
    EXPECT_TRUE(HasSeries(metrics, family,
                          {{"audit", results.audit_id()},
                           {"estimator", "exact"},
                           {"insertions", "40"},
                           {"variant", "base"}}))
        << family;
  }
  if (access(kPromtoolBinary, X_OK) == 0) {
    const PromtoolLint lint = RunPromtool(dir_, "exposure-replicates-scorer", metrics);
    EXPECT_EQ(lint.exit_code, 0) << lint.output;
    EXPECT_EQ(lint.output, "");
  }

  // The same seed, the same numbers.
  ASSERT_NO_FATAL_FAILURE(RunAudit(spec, 3, &again_audit, &again));
  EXPECT_EQ(Numbers(again), Numbers(results));
}

TEST_F(ExposureAuditTest, BadSpecIsRefusedWithTheFieldNamed) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  v1::AuditSpec spec = TinyExposureSpec();
  spec.mutable_exposure()->set_repeats(1, 0);
  spec.mutable_exposure()->mutable_model()->set_architecture("rnn");
  auto refused = client_->Submit(spec);
  ASSERT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("exposure.repeats[1]"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("exposure.model.architecture"));
  v1::AuditSpec sweep = TinySweepSpec();
  sweep.mutable_exposure()->mutable_sweep(1)->set_units(0);
  sweep.mutable_exposure()->mutable_sweep(0)->set_epochs(0);
  sweep.mutable_exposure()->mutable_sweep(1)->set_learning_rate(-1);
  sweep.mutable_exposure()->set_estimator("exact");
  sweep.mutable_exposure()->set_reference_samples(0);
  refused = client_->Submit(sweep);
  ASSERT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("exposure.sweep[1].units"));
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("exposure.sweep[0].epochs: must be in [1, 10000] (got 0)"));
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("exposure.sweep[1].learning_rate: must be > 0 (got -1)"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("exposure.reference_models"));
  v1::AuditSpec replicated = TinyExposureSpec();
  replicated.mutable_exposure()->set_replicates(17);
  refused = client_->Submit(replicated);
  ASSERT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("exposure.replicates: must be in [1, 16] (got 17)"));
}

}  // namespace
}  // namespace memaudit::testing
