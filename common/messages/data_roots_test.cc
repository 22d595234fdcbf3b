// DataRoots on real directories and symlinks under the test's temp dir.
#include "common/messages/data_roots.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit {
namespace {

namespace fs = std::filesystem;
using ::memaudit::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// base/
//   data/                  the root
//     sub/file
//     link-out -> ../outside   a symlink inside the root that leaves it
//     link-in  -> sub          one that stays inside
//   data-evil/file         a sibling whose name starts with the root's
//   outside/secret
//   via-link -> data       the root named through a symlink
class DataRootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Short: error messages quote the first 64 bytes of a path.
    base_ = fs::path(::testing::TempDir()) / absl::StrCat("dr-", getpid());
    fs::remove_all(base_);
    fs::create_directories(base_ / "data" / "sub");
    fs::create_directories(base_ / "data-evil");
    fs::create_directories(base_ / "outside");
    std::ofstream(base_ / "data" / "sub" / "file") << "inside";
    std::ofstream(base_ / "data-evil" / "file") << "sibling";
    std::ofstream(base_ / "outside" / "secret") << "secret";
    fs::create_directory_symlink("../outside", base_ / "data" / "link-out");
    fs::create_directory_symlink("sub", base_ / "data" / "link-in");
    fs::create_directory_symlink("data", base_ / "via-link");
    base_ = fs::canonical(base_);
    auto roots = DataRoots::Create({Path("data")});
    MEMAUDIT_ASSERT_OK(roots);
    roots_ = *std::move(roots);
  }
  void TearDown() override { fs::remove_all(base_); }

  std::string Path(const std::string& relative) const { return (base_ / relative).string(); }

  fs::path base_;
  DataRoots roots_;
};

TEST_F(DataRootsTest, PathsAtOrBelowARootAreAllowed) {
  EXPECT_THAT(roots_.roots(), ::testing::ElementsAre(Path("data")));
  MEMAUDIT_EXPECT_OK(roots_.Check("membership.dataset.path", Path("data")));
  MEMAUDIT_EXPECT_OK(roots_.Check("membership.dataset.path", Path("data/")));
  MEMAUDIT_EXPECT_OK(roots_.Check("exposure.corpus.path", Path("data/sub/file")));
  MEMAUDIT_EXPECT_OK(roots_.Check("exposure.corpus.path", Path("data/sub/../sub/file")));
  MEMAUDIT_EXPECT_OK(roots_.Check("exposure.corpus.path", Path("data/link-in/file")));
  // Not on this host (the coordinator's may lack the data): normalised lexically.
  MEMAUDIT_EXPECT_OK(roots_.Check("exposure.corpus.path", Path("data/not-yet/there.txt")));
}

TEST_F(DataRootsTest, EmptyMeansTheDefaultAndIsAllowed) {
  MEMAUDIT_EXPECT_OK(roots_.Check("membership.dataset.path", ""));
  MEMAUDIT_EXPECT_OK(DataRoots().Check("membership.dataset.path", ""));
}

