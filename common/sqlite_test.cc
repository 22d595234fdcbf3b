#include "common/sqlite.h"

#include <unistd.h>

#include "gtest/gtest.h"

namespace memaudit::sql {
namespace {

TEST(SqliteTest, RoundTripsTypesAndBlobs) {
  auto db = Database::Open(":memory:");
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE((*db)->Exec("CREATE TABLE t (i INTEGER, d REAL, s TEXT, b BLOB)").ok());
  auto insert = (*db)->Prepare("INSERT INTO t VALUES (?, ?, ?, ?)");
  ASSERT_TRUE(insert.ok());
  std::string blob("a\0b", 3);
  insert->Bind(1, int64_t{1} << 40).Bind(2, 0.1).Bind(3, "hello").BindBlob(4, blob);
  ASSERT_TRUE(insert->Run().ok());
  auto select = (*db)->Prepare("SELECT i, d, s, b FROM t");
  ASSERT_TRUE(select.ok());
  ASSERT_TRUE(*select->Step());
  EXPECT_EQ(select->Int(0), int64_t{1} << 40);
  EXPECT_EQ(select->Double(1), 0.1);
  EXPECT_EQ(select->Text(2), "hello");
  EXPECT_EQ(select->Blob(3), blob);
  EXPECT_FALSE(*select->Step());
}

TEST(SqliteTest, UncommittedTransactionRollsBack) {
  auto db = Database::Open(":memory:");
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Exec("CREATE TABLE t (i INTEGER)").ok());
  {
    Transaction tx(db->get());
    ASSERT_TRUE(tx.status().ok());
    ASSERT_TRUE((*db)->Exec("INSERT INTO t VALUES (1)").ok());
  }
  auto count = (*db)->Prepare("SELECT COUNT(*) FROM t");
  ASSERT_TRUE(*count->Step());
  EXPECT_EQ(count->Int(0), 0);
}

TEST(SqliteTest, ConstraintViolationIsAlreadyExists) {
  auto db = Database::Open(":memory:");
  ASSERT_TRUE((*db)->Exec("CREATE TABLE t (i INTEGER PRIMARY KEY)").ok());
  ASSERT_TRUE((*db)->Exec("INSERT INTO t VALUES (1)").ok());
  EXPECT_EQ((*db)->Exec("INSERT INTO t VALUES (1)").code(), absl::StatusCode::kAlreadyExists);
}

TEST(SqliteTest, DataSurvivesReopen) {
  std::string path = testing::TempDir() + "/sqlite_test_" + std::to_string(getpid()) + ".db";
  {
    auto db = Database::Open(path);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("CREATE TABLE t (s TEXT); INSERT INTO t VALUES ('kept')").ok());
  }
  auto db = Database::Open(path);
  auto select = (*db)->Prepare("SELECT s FROM t");
  ASSERT_TRUE(*select->Step());
  EXPECT_EQ(select->Text(0), "kept");
  unlink(path.c_str());
}

}  // namespace
}  // namespace memaudit::sql
