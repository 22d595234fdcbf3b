// Data roots (common/messages/data_roots.h) through the real services and CLI: the
// coordinator refuses a spec naming a file outside its --data-root at
// Submit, a worker refuses it again on its own host before reading it, and
// `memaudit run` passes its roots (by default including the spec file's
// directory) to the services it starts.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

namespace fs = std::filesystem;
using ::memaudit::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

class DataRootsClusterTest : public ClusterTest {
 protected:
  // <fresh>/data (the root) and <fresh>/outside, each holding a file.
  void SetUp() override {
    base_ = FreshTestDir("-files");
    fs::create_directories(base_ + "/data/images");
    fs::create_directories(base_ + "/outside");
    std::ofstream(base_ + "/data/corpus.txt") << WordText(4000);
    std::ofstream(base_ + "/outside/secret.txt") << "secret\n";
    data_roots_ = {base_ + "/data"};
  }

  std::string base_;
};

TEST_F(DataRootsClusterTest, SubmitRefusesAPathOutsideItsRootsNamingTheField) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0));

  v1::AuditSpec membership = TinyMembershipSpec();
  membership.mutable_membership()->mutable_dataset()->set_path("/etc/shadow");
  EXPECT_THAT(client_->Submit(membership),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("membership.dataset.path: must lie under a data root"),
                             HasSubstr(base_ + "/data"), HasSubstr("\"/etc/shadow\""))));

  v1::AuditSpec exposure = TinyExposureSpec();
  exposure.mutable_exposure()->mutable_corpus()->clear_text();
  exposure.mutable_exposure()->mutable_corpus()->set_path("/");
  EXPECT_THAT(client_->Submit(exposure),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("exposure.corpus.path: must lie under a data root")));

  // `..` and a symlink inside the root that leads out of it.
  exposure.mutable_exposure()->mutable_corpus()->set_path(base_ + "/data/../outside/secret.txt");
  EXPECT_THAT(client_->Submit(exposure),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("exposure.corpus.path")));
  fs::create_directory_symlink(base_ + "/outside", base_ + "/data/escape");
  exposure.mutable_exposure()->mutable_corpus()->set_path(base_ + "/data/escape/secret.txt");
  EXPECT_THAT(client_->Submit(exposure),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("exposure.corpus.path: must lie under a data root"),
                             HasSubstr("which resolves to"))));

  // Inside the root it is accepted (and cancelled: there is no worker).
  exposure.mutable_exposure()->mutable_corpus()->set_path(base_ + "/data/corpus.txt");
  auto accepted = client_->Submit(exposure);
  MEMAUDIT_ASSERT_OK(accepted);
  MEMAUDIT_EXPECT_OK(client_->Cancel(accepted->audit_id()));
}

// The coordinator checked the path on its host at Submit; by the time a
// worker runs the task, the symlink points elsewhere. The worker resolves it
// again, refuses it without reading it, and the audit fails at once.
TEST_F(DataRootsClusterTest, AWorkerRefusesASymlinkRetargetedAfterSubmit) {
  fs::create_directories(base_ + "/data/real");
  // Submit reads the dataset: the directory holds Fashion-MNIST's files.
  for (const char* file : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"}) {
    fs::create_symlink(std::string("/usr/share/datasets/fashion-mnist/") + file,
                       base_ + "/data/real/" + file);
  }
  fs::create_directory_symlink(base_ + "/data/real", base_ + "/data/link");
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0));
  v1::AuditSpec spec = TinyUnlearningSpec();
  spec.mutable_unlearning()->mutable_dataset()->set_path(base_ + "/data/link");
  auto submitted = client_->Submit(spec);
  MEMAUDIT_ASSERT_OK(submitted);

  fs::remove(base_ + "/data/link");
  fs::create_directory_symlink(base_ + "/outside", base_ + "/data/link");
  MEMAUDIT_ASSERT_OK(cluster_->AddWorker());
  const v1::Audit audit = WaitForEnd(submitted->audit_id());
  EXPECT_EQ(audit.state(), v1::FAILED);
  EXPECT_THAT(audit.error(), AllOf(HasSubstr("failed after 1 attempt(s)"),
                                   HasSubstr("unlearning.dataset.path: must lie under a data root"),
                                   HasSubstr("which resolves to")));
}

