// A team's own data and models through real services (docs/data.md,
// docs/models.md): a CSV table, NumPy arrays, TorchScript classifiers written
// by examples/models/*.py, and a target model trained outside memaudit.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;

class OwnDataTest : public ClusterTest {
 protected:
  void SetUp() override {
    data_ = FreshTestDir("-data");
    std::filesystem::create_directories(data_);
    data_roots_ = {data_};
  }

  // Runs a Python snippet with NumPy in the data directory.
  void Python(const std::string& code) {
    const std::string script = data_ + "/make.py";
    std::ofstream(script) << "import numpy as np, gzip, os\nos.chdir('" << data_ << "')\n"
                          << code << "\n";
    const Output out = Shell("/usr/bin/python3 " + script);
    ASSERT_EQ(out.exit_code, 0) << out.text;
  }

  // One of the example scripts, as a team would run it.
  void Example(const std::string& script, const std::string& args) {
    const Output out = Shell(absl::StrCat("/usr/bin/python3 ", MEMAUDIT_SOURCE_DIR,
                                          "/examples/models/", script, " ", args));
    ASSERT_EQ(out.exit_code, 0) << out.text;
  }

  // The first `rows` Fashion-MNIST training images as uint8 [rows, 28, 28]
  // and int64 labels in <data>/<name>.npz.
  void FashionNpz(const std::string& name, int rows) {
    Python(absl::StrCat(
        "d = '/usr/share/datasets/fashion-mnist/'\n"
        "x = np.frombuffer(gzip.open(d + 'train-images-idx3-ubyte.gz').read()[16:], "
        "np.uint8).reshape(-1, 28, 28)\n"
        "y = np.frombuffer(gzip.open(d + 'train-labels-idx1-ubyte.gz').read()[8:], np.uint8)\n"
        "np.savez('",
        name, ".npz', x=x[:", rows, "], y=y[:", rows, "].astype(np.int64))\n"));
  }

  // Three Gaussian blobs in 8 dimensions with text labels in a CSV table.
  void BlobsCsv() {
    Python(
        "r = np.random.RandomState(3)\n"
        "y = r.randint(0, 3, 400)\n"
        "x = r.randn(400, 8) + 1.5 * np.eye(3, 8)[y]\n"
        "names = np.array(['iris', 'rose', 'tulip'])\n"
        "with open('blobs.csv', 'w') as f:\n"
        "  f.write(','.join('f%d' % i for i in range(8)) + ',species\\n')\n"
        "  for row, label in zip(x, y):\n"
        "    f.write(','.join('%.6f' % v for v in row) + ',' + names[label] + '\\n')\n");
  }

  // blobs.csv as a dataset: 200 of its 400 rows in the pool.
  v1::DatasetSpec BlobsDataset() const {
    v1::DatasetSpec csv;
    csv.set_format("csv");
    csv.set_path(data_ + "/blobs.csv");
    csv.set_label_column("species");
    csv.set_pool_size(200);
    return csv;
  }

  // Forgetting on blobs.csv: D is 300 rows, Dp 20 with flipped labels,
  // injected 4 times after 40 steps and traced for `after` more; 2 trials.
  v1::AuditSpec ForgettingOnBlobs(uint64_t after) const {
    v1::AuditSpec spec;
    spec.set_name("forgetting-csv");
    spec.set_seed(9);
    v1::ForgettingAudit* f = spec.mutable_forgetting();
    f->mutable_dataset()->set_format("csv");
    f->mutable_dataset()->set_path(data_ + "/blobs.csv");
    f->mutable_dataset()->set_label_column("species");
    f->mutable_dataset()->set_pool_size(300);
    f->mutable_injected()->set_size(20);
    f->mutable_training()->set_batch_size(32);
    f->mutable_training()->set_steps_before_injection(40);
    f->mutable_training()->set_steps_after_injection(after);
    f->set_repeats(4);
    f->set_trials(2);
    return spec;
  }

