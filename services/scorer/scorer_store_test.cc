#include "services/scorer/scorer_store.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::scorer {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(ScorerStoreTest, EmptyFileIsRefusedUnlessInitialising) {
  const std::string path =
      ::testing::TempDir() + "/scorer_store_empty_" + std::to_string(getpid()) + ".db";
  std::ofstream(path).close();
  EXPECT_THAT(ScorerStore::Open(path), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                AllOf(HasSubstr(path), HasSubstr("--init"))));
  sql::OpenOptions init;
  init.init_empty_file = true;
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.set_seed(3);
  {
    auto store = ScorerStore::Open(path, init);
    MEMAUDIT_ASSERT_OK(store);
    MEMAUDIT_ASSERT_OK((*store)->OpenAudit("a", spec));
  }
  auto store = ScorerStore::Open(path);
  MEMAUDIT_ASSERT_OK(store);
  auto audits = (*store)->ListAudits();
  MEMAUDIT_ASSERT_OK(audits);
  EXPECT_EQ(*audits, std::vector<std::string>{"a"});
  std::remove(path.c_str());
}

TEST(ScorerStoreTest, DamagedDatabaseIsRefused) {
  const std::string path =
      ::testing::TempDir() + "/scorer_store_damaged_" + std::to_string(getpid()) + ".db";
  std::remove(path.c_str());
  {
    auto store = ScorerStore::Open(path);
    MEMAUDIT_ASSERT_OK(store);
  }
  // The schema alone spans several pages; scribble over the middle ones.
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(0, std::ios::end);
  const std::streamoff size = file.tellg();
  ASSERT_GT(size, 16384);
  file.seekp(size / 2 - 4096);
  file.write(std::string(8192, '\x5a').data(), 8192);
  file.close();
  EXPECT_THAT(ScorerStore::Open(path),
              StatusIs(absl::StatusCode::kDataLoss, AllOf(HasSubstr(path), HasSubstr("damaged"))));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace memaudit::scorer