TEST_F(DataRootsClusterTest, AServiceGivenAMissingRootDoesNotStart) {
  const std::string missing = base_ + "/no-such-dir";
  Output coordinator = Shell(absl::StrCat("timeout 20 ", MEMAUDIT_BIN_DIR,
                                          "/memaudit-coordinator --listen 127.0.0.1:0 "
                                          "--metrics-listen 127.0.0.1:0 --db ",
                                          base_, "/c.db --data-root ", missing));
  EXPECT_EQ(coordinator.exit_code, 1) << coordinator.text;
  EXPECT_THAT(coordinator.text, HasSubstr(absl::StrCat("data root \"", missing)));
  Output worker = Shell(absl::StrCat("timeout 20 ", MEMAUDIT_BIN_DIR,
                                     "/memaudit-worker --coordinator 127.0.0.1:1 "
                                     "--metrics-listen 127.0.0.1:0 --data-root ",
                                     missing));
  EXPECT_EQ(worker.exit_code, 1) << worker.text;
  EXPECT_THAT(worker.text, HasSubstr(absl::StrCat("data root \"", missing)));
}

// `memaudit run` allows the spec file's directory by default and passes its
// roots to the coordinator and the workers it starts (the worker's own
// default would refuse this corpus).
TEST_F(DataRootsClusterTest, RunAllowsTheSpecFilesDirectoryAndPassesItsRootsOn) {
  const std::string spec = base_ + "/data/spec.yaml";
  std::ofstream(spec) << absl::StrCat(R"(name: roots
seed: 5
exposure:
  corpus: {path: )",
                                      base_, R"(/data/corpus.txt}
  model: {units: 32, embedding: 16}
  training: {learning_rate: 0.01, epochs: 2, batch_size: 16, window: 48}
  canary: {prefix: "pin ", digits: 3}
  repeats: [1, 8]
  controls: 2
  estimator: exact
  extraction: false
)");
  Output validate = Shell(absl::StrCat(Memaudit(), " validate ", spec));
  EXPECT_EQ(validate.exit_code, 0) << validate.text;
  Output run = Shell(absl::StrCat(Memaudit(), " run ", spec, " --workers 1 --dir ", base_, "/run"));
  EXPECT_EQ(run.exit_code, 0) << run.text;
  EXPECT_THAT(Slurp(base_ + "/run/worker-0.log"), HasSubstr(base_ + "/data"));

  // Given --data-root, the spec's directory is no longer implied: refused
  // offline, before any service starts.
  Output elsewhere = Shell(absl::StrCat(Memaudit(), " run ", spec, " --data-root ", base_,
                                        "/outside --dir ", base_, "/run2"));
  EXPECT_EQ(elsewhere.exit_code, 2) << elsewhere.text;
  EXPECT_THAT(elsewhere.text, HasSubstr("exposure.corpus.path: must lie under a data root"));
  EXPECT_THAT(elsewhere.text, ::testing::Not(HasSubstr("starting scorer")));
  Output validate_elsewhere =
      Shell(absl::StrCat(Memaudit(), " validate ", spec, " --data-root ", base_, "/outside"));
  EXPECT_EQ(validate_elsewhere.exit_code, 2) << validate_elsewhere.text;
  EXPECT_THAT(validate_elsewhere.text, HasSubstr("exposure.corpus.path: must lie under"));
  Output missing_root =
      Shell(absl::StrCat(Memaudit(), " validate ", spec, " --data-root ", base_, "/nope"));
  EXPECT_EQ(missing_root.exit_code, 2) << missing_root.text;
  EXPECT_THAT(missing_root.text, HasSubstr("--data-root: data root"));
}

}  // namespace
}  // namespace memaudit::testing
