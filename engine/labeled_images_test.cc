#include "engine/labeled_images.h"

#include <unistd.h>
#include <zlib.h>

#include <fstream>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
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

TEST(LabeledImagesTest, ReadsPlainAndGzipIdx) {
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

TEST(LabeledImagesTest, RejectsBadMagicAndTruncation) {
  const std::string bad = TempPath("bad.idx");
  std::ofstream(bad, std::ios::binary) << std::string("\x01\x02\x08\x01", 4);
  EXPECT_THAT(ReadIdxFile(bad), StatusIs(absl::StatusCode::kDataLoss));
  const std::string truncated = TempPath("short.idx");
  std::ofstream(truncated, std::ios::binary) << IdxBytes().substr(0, 20);
  EXPECT_THAT(ReadIdxFile(truncated), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(ReadIdxFile(TempPath("missing")), StatusIs(absl::StatusCode::kNotFound));
}

TEST(LabeledImagesTest, LoadsFashionMnistFromTheDebianPackage) {
  auto data = LoadMnistLayout(kFashionMnistDir, "train");
  MEMAUDIT_ASSERT_OK(data) << "run scripts/install-deps.sh";
  EXPECT_EQ((*data)->count, 60000u);
  EXPECT_EQ((*data)->features, 784u);
  EXPECT_EQ((*data)->classes, 10u);
  auto again = LoadMnistLayout(kFashionMnistDir, "train");
  EXPECT_EQ(*again, *data) << "second load must come from the cache";
}

}  // namespace
}  // namespace memaudit::engine
