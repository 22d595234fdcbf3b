#include "data/npy_reader.h"

#include <cstring>
#include <string>

#include "common/testing/status_matchers.h"
#include "data/data_source.h"
#include "data/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::data {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

DataSource Npy(const std::string& dir, const std::string& x, const std::string& y) {
  DataSource source;
  source.format = SourceFormat::kNpy;
  source.path = dir + "/" + x;
  source.labels_path = dir + "/" + y;
  return source;
}

// Features of each dtype NumPy saves, compared with the raw little-endian
// float32 (or uint8) bytes NumPy writes beside them.
TEST(NpyReaderTest, ReadsWhatNumpySaves) {
  MEMAUDIT_REQUIRE_NUMPY();
  const std::string dir = testing::ScratchDir();
  ASSERT_TRUE(testing::RunNumpy(dir, R"(
rng = np.random.default_rng(3)
x32 = rng.standard_normal((7, 2, 3)).astype(np.float32)
np.save('x32.npy', x32); x32.tofile('x32.raw')
x64 = rng.standard_normal((7, 5)) * 1e3
np.save('x64.npy', x64); x64.astype(np.float32).tofile('x64.raw')
xu8 = rng.integers(0, 256, (7, 4, 4, 3), dtype=np.uint8)
np.save('xu8.npy', xu8); xu8.tofile('xu8.raw')
np.save('x1.npy', np.arange(7, dtype=np.float32))
np.save('y.npy', np.array([0, 1, 2, 1, 0, 2, 4], dtype=np.int64))
np.save('y8.npy', np.array([0, 1, 2, 1, 0, 2, 4], dtype=np.uint8))
np.save('yi2.npy', np.array([0, 1, 2, 1, 0, 2, 4], dtype=np.int16))
)"));
  const std::vector<uint8_t> labels = {0, 1, 2, 1, 0, 2, 4};

  auto x32 = LoadDataSource(Npy(dir, "x32.npy", "y.npy"));
  MEMAUDIT_ASSERT_OK(x32);
  EXPECT_EQ((*x32)->count, 7u);
  EXPECT_EQ((*x32)->features, 6u);
  EXPECT_EQ((*x32)->shape, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ((*x32)->classes, 5u);
  EXPECT_EQ((*x32)->labels, labels);
  EXPECT_TRUE((*x32)->pixels.empty());
  const std::string raw32 = testing::ReadFile(dir + "/x32.raw");
  ASSERT_EQ((*x32)->values.size() * 4, raw32.size());
  EXPECT_EQ(std::memcmp((*x32)->values.data(), raw32.data(), raw32.size()), 0);
  EXPECT_THAT((*x32)->content_hash, StartsWith("sha256:"));

  auto x64 = LoadDataSource(Npy(dir, "x64.npy", "y8.npy"));
  MEMAUDIT_ASSERT_OK(x64);
  EXPECT_EQ((*x64)->shape, (std::vector<uint32_t>{5}));
  const std::string raw64 = testing::ReadFile(dir + "/x64.raw");
  ASSERT_EQ((*x64)->values.size() * 4, raw64.size());
  EXPECT_EQ(std::memcmp((*x64)->values.data(), raw64.data(), raw64.size()), 0)
      << "float64 -> float32 must round as NumPy's astype does";
  EXPECT_EQ((*x64)->labels, labels);

  auto xu8 = LoadDataSource(Npy(dir, "xu8.npy", "yi2.npy"));
  MEMAUDIT_ASSERT_OK(xu8);
  EXPECT_EQ((*xu8)->shape, (std::vector<uint32_t>{4, 4, 3}));
  EXPECT_EQ((*xu8)->features, 48u);
  EXPECT_TRUE((*xu8)->values.empty());
  const std::string rawu8 = testing::ReadFile(dir + "/xu8.raw");
  EXPECT_EQ(std::string((*xu8)->pixels.begin(), (*xu8)->pixels.end()), rawu8);

  auto x1 = LoadDataSource(Npy(dir, "x1.npy", "y.npy"));
  MEMAUDIT_ASSERT_OK(x1);
  EXPECT_EQ((*x1)->features, 1u);
  EXPECT_EQ((*x1)->shape, (std::vector<uint32_t>{1}));
  EXPECT_EQ((*x1)->values[6], 6.0f);
}

TEST(NpyReaderTest, ReadsFormatVersions2And3) {
  MEMAUDIT_REQUIRE_NUMPY();
  const std::string dir = testing::ScratchDir();
  ASSERT_TRUE(testing::RunNumpy(dir, R"(
x = np.arange(12, dtype=np.float32).reshape(4, 3)
for v in (2, 3):
    with open(f'x{v}.npy', 'wb') as f:
        np.lib.format.write_array(f, x, version=(v, 0))
np.save('y.npy', np.array([1, 0, 1, 0]))
)"));
  for (const char* name : {"x2.npy", "x3.npy"}) {
    const std::string bytes = testing::ReadFile(dir + "/" + name);
    ASSERT_GT(bytes.size(), 8u);
    EXPECT_EQ(bytes[6], name[1] - '0') << name;
    auto data = LoadDataSource(Npy(dir, name, "y.npy"));
    MEMAUDIT_ASSERT_OK(data);
    EXPECT_EQ((*data)->count, 4u);
    EXPECT_EQ((*data)->values[11], 11.0f);
  }
}

TEST(NpyReaderTest, RefusesWhatItCannotTrainOnNamingTheFieldAndTheNumbers) {
  MEMAUDIT_REQUIRE_NUMPY();
  const std::string dir = testing::ScratchDir();
  ASSERT_TRUE(testing::RunNumpy(dir, R"(
x = np.arange(3000, dtype=np.float32).reshape(1000, 3)
np.save('x.npy', x)
np.save('xf.npy', np.asfortranarray(x))
np.save('xi.npy', x.astype(np.int32))
np.save('xnan.npy', np.array([[1.0, np.nan], [2.0, 3.0]], dtype=np.float32))
np.save('xbig.npy', np.array([[1.0, 1e300], [2.0, 3.0]]))
np.save('y.npy', np.arange(1000) % 10)
np.save('y999.npy', np.arange(999) % 10)
np.save('yf.npy', (np.arange(1000) % 10).astype(np.float64))
np.save('y2d.npy', (np.arange(1000) % 10).reshape(1000, 1))
y300 = np.arange(1000) % 10; y300[5] = 300
np.save('y300.npy', y300)
yneg = np.arange(1000) % 10; yneg[7] = -1
np.save('yneg.npy', yneg)
np.save('yone.npy', np.zeros(1000, dtype=np.int64))
np.save('x2.npy', np.zeros((2, 2), dtype=np.float32))
np.save('y2.npy', np.array([0, 1]))
)"));
  auto error = [&](const std::string& x, const std::string& y) {
    return LoadDataSource(Npy(dir, x, y)).status();
  };
  EXPECT_THAT(error("xf.npy", "y.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(StartsWith("path: " + dir + "/xf.npy is in Fortran order"),
                             HasSubstr("C order is needed"))));
  EXPECT_THAT(error("x.npy", "yf.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(StartsWith("labels_path: " + dir + "/yf.npy has dtype '<f8'"),
                             HasSubstr("labels must be integers"))));
  EXPECT_THAT(
      error("x.npy", "y999.npy"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "labels_path: " + dir + "/y999.npy has 999 rows where the features have 1000"));
  EXPECT_THAT(error("x.npy", "y300.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "labels_path: " + dir +
                           "/y300.npy has label 300 at row 5; labels must be in [0, 255]"));
  EXPECT_THAT(error("x.npy", "yneg.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has label -1 at row 7")));
  EXPECT_THAT(error("x.npy", "y2d.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("labels_path: " + dir + "/y2d.npy has shape (1000, 1)")));
  EXPECT_THAT(error("x.npy", "yone.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has one class")));
  EXPECT_THAT(error("xi.npy", "y.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("path: " + dir + "/xi.npy has dtype '<i4'; features must be")));
  EXPECT_THAT(error("xnan.npy", "y2.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("non-finite value (nan) at row 0, feature 1")));
  EXPECT_THAT(error("xbig.npy", "y2.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of float32 range")));
  EXPECT_THAT(error("missing.npy", "y.npy"),
              StatusIs(absl::StatusCode::kNotFound, "path: " + dir + "/missing.npy not found"));
  EXPECT_THAT(
      error("x.npy", "missing.npy"),
      StatusIs(absl::StatusCode::kNotFound, "labels_path: " + dir + "/missing.npy not found"));
  MEMAUDIT_EXPECT_OK(LoadDataSource(Npy(dir, "x2.npy", "y2.npy")));
}

std::string NpyBytes(const std::string& header, const std::string& payload) {
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  return bytes + header + payload;
}

TEST(NpyReaderTest, ParsesHeadersStrictly) {
  const std::string four(16, '\0');
  auto parse = [](const std::string& bytes) { return ParseNpy(bytes, "path: t.npy"); };
  auto ok = parse(NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }\n", four));
  MEMAUDIT_ASSERT_OK(ok);
  EXPECT_EQ(ok->shape, (std::vector<uint64_t>{2, 2}));
  EXPECT_EQ(ok->dtype, NpyDtype::kFloat32);
  // Python 2's long integers, double quotes, no trailing comma.
  MEMAUDIT_EXPECT_OK(
      parse(NpyBytes("{\"shape\": (4L,), \"fortran_order\": False, \"descr\": \"<i4\"}", four)));
  EXPECT_THAT(parse("not numpy"), StatusIs(absl::StatusCode::kInvalidArgument,
                                           StartsWith("path: t.npy is not a .npy")));
  EXPECT_THAT(parse(NpyBytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", four)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("big-endian")));
  EXPECT_THAT(parse(NpyBytes("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", four)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dtype '<c8'")));
  EXPECT_THAT(
      parse(NpyBytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", four)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("structured dtype")));
  EXPECT_THAT(parse(NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", four)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "path: t.npy has 16 data bytes where shape (2, 3) of '<f4' needs 24"));
  EXPECT_THAT(parse(NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': "
                             "(4611686018427387904, 4611686018427387904), }",
                             four)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs more than 2^62")));
  EXPECT_THAT(parse(NpyBytes("{'descr': '<f4', 'shape': (4,), }", four)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lacks one of")));
  EXPECT_THAT(parse(NpyBytes("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
                             "'shape': (4,), }",
                             four)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("repeated key")));
  std::string truncated =
      NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", four);
  truncated.resize(30);
  EXPECT_THAT(parse(truncated),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("header of")));
  std::string v9 = NpyBytes("{}", "");
  v9[6] = 9;
  EXPECT_THAT(parse(v9), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("version 9.0")));
}

TEST(NpyReaderTest, PairParsesBytesWithoutFiles) {
  const std::string x = NpyBytes("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }",
                                 std::string("\x00\x01\x02\xfd\xfe\xff", 6));
  const std::string y = NpyBytes("{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }",
                                 std::string("\x01\x00", 2));
  auto data = ParseNpyPair(x, "x.npy", y, "y.npy");
  MEMAUDIT_ASSERT_OK(data);
  EXPECT_EQ(data->pixels, (std::vector<uint8_t>{0, 1, 2, 253, 254, 255}));
  EXPECT_EQ(data->labels, (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(data->classes, 2u);
  EXPECT_TRUE(data->content_hash.empty());
}

}  // namespace
}  // namespace memaudit::data
