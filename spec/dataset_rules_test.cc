// The compatibility table's refusals (docs/spec.md, "Compatibility"): each
// names its field. Real files, written here and with NumPy, read as Submit
// reads them (PrepareSpecProblems).
#include "spec/dataset_rules.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/messages/content_key.h"
#include "common/messages/data_roots.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/spec_validator.h"
#include "spec/test_specs.h"

namespace memaudit::spec {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class DatasetRulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/dataset-rules-", getpid(), "-",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    roots_ = *DataRoots::Create({dir_});
    // 40 rows of 3 features, labels 0/1 by the sign of the first.
    std::ofstream csv(dir_ + "/table.csv");
    csv << "a,b,label,c\n";
    for (int i = 0; i < 40; ++i)
      csv << (i - 20) << "," << i * 0.5 << "," << (i < 20 ? 0 : 1) << "," << -i << "\n";
  }

  // A membership spec over `dataset` (its path, format and other fields).
  v1::AuditSpec Membership(const v1::DatasetSpec& dataset) {
    v1::AuditSpec spec = SmallMembershipSpec();
    spec.mutable_membership()->clear_dataset();
    *spec.mutable_membership()->mutable_dataset() = dataset;
    spec.mutable_membership()->mutable_dataset()->set_pool_size(32);
    spec.mutable_membership()->clear_attacks();
    spec.mutable_membership()->add_attacks("lira_offline_fixed_variance");
    spec.mutable_membership()->add_attacks("loss");
    spec.mutable_membership()->set_population_size(0);
    return spec;
  }

  v1::DatasetSpec Csv() {
    v1::DatasetSpec d;
    d.set_format("csv");
    d.set_path(dir_ + "/table.csv");
    return d;
  }

  std::vector<SpecProblem> Problems(v1::AuditSpec spec) {
    return PrepareSpecProblems(&spec, roots_);
  }

  void Python(const std::string& code) {
    const std::string script = dir_ + "/make.py";
    std::ofstream(script) << "import numpy as np\nimport os\nos.chdir('" << dir_ << "')\n"
                          << code << "\n";
    ASSERT_EQ(std::system(("/usr/bin/python3 " + script).c_str()), 0);
  }

  std::string dir_;
  DataRoots roots_;
};

MATCHER_P2(Problem, field, rule, "") {
  return arg.field == field && arg.rule.find(rule) != std::string::npos;
}

TEST_F(DatasetRulesTest, ACsvTableIsReadAtSubmitAndItsFactsRecorded) {
  v1::AuditSpec spec = Membership(Csv());
  ASSERT_THAT(PrepareSpecProblems(&spec, roots_), IsEmpty());
  const v1::DatasetSpec& d = spec.membership().dataset();
  EXPECT_EQ(d.rows(), 40u);
  EXPECT_EQ(d.features(), 3u);
  EXPECT_EQ(d.classes(), 2u);
  EXPECT_EQ(d.name(), "table.csv");
  EXPECT_THAT(d.content_hash(), ::testing::StartsWith("sha256:"));
}

// A pool of every row leaves RMIA no population: the defaults leave it out
// (the results warn `no_population`); a smaller pool gets what is left.
TEST_F(DatasetRulesTest, DefaultsFollowTheRowsTheDatasetHolds) {
  v1::AuditSpec all = Membership(Csv());
  all.mutable_membership()->clear_attacks();
  all.mutable_membership()->mutable_dataset()->set_pool_size(40);
  ASSERT_THAT(PrepareSpecProblems(&all, roots_), IsEmpty());
  EXPECT_THAT(all.membership().attacks(), ::testing::Not(Contains("rmia")));
  EXPECT_EQ(all.membership().population_size(), 0u);

  v1::AuditSpec part = Membership(Csv());
  part.mutable_membership()->clear_attacks();
  part.mutable_membership()->mutable_dataset()->set_pool_size(30);
  ASSERT_THAT(PrepareSpecProblems(&part, roots_), IsEmpty());
  EXPECT_THAT(part.membership().attacks(), Contains("rmia"));
  EXPECT_EQ(part.membership().population_size(), 10u);
}