  static v1::AuditSpec MembershipOn(const v1::DatasetSpec& dataset, uint32_t models) {
    v1::AuditSpec spec;
    spec.set_name("own-data");
    spec.set_seed(5);
    v1::MembershipAudit* m = spec.mutable_membership();
    *m->mutable_dataset() = dataset;
    m->mutable_training()->set_learning_rate(0.1);
    m->mutable_training()->set_momentum(0.9);
    m->mutable_training()->set_epochs(4);
    m->mutable_training()->set_batch_size(32);
    m->set_reference_models(models);
    return spec;
  }

  std::string data_;
};

TEST_F(OwnDataTest, MembershipOnACsvTableWithATorchScriptMlp) {
  ASSERT_NO_FATAL_FAILURE(BlobsCsv());
  ASSERT_NO_FATAL_FAILURE(
      Example("export_classifier.py",
              absl::StrCat("--features 8 --classes 3 --hidden 32 --out ", data_, "/mlp.pt")));
  v1::AuditSpec spec = MembershipOn(BlobsDataset(), 4);
  spec.mutable_membership()->mutable_model()->set_architecture("torchscript");
  spec.mutable_membership()->mutable_model()->set_torchscript_path(data_ + "/mlp.pt");

  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  Finished done;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &done));
  // Submit read the table: its facts travel with the audit.
  const v1::DatasetSpec& recorded = done.results.spec().membership().dataset();
  EXPECT_EQ(recorded.rows(), 400u);
  EXPECT_EQ(recorded.features(), 8u);
  EXPECT_EQ(recorded.classes(), 3u);
  EXPECT_EQ(recorded.name(), "blobs.csv");
  EXPECT_THAT(recorded.content_hash(), ::testing::StartsWith("sha256:"));
  // Defaults fit the table: RMIA's population is the 200 rows outside the pool.
  EXPECT_EQ(done.results.spec().membership().population_size(), 200u);
  EXPECT_EQ(done.results.members() + done.results.non_members(), 4u * 200u);
  ASSERT_GE(done.results.attacks_size(), 3);
  for (const v1::AttackResult& a : done.results.attacks()) {
    EXPECT_GE(a.auc(), 0.0);
    EXPECT_LE(a.auc(), 1.0);
  }
  for (const v1::VulnerableExample& v : done.results.most_vulnerable()) {
    EXPECT_LT(v.dataset_index(), 400u);
  }
  // Each model drew its own initial weights (the module's reset_parameters):
  // no two models' per-example losses agree.
  auto arrays = client_->Export(done.audit_id);
  MEMAUDIT_ASSERT_OK(arrays);
  const v1::ExportArray* loss = nullptr;
  for (const v1::ExportArray& a : *arrays) {
    if (a.name() == "loss") loss = &a;
  }
  ASSERT_NE(loss, nullptr);
  ASSERT_EQ(loss->values_size(), 4 * 200);
  for (int model = 1; model < 4; ++model) {
    EXPECT_NE(loss->values(0), loss->values(model * 200)) << model;
  }
}

TEST_F(OwnDataTest, MembershipOnNpzArraysWithTheBuiltInCnn) {
  ASSERT_NO_FATAL_FAILURE(FashionNpz("images", 300));
  v1::DatasetSpec npz;
  npz.set_format("npz");
  npz.set_path(data_ + "/images.npz");
  npz.set_pool_size(200);
  v1::AuditSpec spec = MembershipOn(npz, 4);
  spec.mutable_membership()->mutable_model()->set_architecture("cnn");
  spec.mutable_membership()->mutable_training()->set_epochs(1);

  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  Finished done;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &done));
  const v1::DatasetSpec& recorded = done.results.spec().membership().dataset();
  EXPECT_EQ(recorded.rows(), 300u);
  EXPECT_THAT(recorded.shape(), ::testing::ElementsAre(28, 28));
  EXPECT_EQ(done.results.members() + done.results.non_members(), 4u * 200u);
  EXPECT_GE(done.results.attacks_size(), 3);
}