TEST_F(DataRootsTest, PathsOutsideAreRefusedNamingTheField) {
  EXPECT_THAT(roots_.Check("membership.dataset.path", "/etc/shadow"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("membership.dataset.path: must lie under a data root ("),
                             HasSubstr(Path("data")), HasSubstr("got \"/etc/shadow\""))));
  EXPECT_THAT(roots_.Check("exposure.corpus.path", "/"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("exposure.corpus.path: must lie under a data root")));
  EXPECT_THAT(roots_.Check("exposure.corpus.path", Path("outside/secret")),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(roots_.Check("exposure.corpus.path", base_.string()),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(DataRootsTest, DotDotCannotClimbOut) {
  EXPECT_THAT(roots_.Check("f", Path("data/../outside/secret")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat("which resolves to \"", Path("outside/secret")))));
  // Through a component that does not exist: the kernel would refuse it, the
  // lexical normalisation here refuses it too.
  EXPECT_THAT(roots_.Check("f", Path("data/nope/../../outside/secret")),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(roots_.Check("f", Path("data/sub/../../../../../../etc/shadow")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"/etc/shadow\"")));
}

TEST_F(DataRootsTest, ASymlinkInsideARootThatPointsOutsideIsRefused) {
  EXPECT_THAT(
      roots_.Check("unlearning.model.torchscript_path", Path("data/link-out/secret")),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          AllOf(HasSubstr("unlearning.model.torchscript_path: must lie under"),
                HasSubstr(absl::StrCat("which resolves to \"", Path("outside/secret"), "\"")))));
  EXPECT_THAT(roots_.Check("f", Path("data/link-out")),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(DataRootsTest, ASiblingWithTheRootsNameAsPrefixIsNotUnderIt) {
  EXPECT_THAT(roots_.Check("membership.dataset.path", Path("data-evil/file")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must lie under")));
  EXPECT_THAT(roots_.Check("membership.dataset.path", Path("data-evil")),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(DataRootsTest, RelativePathsAreRefused) {
  EXPECT_THAT(roots_.Check("membership.dataset.path", "data/sub/file"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("membership.dataset.path: must be an absolute path (got "
                                 "\"data/sub/file\")")));
  EXPECT_THAT(roots_.Check("f", "./x"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(roots_.Check("f", "~/x"), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(DataRootsTest, ControlCharactersAreRefused) {
  // The kernel would read "<root>/.." where the check saw a name inside.
  EXPECT_THAT(roots_.Check("f", Path("data/..") + std::string(1, '\0')),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("must not contain control characters")));
  EXPECT_THAT(roots_.Check("f", Path("data/a\nb")), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(DataRootsTest, ALongPathIsQuotedByAPrefix) {
  const std::string path = "/etc/" + std::string(100000, 'x');
  const absl::Status status = roots_.Check("f", path);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_LT(status.message().size(), 1000u) << status.message().substr(0, 2000);
}

TEST_F(DataRootsTest, WithoutRootsEveryPathIsRefused) {
  EXPECT_THAT(DataRoots().Check("f", Path("data/sub/file")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("must lie under a data root, and none is configured")));
}

TEST_F(DataRootsTest, ARootIsResolvedAtCreation) {
  auto roots = DataRoots::Create({Path("via-link")});
  MEMAUDIT_ASSERT_OK(roots);
  EXPECT_THAT(roots->roots(), ::testing::ElementsAre(Path("data")));
  MEMAUDIT_EXPECT_OK(roots->Check("f", Path("via-link/sub/file")));
  MEMAUDIT_EXPECT_OK(roots->Check("f", Path("data/sub/file")));
  EXPECT_THAT(roots->Check("f", Path("via-link/link-out/secret")),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(DataRootsTest, SeveralRoots) {
  auto roots = DataRoots::Create({Path("data/sub"), Path("outside")});
  MEMAUDIT_ASSERT_OK(roots);
  MEMAUDIT_EXPECT_OK(roots->Check("f", Path("data/sub/file")));
  MEMAUDIT_EXPECT_OK(roots->Check("f", Path("outside/secret")));
  MEMAUDIT_EXPECT_OK(roots->Check("f", Path("data/link-out/secret")));  // resolves into outside/
  EXPECT_THAT(roots->Check("f", Path("data")), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(DataRootsTest, AMissingRootIsAnErrorNamingIt) {
  EXPECT_THAT(DataRoots::Create({Path("data"), Path("no-such-dir")}),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr(absl::StrCat("data root \"", Path("no-such-dir"))),
                             HasSubstr("No such file or directory"))));
  EXPECT_THAT(DataRoots::Create({Path("data/sub/file")}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a directory")));
  EXPECT_THAT(DataRoots::Create({""}), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(DataRoots::FromFlag({Path("no-such-dir")}), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(DataRootsTest, CheckSpecNamesEveryFieldOutside) {
  v1::AuditSpec spec;
  spec.mutable_forgetting()->mutable_dataset()->set_path(Path("data/sub"));
  spec.mutable_forgetting()->mutable_model()->set_torchscript_path("/etc/shadow");
  spec.mutable_forgetting()->mutable_canaries()->mutable_corpus()->set_path("relative.txt");
  const absl::Status status = roots_.CheckSpec(spec);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
                               AllOf(HasSubstr("forgetting.model.torchscript_path: must lie under"),
                                     HasSubstr("forgetting.canaries.corpus.path: must be an "
                                               "absolute path"),
                                     Not(HasSubstr("forgetting.dataset.path")))));
  spec.mutable_forgetting()->mutable_model()->clear_torchscript_path();
  spec.mutable_forgetting()->mutable_canaries()->mutable_corpus()->clear_path();
  MEMAUDIT_EXPECT_OK(roots_.CheckSpec(spec));
}

TEST(DataRootsDefaultsTest, AreTheDebianDirectoriesPresentOnThisHost) {
  const DataRoots defaults = DataRoots::Defaults();
  for (const std::string& root : defaults.roots()) {
    EXPECT_TRUE(root == kDefaultDataRoots[0] || root == kDefaultDataRoots[1]) << root;
  }
  for (const char* root : kDefaultDataRoots) {
    if (fs::is_directory(root)) {
      EXPECT_THAT(defaults.roots(), ::testing::Contains(root));
      MEMAUDIT_EXPECT_OK(defaults.Check("f", absl::StrCat(root, "/x")));
    }
  }
  auto from_flag = DataRoots::FromFlag({});
  MEMAUDIT_ASSERT_OK(from_flag);
  EXPECT_EQ(from_flag->roots(), defaults.roots());
  EXPECT_THAT(defaults.Check("f", "/etc/shadow"), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace memaudit