TEST_F(DatasetRulesTest, EachRefusalNamesItsField) {
  v1::DatasetSpec d = Csv();
  d.set_format("parquet");
  EXPECT_THAT(Problems(Membership(d)),
              Contains(Problem("membership.dataset.format", "must be one of fashion_mnist")));

  d = Csv();
  d.set_labels_path(dir_ + "/table.csv");
  EXPECT_THAT(Problems(Membership(d)),
              Contains(Problem("membership.dataset.labels_path", "applies to format \"npy\"")));

  d = Csv();
  d.set_path(dir_ + "/missing.csv");
  EXPECT_THAT(Problems(Membership(d)), Contains(Problem("membership.dataset.path", "missing.csv")));

  d = Csv();
  d.set_label_column("income");
  EXPECT_THAT(Problems(Membership(d)),
              Contains(Problem("membership.dataset.label_column", "income")));

  d = Csv();
  v1::AuditSpec big = Membership(d);
  big.mutable_membership()->mutable_dataset()->set_pool_size(41);
  EXPECT_THAT(Problems(big), Contains(Problem("membership.dataset.pool_size", "[8, 40]")));

  v1::AuditSpec population = Membership(Csv());
  population.mutable_membership()->add_attacks("rmia");
  population.mutable_membership()->set_population_size(20);
  EXPECT_THAT(Problems(population),
              Contains(Problem("membership.population_size", "must be <= 40")));

  v1::AuditSpec cnn = Membership(Csv());
  cnn.mutable_membership()->mutable_model()->set_architecture("cnn");
  cnn.mutable_membership()->mutable_model()->clear_hidden();
  EXPECT_THAT(Problems(cnn),
              Contains(Problem("membership.model.architecture", "\"cnn\" needs image examples")));

  v1::AuditSpec script = Membership(Csv());
  script.mutable_membership()->mutable_model()->set_architecture("torchscript");
  script.mutable_membership()->mutable_model()->clear_hidden();
  EXPECT_THAT(Problems(script), Contains(Problem("membership.model.torchscript_path", "required")));

  d = Csv();
  d.set_content_hash("sha256:0000");
  EXPECT_THAT(Problems(Membership(d)),
              Contains(Problem("membership.dataset.content_hash", "the spec pins sha256:0000")));
}

TEST_F(DatasetRulesTest, NumpyArraysAndTheirRefusals) {
  ASSERT_NO_FATAL_FAILURE(
      Python("x = np.random.RandomState(0).rand(40, 6, 6).astype(np.float32)\n"
             "y = (np.arange(40) % 3).astype(np.int64)\n"
             "np.save('x.npy', x); np.save('y.npy', y); np.save('yf.npy', y.astype(np.float32))\n"
             "np.savez('d.npz', x=x, y=y)\n"));
  v1::DatasetSpec npy;
  npy.set_format("npy");
  npy.set_path(dir_ + "/x.npy");
  v1::AuditSpec spec = Membership(npy);
  EXPECT_THAT(Problems(spec), Contains(Problem("membership.dataset.labels_path", "required")));
  npy.set_labels_path(dir_ + "/yf.npy");
  EXPECT_THAT(Problems(Membership(npy)),
              Contains(Field(&SpecProblem::field, "membership.dataset.labels_path")));
  npy.set_labels_path(dir_ + "/y.npy");
  v1::AuditSpec ok = Membership(npy);
  ok.mutable_membership()->mutable_model()->set_architecture("cnn");
  ok.mutable_membership()->mutable_model()->clear_hidden();
  ASSERT_THAT(PrepareSpecProblems(&ok, roots_), IsEmpty());
  EXPECT_EQ(ok.membership().dataset().classes(), 3u);
  EXPECT_THAT(ok.membership().dataset().shape(), ::testing::ElementsAre(6, 6));

  v1::DatasetSpec npz;
  npz.set_format("npz");
  npz.set_path(dir_ + "/d.npz");
  npz.set_features_key("images");
  EXPECT_THAT(Problems(Membership(npz)),
              Contains(Problem("membership.dataset.features_key", "images")));
}

TEST_F(DatasetRulesTest, ForgettingAndUnlearningReadTheirDatasetsToo) {
  v1::AuditSpec forgetting;
  forgetting.set_name("f");
  forgetting.set_seed(1);
  *forgetting.mutable_forgetting()->mutable_dataset() = Csv();
  forgetting.mutable_forgetting()->mutable_injected()->set_size(4);
  forgetting.mutable_forgetting()->mutable_training()->set_steps_before_injection(10);
  forgetting.mutable_forgetting()->mutable_training()->set_steps_after_injection(10);
  forgetting.mutable_forgetting()->mutable_training()->set_batch_size(8);
  {
    v1::AuditSpec s = forgetting;
    ASSERT_THAT(PrepareSpecProblems(&s, roots_), IsEmpty());
    EXPECT_EQ(s.forgetting().dataset().pool_size(), 36u);  // 40 rows less Dp's 4
  }
  forgetting.mutable_forgetting()->mutable_dataset()->set_pool_size(39);
  EXPECT_THAT(Problems(forgetting),
              Contains(Problem("forgetting.dataset.pool_size", "40 - injected.size")));

  v1::AuditSpec unlearning;
  unlearning.set_name("u");
  unlearning.set_seed(1);
  v1::DatasetSpec missing = Csv();
  missing.set_path(dir_ + "/nope.csv");
  *unlearning.mutable_unlearning()->mutable_dataset() = missing;
  EXPECT_THAT(Problems(unlearning),
              Contains(Field(&SpecProblem::field, "unlearning.dataset.path")));
}