TEST_F(OwnDataTest, ForgettingOnACsvTable) {
  ASSERT_NO_FATAL_FAILURE(BlobsCsv());
  const v1::AuditSpec spec = ForgettingOnBlobs(/*after=*/40);

  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  Finished done;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &done));
  EXPECT_EQ(done.results.spec().forgetting().dataset().rows(), 400u);
  ASSERT_TRUE(done.results.has_forgetting());
  ASSERT_GT(done.results.forgetting().curve_size(), 1);
  // Right after injection the flipped-label examples are told apart from
  // unseen ones better than chance.
  EXPECT_GT(done.results.forgetting().curve(0).auc().mean(), 0.6);
}

// Forgetting's arms fork from one checkpoint: a TorchScript model and the
// built-in CNN fork, train one at a time and are measured like the rest.
TEST_F(OwnDataTest, ForgettingWithATorchScriptModelAndWithTheCnn) {
  ASSERT_NO_FATAL_FAILURE(BlobsCsv());
  ASSERT_NO_FATAL_FAILURE(FashionNpz("images", 600));
  ASSERT_NO_FATAL_FAILURE(
      Example("export_classifier.py",
              absl::StrCat("--features 8 --classes 3 --hidden 16 --out ", data_, "/mlp.pt")));
  v1::AuditSpec spec = ForgettingOnBlobs(/*after=*/20);
  v1::ForgettingAudit* f = spec.mutable_forgetting();
  f->mutable_model()->set_architecture("torchscript");
  f->mutable_model()->set_torchscript_path(data_ + "/mlp.pt");
  v1::AuditSpec cnn = spec;
  v1::ForgettingAudit* c = cnn.mutable_forgetting();
  c->mutable_dataset()->Clear();
  c->mutable_dataset()->set_format("npz");
  c->mutable_dataset()->set_path(data_ + "/images.npz");
  c->mutable_dataset()->set_pool_size(500);
  c->mutable_model()->Clear();
  c->mutable_model()->set_architecture("cnn");

  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  for (const v1::AuditSpec* s : {&spec, &cnn}) {
    Finished done;
    ASSERT_NO_FATAL_FAILURE(RunToCompletion(*s, &done));
    ASSERT_GT(done.results.forgetting().curve_size(), 1);
    // Injected with flipped labels, Dp is told apart from unseen rows at
    // first better than chance.
    EXPECT_GT(done.results.forgetting().curve(0).auc().mean(), 0.55)
        << s->forgetting().model().architecture();
  }
}

// A model a team trained itself on a known half of its data: memaudit trains
// reference models with the same recipe and audits the given model.
TEST_F(OwnDataTest, ATargetTrainedOutsideMemauditIsAudited) {
  ASSERT_NO_FATAL_FAILURE(FashionNpz("fashion", 2400));
  ASSERT_NO_FATAL_FAILURE(Example(
      "train_target.py",
      absl::StrCat("--data ", data_, "/fashion.npz --hidden 128 --epochs 60 ", "--out-model ",
                   data_, "/target.pt --out-members ", data_, "/members.txt")));
  v1::DatasetSpec npz;
  npz.set_format("npz");
  npz.set_path(data_ + "/fashion.npz");
  npz.set_pool_size(2000);
  v1::AuditSpec spec = MembershipOn(npz, 16);
  v1::MembershipAudit* m = spec.mutable_membership();
  m->mutable_model()->add_hidden(128);
  m->mutable_training()->set_epochs(60);
  m->mutable_training()->set_batch_size(64);
  for (const char* a : {"lira_offline", "rmia", "loss"}) m->add_attacks(a);
  m->add_fpr_points(0.01);
  m->mutable_target()->set_torchscript_path(data_ + "/target.pt");
  m->mutable_target()->set_members_path(data_ + "/members.txt");

  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  Finished done;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &done));
  EXPECT_EQ(done.results.spec().membership().target().members(), 1200u);
  // Only the given model is scored: the pool's 2000 examples, about half of
  // them its members.
  EXPECT_EQ(done.results.members() + done.results.non_members(), 2000u);
  EXPECT_NEAR(static_cast<double>(done.results.members()), 1000, 100);
  double lira = -1, loss = -1;
  for (const v1::AttackResult& a : done.results.attacks()) {
    ASSERT_EQ(a.operating_points_size(), 1);
    if (a.attack() == v1::LIRA_OFFLINE) lira = a.operating_points(0).tpr();
    if (a.attack() == v1::LOSS) loss = a.operating_points(0).tpr();
  }
  EXPECT_GT(lira, loss) << "TPR at 1% FPR";
  EXPECT_GT(done.results.most_vulnerable_size(), 0);
}

