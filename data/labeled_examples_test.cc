#include "data/labeled_examples.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <fstream>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::data {
namespace {

using ::memaudit::testing::StatusIs;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
}

std::string IdxBytes() {
  // Magic 0x00000803 (unsigned byte, rank 3), dims 2 x 2 x 3, then 12 bytes.
  std::string bytes = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3};
  for (char c = 0; c < 12; ++c) bytes.push_back(c);
  return bytes;
}

TEST(LabeledExamplesTest, ReadsPlainAndGzipIdx) {
  const std::string plain = TempPath("a.idx");
  std::ofstream(plain, std::ios::binary) << IdxBytes();
  const std::string gz = TempPath("a.idx.gz");
  gzFile f = gzopen(gz.c_str(), "wb");
  const std::string bytes = IdxBytes();
  gzwrite(f, bytes.data(), bytes.size());
  gzclose(f);
  for (const std::string& path : {plain, gz}) {
    auto idx = ReadIdxFile(path);
    MEMAUDIT_ASSERT_OK(idx);
    EXPECT_EQ(idx->dims, (std::vector<uint32_t>{2, 2, 3}));
    ASSERT_EQ(idx->data.size(), 12u);
    EXPECT_EQ(idx->data[11], 11);
  }
}

// The one-call decoder takes a plain single-member gzip file; others (two
// members, a trailer that misstates the size) go to zlib's stream, which
// reads the former and refuses the latter, with no allocation of the claim.
TEST(LabeledExamplesTest, GzipFilesOfEveryFormAreReadOrRefused) {
  const std::string bytes = IdxBytes();
  const std::string two = TempPath("two.idx.gz");
  {
    gzFile f = gzopen(two.c_str(), "wb");
    gzwrite(f, bytes.data(), 10);
    gzclose(f);
    f = gzopen(two.c_str(), "ab");
    gzwrite(f, bytes.data() + 10, bytes.size() - 10);
    gzclose(f);
  }
  auto idx = ReadIdxFile(two);
  MEMAUDIT_ASSERT_OK(idx);
  EXPECT_EQ(idx->data.size(), 12u);
  EXPECT_EQ(idx->data[11], 11);

  const std::string lying = TempPath("lying.idx.gz");
  gzFile f = gzopen(lying.c_str(), "wb");
  gzwrite(f, bytes.data(), bytes.size());
  gzclose(f);
  std::fstream edit(lying, std::ios::binary | std::ios::in | std::ios::out);
  edit.seekp(-4, std::ios::end);
  edit.write("\xff\xff\xff\x7f", 4);  // ISIZE: 2 GiB
  edit.close();
  EXPECT_THAT(ReadIdxFile(lying), StatusIs(absl::StatusCode::kDataLoss));
}

TEST(LabeledExamplesTest, RejectsBadMagicAndTruncation) {
  const std::string bad = TempPath("bad.idx");
  std::ofstream(bad, std::ios::binary) << std::string("\x01\x02\x08\x01", 4);
  EXPECT_THAT(ReadIdxFile(bad), StatusIs(absl::StatusCode::kDataLoss));
  const std::string truncated = TempPath("short.idx");
  std::ofstream(truncated, std::ios::binary) << IdxBytes().substr(0, 20);
  EXPECT_THAT(ReadIdxFile(truncated), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(ReadIdxFile(TempPath("missing")), StatusIs(absl::StatusCode::kNotFound));
}

TEST(LabeledExamplesTest, LoadsFashionMnistFromTheDebianPackage) {
  auto data = LoadMnistLayout(kFashionMnistDir, "train");
  MEMAUDIT_ASSERT_OK(data) << "run scripts/install-deps.sh";
  EXPECT_EQ((*data)->count, 60000u);
  EXPECT_EQ((*data)->features, 784u);
  EXPECT_EQ((*data)->classes, 10u);
  EXPECT_EQ((*data)->shape, (std::vector<uint32_t>{28, 28}));
  EXPECT_EQ((*data)->pixels.size(), 60000u * 784u);
  EXPECT_TRUE((*data)->values.empty());
  auto again = LoadMnistLayout(kFashionMnistDir, "train");
  EXPECT_EQ(*again, *data) << "second load must come from the cache";
}

// The directory layout with un-gzipped files (as some mirrors ship it).
TEST(LabeledExamplesTest, LoadsAnUngzippedMnistLayout) {
  const std::string dir = TempPath("plain_layout");
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  // Two 2 x 3 images and their labels 1 and 0.
  std::string images = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3};
  for (char c = 0; c < 12; ++c) images.push_back(c);
  std::ofstream(dir + "/t10k-images-idx3-ubyte", std::ios::binary) << images;
  std::ofstream(dir + "/t10k-labels-idx1-ubyte", std::ios::binary)
      << std::string({0, 0, 8, 1, 0, 0, 0, 2, 1, 0});
  auto data = LoadMnistLayout(dir, "t10k");
  MEMAUDIT_ASSERT_OK(data);
  EXPECT_EQ((*data)->count, 2u);
  EXPECT_EQ((*data)->features, 6u);
  EXPECT_EQ((*data)->shape, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ((*data)->classes, 2u);
  EXPECT_EQ((*data)->labels, (std::vector<uint8_t>{1, 0}));
}

TEST(LabeledExamplesTest, DimensionsAreCheckedAgainstTheLimits) {
  MEMAUDIT_EXPECT_OK(CheckDimensions(1, 1, "w"));
  MEMAUDIT_EXPECT_OK(CheckDimensions(kMaxRows, 1, "w"));
  MEMAUDIT_EXPECT_OK(CheckDimensions(2048, kMaxFeatures, "w"));
  EXPECT_THAT(CheckDimensions(0, 5, "path: /d/x"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                            "path: /d/x has 0 rows; between 1 and "
                                                            "2147483647 are read"));
  EXPECT_THAT(CheckDimensions(kMaxRows + 1, 1, "w"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(CheckDimensions(5, 0, "w"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(CheckDimensions(5, kMaxFeatures + 1, "w"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(CheckDimensions(2049, kMaxFeatures, "w"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr("2049 rows of 1048576 values")));
}

}  // namespace
}  // namespace memaudit::data