// A tokenizer's model file: hashed at Submit; one past 64 MiB is refused
// from its size, before a byte is read.
TEST_F(DatasetRulesTest, ATokenizerFileIsHashedAndBoundedBeforeItIsRead) {
  std::ofstream(dir_ + "/t.model") << "bytes to hash";
  v1::AuditSpec spec = SmallExposureSpec();
  v1::TokenizerSpec* t = spec.mutable_exposure()->mutable_model()->mutable_tokenizer();
  t->set_kind("sentencepiece");
  t->set_model_path(dir_ + "/t.model");
  v1::AuditSpec prepared = spec;
  ASSERT_THAT(PrepareSpecProblems(&prepared, roots_), IsEmpty());
  EXPECT_THAT(prepared.exposure().model().tokenizer().content_hash(),
              ::testing::StartsWith("sha256:"));
  fs::resize_file(dir_ + "/t.model", (64u << 20) + 1);
  EXPECT_THAT(PrepareSpecProblems(&spec, roots_),
              Contains(Problem("exposure.model.tokenizer.model_path",
                               "a SentencePiece model of 67108865 bytes; at most 67108864")));
}

TEST_F(DatasetRulesTest, ATargetNeedsItsFilesAndOnlyTheRowsOfTheDataset) {
  std::ofstream(dir_ + "/model.pt") << "not a real module, but bytes to hash";
  std::ofstream(dir_ + "/members.txt") << "0\n3\n# a comment\n7\n";
  std::ofstream(dir_ + "/outside.txt") << "0\n40\n";
  std::ofstream(dir_ + "/repeats.txt") << "1\n1\n";
  v1::AuditSpec spec = Membership(Csv());
  v1::TargetModelSpec* t = spec.mutable_membership()->mutable_target();
  t->set_torchscript_path(dir_ + "/model.pt");
  EXPECT_THAT(Problems(spec), Contains(Problem("membership.target.members_path", "required")));
  t->set_members_path(dir_ + "/outside.txt");
  EXPECT_THAT(Problems(spec), Contains(Problem("membership.target.members_path",
                                               "line 2 of " + dir_ + "/outside.txt")));
  t->set_members_path(dir_ + "/repeats.txt");
  EXPECT_THAT(Problems(spec), Contains(Problem("membership.target.members_path", "repeats row 1")));
  t->set_members_path(dir_ + "/members.txt");
  spec.mutable_membership()->set_target_model(1);
  EXPECT_THAT(Problems(spec), Contains(Problem("membership.target_model", "must be unset")));
  spec.mutable_membership()->clear_target_model();
  ASSERT_THAT(PrepareSpecProblems(&spec, roots_), IsEmpty());
  EXPECT_EQ(spec.membership().target().members(), 3u);
  EXPECT_THAT(spec.membership().target().content_hash(), ::testing::StartsWith("sha256:"));
}

// Models trained on one file must never stand in for models of another:
// the content key follows the file's bytes, not its name.
TEST_F(DatasetRulesTest, ChangingTheDatasetFileChangesTheContentKey) {
  v1::AuditSpec first = Membership(Csv());
  ASSERT_THAT(PrepareSpecProblems(&first, roots_), IsEmpty());
  v1::AuditSpec again = Membership(Csv());
  ASSERT_THAT(PrepareSpecProblems(&again, roots_), IsEmpty());
  EXPECT_EQ(MembershipModelKey(first, 0), MembershipModelKey(again, 0));
  again.mutable_membership()->mutable_dataset()->set_name("a label only");
  EXPECT_EQ(MembershipModelKey(first, 0), MembershipModelKey(again, 0));

  // One value changed, same path, same size.
  std::string text;
  {
    std::ifstream in(dir_ + "/table.csv");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  text.replace(text.find("\n-20,"), 5, "\n-21,");
  std::ofstream(dir_ + "/table.csv", std::ios::trunc) << text;
  v1::AuditSpec changed = Membership(Csv());
  ASSERT_THAT(PrepareSpecProblems(&changed, roots_), IsEmpty());
  EXPECT_NE(changed.membership().dataset().content_hash(),
            first.membership().dataset().content_hash());
  EXPECT_NE(MembershipModelKey(changed, 0), MembershipModelKey(first, 0));
}

}  // namespace
}  // namespace memaudit::spec
