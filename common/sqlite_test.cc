#include "common/sqlite.h"

#include <unistd.h>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::sql {
namespace {

using ::memaudit::testing::StatusIs;

TEST(SqliteTest, RoundTripsTypesAndBlobs) {
  auto db = Database::Open(":memory:");
  MEMAUDIT_ASSERT_OK(db);
  MEMAUDIT_ASSERT_OK((*db)->Exec("CREATE TABLE t (i INTEGER, d REAL, s TEXT, b BLOB)"));
  auto insert = (*db)->Prepare("INSERT INTO t VALUES (?, ?, ?, ?)");
  MEMAUDIT_ASSERT_OK(insert);
  std::string blob("a\0b", 3);
  insert->Bind(1, int64_t{1} << 40).Bind(2, 0.1).Bind(3, "hello").BindBlob(4, blob);
  MEMAUDIT_ASSERT_OK(insert->Run());
  auto select = (*db)->Prepare("SELECT i, d, s, b FROM t");
  MEMAUDIT_ASSERT_OK(select);
  ASSERT_TRUE(*select->Step());
  EXPECT_EQ(select->Int(0), int64_t{1} << 40);
  EXPECT_EQ(select->Double(1), 0.1);
  EXPECT_EQ(select->Text(2), "hello");
  EXPECT_EQ(select->Blob(3), blob);
  EXPECT_FALSE(*select->Step());
}

TEST(SqliteTest, UncommittedTransactionRollsBack) {
  auto db = Database::Open(":memory:");
  MEMAUDIT_ASSERT_OK(db);
  MEMAUDIT_ASSERT_OK((*db)->Exec("CREATE TABLE t (i INTEGER)"));
  {
    Transaction tx(db->get());
    MEMAUDIT_ASSERT_OK(tx.status());
    MEMAUDIT_ASSERT_OK((*db)->Exec("INSERT INTO t VALUES (1)"));
  }
  auto count = (*db)->Prepare("SELECT COUNT(*) FROM t");
  ASSERT_TRUE(*count->Step());
  EXPECT_EQ(count->Int(0), 0);
}

TEST(SqliteTest, ConstraintViolationIsAlreadyExists) {
  auto db = Database::Open(":memory:");
  MEMAUDIT_ASSERT_OK((*db)->Exec("CREATE TABLE t (i INTEGER PRIMARY KEY)"));
  MEMAUDIT_ASSERT_OK((*db)->Exec("INSERT INTO t VALUES (1)"));
  EXPECT_THAT((*db)->Exec("INSERT INTO t VALUES (1)"), StatusIs(absl::StatusCode::kAlreadyExists));
}

TEST(SqliteTest, DataSurvivesReopen) {
  std::string path = ::testing::TempDir() + "/sqlite_test_" + std::to_string(getpid()) + ".db";
  {
    auto db = Database::Open(path);
    MEMAUDIT_ASSERT_OK(db);
    MEMAUDIT_ASSERT_OK((*db)->Exec("CREATE TABLE t (s TEXT); INSERT INTO t VALUES ('kept')"));
  }
  auto db = Database::Open(path);
  auto select = (*db)->Prepare("SELECT s FROM t");
  ASSERT_TRUE(*select->Step());
  EXPECT_EQ(select->Text(0), "kept");
  unlink(path.c_str());
}

}  // namespace
}  // namespace memaudit::sql
