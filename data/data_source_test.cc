#include "data/data_source.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <string>

#include "common/testing/status_matchers.h"
#include "data/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::data {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

DataSource Csv(const std::string& path, const std::string& label_column = "") {
  DataSource source;
  source.format = SourceFormat::kCsv;
  source.path = path;
  source.label_column = label_column;
  return source;
}

void SetMtime(const std::string& path, time_t seconds) {
  const struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

// The documented hash, computed by Python's hashlib from the files.
std::string PythonHash(const std::string& items) {
  const std::string out = testing::CommandOutput(
      "/usr/bin/python3 -c \"import hashlib, struct\n"
      "def item(b): return struct.pack('<Q', len(b)) + b\n"
      "print('sha256:' + hashlib.sha256(b''.join(" +
      items + ")).hexdigest())\" 2>/dev/null");
  return out.empty() ? "" : out.substr(0, out.size() - 1);
}

TEST(DataSourceTest, FormatNamesRoundTrip) {
  for (SourceFormat f : {SourceFormat::kFashionMnist, SourceFormat::kIdx, SourceFormat::kCsv,
                         SourceFormat::kNpy, SourceFormat::kNpz}) {
    auto parsed = ParseSourceFormat(SourceFormatName(f));
    MEMAUDIT_ASSERT_OK(parsed);
    EXPECT_EQ(*parsed, f);
  }
  EXPECT_STREQ(SourceFormatName(SourceFormat::kFashionMnist), "fashion_mnist");
  EXPECT_THAT(ParseSourceFormat("parquet"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'parquet' is not one of")));
}

TEST(DataSourceTest, FieldsThatDoNotApplyOrAreMissingAreRefused) {
  DataSource csv = Csv("/d/t.csv");
  csv.labels_path = "/d/y.npy";
  EXPECT_THAT(LoadDataSource(csv), StatusIs(absl::StatusCode::kInvalidArgument,
                                            "labels_path: applies to npy sources only, not csv"));
  DataSource npy;
  npy.format = SourceFormat::kNpy;
  npy.path = "/d/x.npy";
  npy.features_key = "x";
  EXPECT_THAT(LoadDataSource(npy),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("features_key: applies")));
  npy.features_key.clear();
  EXPECT_THAT(LoadDataSource(npy),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("labels_path: required")));
  EXPECT_THAT(LoadDataSource(Csv("")),
              StatusIs(absl::StatusCode::kInvalidArgument, "path: required for csv sources"));
  EXPECT_THAT(LoadDataSource(Csv("/nonexistent/t.csv")),
              StatusIs(absl::StatusCode::kNotFound, "path: /nonexistent/t.csv not found"));
  const std::string dir = testing::ScratchDir();
  EXPECT_THAT(LoadDataSource(Csv(dir)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not a regular file")));
  DataSource idx;
  idx.format = SourceFormat::kIdx;
  idx.path = dir;
  EXPECT_THAT(LoadDataSource(idx),
              StatusIs(absl::StatusCode::kNotFound,
                       "path: " + dir +
                           " has no train-images-idx3-ubyte.gz (nor train-images-idx3-ubyte)"));
}

TEST(DataSourceTest, LoadsFashionMnistWithTheDocumentedHash) {
  struct stat st {};
  if (stat(kFashionMnistDir, &st) != 0) GTEST_SKIP() << "run scripts/install-deps.sh";
  auto data = LoadDataSource(DataSource{});
  MEMAUDIT_ASSERT_OK(data);
  EXPECT_EQ((*data)->count, 60000u);
  EXPECT_EQ((*data)->features, 784u);
  EXPECT_EQ((*data)->classes, 10u);
  EXPECT_EQ((*data)->shape, (std::vector<uint32_t>{28, 28}));
  EXPECT_EQ((*data)->pixels.size(), 60000u * 784u);
  const std::string dir = kFashionMnistDir;
  const std::string expected =
      PythonHash("[item(b'fashion_mnist'), item(open('" + dir +
                 "/train-images-idx3-ubyte.gz', 'rb').read()), item(open('" + dir +
                 "/train-labels-idx1-ubyte.gz', 'rb').read())]");
  if (!expected.empty()) {
    EXPECT_EQ((*data)->content_hash, expected);
  }
  auto again = LoadDataSource(DataSource{});
  MEMAUDIT_ASSERT_OK(again);
  EXPECT_EQ(*again, *data) << "an unchanged source comes from the cache";
  // The same files as an idx source: the same examples, another hash.
  DataSource idx;
  idx.format = SourceFormat::kIdx;
  idx.path = kFashionMnistDir;
  auto as_idx = LoadDataSource(idx);
  MEMAUDIT_ASSERT_OK(as_idx);
  EXPECT_EQ((*as_idx)->labels, (*data)->labels);
  EXPECT_NE((*as_idx)->content_hash, (*data)->content_hash);
}

TEST(DataSourceTest, AReplacedFileIsReadAgain) {
  const std::string path = testing::ScratchDir() + "/t.csv";
  testing::WriteFile(path, "a,label\n1,0\n2,1\n");
  SetMtime(path, 1000000000);
  auto first = LoadDataSource(Csv(path));
  MEMAUDIT_ASSERT_OK(first);
  const std::string expected =
      PythonHash("[item(b'csv'), item(open('" + path + "', 'rb').read()), item(b'label')]");
  if (!expected.empty()) {
    EXPECT_EQ((*first)->content_hash, expected);
  }
  EXPECT_EQ(*LoadDataSource(Csv(path)), *first);
  EXPECT_EQ(*LoadDataSource(Csv(path, "label")), *first) << "\"\" is \"label\"";

  // One byte changed in place, the mtime set back to what it was.
  testing::WriteFile(path, "a,label\n1,0\n3,1\n");
  SetMtime(path, 1000000000);
  auto second = LoadDataSource(Csv(path));
  MEMAUDIT_ASSERT_OK(second);
  EXPECT_NE((*second)->content_hash, (*first)->content_hash);
  EXPECT_EQ((*second)->values[1 * 1], 3.0f);
  EXPECT_EQ((*first)->values[1], 2.0f) << "an earlier result stays valid";

  // Rewritten with the same size and a new mtime.
  testing::WriteFile(path, "a,label\n1,0\n4,1\n");
  SetMtime(path, 1000000100);
  auto third = LoadDataSource(Csv(path));
  MEMAUDIT_ASSERT_OK(third);
  EXPECT_NE((*third)->content_hash, (*second)->content_hash);
  EXPECT_NE((*third)->content_hash, (*first)->content_hash);

  // Back to the first bytes: read again, and the first result is reused.
  testing::WriteFile(path, "a,label\n1,0\n2,1\n");
  auto fourth = LoadDataSource(Csv(path));
  MEMAUDIT_ASSERT_OK(fourth);
  EXPECT_EQ(*fourth, *first);
}

// The coordinator's view: the same facts and hash as a load, re-read when
// the file changes, and the same refusals.
TEST(DataSourceTest, DescribeGivesTheFactsOfALoad) {
  const std::string path = testing::ScratchDir() + "/d.csv";
  testing::WriteFile(path, "a,b,label\n1,2,0\n3,4,2\n5,6,1\n");
  auto loaded = LoadDataSource(Csv(path));
  auto described = DescribeDataSource(Csv(path));
  MEMAUDIT_ASSERT_OK(loaded);
  MEMAUDIT_ASSERT_OK(described);
  EXPECT_EQ(described->count, 3u);
  EXPECT_EQ(described->features, 2u);
  EXPECT_EQ(described->classes, 3u);
  EXPECT_EQ(described->shape, (*loaded)->shape);
  EXPECT_EQ(described->content_hash, (*loaded)->content_hash);

  testing::WriteFile(path, "a,b,label\n1,2,0\n3,4,2\n5,6,1\n7,8,0\n");
  SetMtime(path, 1000000200);
  auto again = DescribeDataSource(Csv(path));
  MEMAUDIT_ASSERT_OK(again);
  EXPECT_EQ(again->count, 4u);
  EXPECT_NE(again->content_hash, described->content_hash);

  testing::WriteFile(path, "a,b,label\n1,x,0\n");
  SetMtime(path, 1000000300);
  EXPECT_THAT(DescribeDataSource(Csv(path)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("path: ")));
}

TEST(DataSourceTest, TheLabelColumnAndKeysArePartOfTheHash) {
  const std::string dir = testing::ScratchDir();
  // Either column as the label leaves the same numbers in the same places.
  testing::WriteFile(dir + "/t.csv", "a,label,other\n1,0,0\n2,1,1\n");
  auto by_label = LoadDataSource(Csv(dir + "/t.csv"));
  auto by_other = LoadDataSource(Csv(dir + "/t.csv", "other"));
  MEMAUDIT_ASSERT_OK(by_label);
  MEMAUDIT_ASSERT_OK(by_other);
  EXPECT_EQ((*by_label)->values, (*by_other)->values);
  EXPECT_NE((*by_label)->content_hash, (*by_other)->content_hash);

  MEMAUDIT_REQUIRE_NUMPY();
  ASSERT_TRUE(testing::RunNumpy(dir, R"(
x = np.arange(6, dtype=np.float32).reshape(3, 2); y = np.array([0, 1, 1])
np.savez('k.npz', x=x, y=y, x2=x, y2=y)
)"));
  DataSource npz;
  npz.format = SourceFormat::kNpz;
  npz.path = dir + "/k.npz";
  auto xy = LoadDataSource(npz);
  npz.features_key = "x2";
  auto x2y = LoadDataSource(npz);
  npz.labels_key = "y2";
  auto x2y2 = LoadDataSource(npz);
  MEMAUDIT_ASSERT_OK(xy);
  MEMAUDIT_ASSERT_OK(x2y);
  MEMAUDIT_ASSERT_OK(x2y2);
  EXPECT_EQ((*xy)->values, (*x2y2)->values);
  EXPECT_NE((*xy)->content_hash, (*x2y)->content_hash);
  EXPECT_NE((*x2y)->content_hash, (*x2y2)->content_hash);
  const std::string expected = PythonHash("[item(b'npz'), item(open('" + npz.path +
                                          "', 'rb').read()), item(b'x2'), item(b'y2')]");
  if (!expected.empty()) {
    EXPECT_EQ((*x2y2)->content_hash, expected);
  }
}

}  // namespace
}  // namespace memaudit::data