// The Secret Sharer on a language model a team trained itself (by the
// example script) with its own canaries: nothing trains, the secret seen 64
// times ranks first among the 10^4 fillings and is extracted, and the
// controls stay unexposed.
TEST_F(OwnDataTest, TheExposureOfAGivenLanguageModelsOwnCanaries) {
  ASSERT_NO_FATAL_FAILURE(Example(
      "train_target_lm.py",
      absl::StrCat("--corpus /usr/share/games/fortunes/fortunes --max-chars 6000 --epochs 12 ",
                   "--secret 4821:64 --secret 1907:2 --out ", data_, "/lm.pt")));
  v1::AuditSpec spec;
  spec.set_name("target-lm");
  spec.set_seed(3);
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->mutable_canary()->set_prefix("my pin is ");
  e->mutable_canary()->set_digits(4);
  e->add_repeats(64);
  e->add_repeats(2);
  e->set_controls(4);
  e->set_estimator("exact");
  e->mutable_target()->set_torchscript_path(data_ + "/lm.pt");
  e->mutable_target()->add_secrets("4821");
  e->mutable_target()->add_secrets("1907");

  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  Finished done;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &done));
  const v1::ExposureResults& x = done.results.exposure();
  EXPECT_EQ(x.training_steps(), 0u);
  EXPECT_THAT(done.results.spec().exposure().target().content_hash(),
              ::testing::StartsWith("sha256:"));
  ASSERT_EQ(x.canaries_size(), 6);
  double most = 0, control_max = 0;
  for (const v1::CanaryResult& c : x.canaries()) {
    EXPECT_TRUE(c.exact()) << c.secret();
    if (c.repeats() == 64) {
      EXPECT_EQ(c.secret(), "4821");
      EXPECT_EQ(c.rank(), 1u);
      most = c.exposure();
    }
    if (c.repeats() == 0) control_max = std::max(control_max, c.exposure());
  }
  EXPECT_GT(most, control_max + 5);
  EXPECT_TRUE(x.extracted());
}

TEST_F(OwnDataTest, AReplacedDatasetFailsTheAuditInsteadOfTrainingOnOtherData) {
  ASSERT_NO_FATAL_FAILURE(BlobsCsv());
  v1::AuditSpec spec = MembershipOn(BlobsDataset(), 4);
  spec.mutable_membership()->mutable_model()->add_hidden(16);
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0));
  auto submitted = client_->Submit(spec);
  MEMAUDIT_ASSERT_OK(submitted);
  std::ofstream(data_ + "/blobs.csv", std::ios::app) << "0,0,0,0,0,0,0,0,iris\n";
  MEMAUDIT_ASSERT_OK(cluster_->AddWorker());
  const v1::Audit audit = WaitForEnd(submitted->audit_id());
  EXPECT_EQ(audit.state(), v1::FAILED);
  EXPECT_THAT(audit.error(), HasSubstr("membership.dataset.content_hash: the files changed"));
}

}  // namespace
}  // namespace memaudit::testing
