#include "common/base/sqlite.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::sql {
namespace {

using ::memaudit::testing::IsOk;
using ::memaudit::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// A path in the test temp dir named after the running test, with no file yet.
std::string FreshPath() {
  const std::string path = ::testing::TempDir() + "/sqlite_test_" + std::to_string(getpid()) + "_" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

int64_t FileSize(const std::string& path) {
  struct stat file;
  return stat(path.c_str(), &file) == 0 ? static_cast<int64_t>(file.st_size) : -1;
}

// A database of several hundred KB, written and closed (checkpointed).
void WriteSomeRows(const std::string& path) {
  auto db = Database::Open(path);
  ASSERT_THAT(db, IsOk());
  ASSERT_THAT((*db)->Exec("CREATE TABLE t (i INTEGER PRIMARY KEY, s TEXT);"
                          "CREATE INDEX t_by_s ON t(s);"),
              IsOk());
  Transaction tx(db->get());
  auto insert = (*db)->Prepare("INSERT INTO t VALUES (?, ?)");
  ASSERT_THAT(insert, IsOk());
  for (int64_t i = 0; i < 5000; ++i) {
    insert->Reset();
    insert->Bind(1, i).Bind(2, std::string(40 + i % 50, static_cast<char>('a' + i % 26)));
    ASSERT_THAT(insert->Run(), IsOk());
  }
  ASSERT_THAT(tx.Commit(), IsOk());
}

// Overwrites `bytes` bytes in the middle of the file with random bytes.
void Scribble(const std::string& path, int64_t bytes) {
  const int64_t size = FileSize(path);
  ASSERT_GT(size, 2 * bytes);
  std::mt19937 rng(12);
  std::string noise(static_cast<size_t>(bytes), '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(size / 2 - bytes / 2);
  file.write(noise.data(), static_cast<std::streamsize>(noise.size()));
  ASSERT_TRUE(file.good());
}

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

TEST(SqliteTest, FullDatabaseIsResourceExhaustedAndRetryableOnceThereIsRoom) {
  const std::string path = FreshPath();
  auto db = Database::Open(path);
  MEMAUDIT_ASSERT_OK(db);
  MEMAUDIT_ASSERT_OK((*db)->Exec("CREATE TABLE t (i INTEGER PRIMARY KEY, s TEXT)"));
  // SQLite's own "database or disk is full" (SQLITE_FULL), as on ENOSPC,
  // without filling a real disk: the file may not grow past its pages now.
  auto pages = (*db)->Prepare("PRAGMA page_count");
  MEMAUDIT_ASSERT_OK(pages);
  ASSERT_TRUE(*pages->Step());
  const int64_t cap = pages->Int(0) + 4;
  MEMAUDIT_ASSERT_OK((*db)->Exec("PRAGMA max_page_count = " + std::to_string(cap)));
  auto insert = (*db)->Prepare("INSERT INTO t (s) VALUES (?)");
  MEMAUDIT_ASSERT_OK(insert);
  const std::string row(1000, 'x');
  absl::Status full;
  for (int i = 0; i < 1000 && full.ok(); ++i) {
    insert->Reset();
    insert->Bind(1, row);
    full = insert->Run();
  }
  EXPECT_THAT(full, StatusIs(absl::StatusCode::kResourceExhausted,
                             AllOf(HasSubstr("disk full"), HasSubstr("database or disk is full"),
                                   HasSubstr("retried once space is freed"))));
  EXPECT_TRUE(IsDiskFull(full));
  // Other RESOURCE_EXHAUSTED (a quota) is not a full disk.
  EXPECT_FALSE(IsDiskFull(absl::ResourceExhaustedError("quota: at most 4 audits")));
  EXPECT_FALSE(IsDiskFull(absl::InternalError("disk full")));

  // Once there is room again, the same write goes through.
  MEMAUDIT_ASSERT_OK((*db)->Exec("PRAGMA max_page_count = " + std::to_string(cap + 100)));
  insert->Reset();
  insert->Bind(1, row);
  MEMAUDIT_EXPECT_OK(insert->Run());
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
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

TEST(SqliteTest, MissingFileIsCreated) {
  const std::string path = FreshPath();
  ASSERT_EQ(FileSize(path), -1);
  MEMAUDIT_ASSERT_OK(Database::Open(path));
  EXPECT_GT(FileSize(path), 0);  // WAL mode is recorded in the file's header
  MEMAUDIT_EXPECT_OK(Database::Open(path));
  std::remove(path.c_str());
}

TEST(SqliteTest, EmptyFileIsRefusedUnlessInitialising) {
  const std::string path = FreshPath();
  std::ofstream(path).close();
  ASSERT_EQ(FileSize(path), 0);
  EXPECT_THAT(Database::Open(path),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(path), HasSubstr("empty file (0 bytes)"),
                             HasSubstr("--init"), HasSubstr("restore it from a backup"))));
  EXPECT_EQ(FileSize(path), 0);  // left as it was

  OpenOptions init;
  init.init_empty_file = true;
  {
    auto db = Database::Open(path, init);
    MEMAUDIT_ASSERT_OK(db);
    MEMAUDIT_ASSERT_OK((*db)->Exec("CREATE TABLE t (i INTEGER); INSERT INTO t VALUES (7)"));
  }
  // No longer empty: opens without --init, and --init on it changes nothing.
  for (const OpenOptions& options : {OpenOptions{}, init}) {
    auto db = Database::Open(path, options);
    MEMAUDIT_ASSERT_OK(db);
    auto select = (*db)->Prepare("SELECT i FROM t");
    MEMAUDIT_ASSERT_OK(select);
    ASSERT_TRUE(*select->Step());
    EXPECT_EQ(select->Int(0), 7);
  }
  std::remove(path.c_str());
}

TEST(SqliteTest, DamagedFileIsRefusedWithTheProblemAndTheRemedy) {
  const std::string path = FreshPath();
  ASSERT_NO_FATAL_FAILURE(WriteSomeRows(path));
  ASSERT_EQ(FileSize(path + "-wal"), -1);  // checkpointed on close
  ASSERT_NO_FATAL_FAILURE(Scribble(path, 8192));
  EXPECT_THAT(Database::Open(path),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path), HasSubstr("is damaged (PRAGMA quick_check: "),
                             HasSubstr("Restore it from a backup"), HasSubstr("move it aside"))));
  OpenOptions init;
  init.init_empty_file = true;  // --init never overrides the check
  EXPECT_THAT(Database::Open(path, init), StatusIs(absl::StatusCode::kDataLoss));
  std::remove(path.c_str());
}

TEST(SqliteTest, FileThatIsNotADatabaseIsRefused) {
  const std::string path = FreshPath();
  std::ofstream(path) << std::string(10000, 'x');
  EXPECT_THAT(Database::Open(path), StatusIs(absl::StatusCode::kDataLoss,
                                             AllOf(HasSubstr(path), HasSubstr("not a database"))));
  EXPECT_EQ(FileSize(path), 10000);  // not overwritten
  std::remove(path.c_str());
}

TEST(SqliteTest, MissingDirectoryIsNamed) {
  const std::string path = FreshPath() + ".d/x.db";
  EXPECT_THAT(Database::Open(path), StatusIs(absl::StatusCode::kUnavailable,
                                             AllOf(HasSubstr(path), HasSubstr("directory"))));
}

}  // namespace
}  // namespace memaudit::sql
