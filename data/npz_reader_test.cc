#include "data/npz_reader.h"

#include <zlib.h>

#include <cstring>
#include <string>
#include <vector>

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

DataSource Npz(const std::string& path, const std::string& features_key = "",
               const std::string& labels_key = "") {
  DataSource source;
  source.format = SourceFormat::kNpz;
  source.path = path;
  source.features_key = features_key;
  source.labels_key = labels_key;
  return source;
}

TEST(NpzReaderTest, ReadsSavezAndSavezCompressed) {
  MEMAUDIT_REQUIRE_NUMPY();
  const std::string dir = testing::ScratchDir();
  ASSERT_TRUE(testing::RunNumpy(dir, R"(
rng = np.random.default_rng(5)
x = rng.standard_normal((50, 3, 4)).astype(np.float32)
y = rng.integers(0, 3, 50); y[0] = 2
x.tofile('x.raw'); y.astype(np.uint8).tofile('y.raw')
np.savez('stored.npz', x=x, y=y)
np.savez_compressed('deflated.npz', x=x, y=y)
np.savez('keys.npz', feats=(x * 255).clip(0, 255).astype(np.uint8), labs=y.astype(np.int32))
)"));
  const std::string raw = testing::ReadFile(dir + "/x.raw");
  const std::string labels = testing::ReadFile(dir + "/y.raw");
  for (const char* name : {"stored.npz", "deflated.npz"}) {
    auto data = LoadDataSource(Npz(dir + "/" + name));
    MEMAUDIT_ASSERT_OK(data);
    EXPECT_EQ((*data)->count, 50u);
    EXPECT_EQ((*data)->features, 12u);
    EXPECT_EQ((*data)->shape, (std::vector<uint32_t>{3, 4}));
    EXPECT_EQ((*data)->classes, 3u);
    ASSERT_EQ((*data)->values.size() * 4, raw.size());
    EXPECT_EQ(std::memcmp((*data)->values.data(), raw.data(), raw.size()), 0) << name;
    EXPECT_EQ(std::string((*data)->labels.begin(), (*data)->labels.end()), labels);
  }
  auto keys = LoadDataSource(Npz(dir + "/keys.npz", "feats", "labs"));
  MEMAUDIT_ASSERT_OK(keys);
  EXPECT_EQ((*keys)->pixels.size(), 600u);
  EXPECT_TRUE((*keys)->values.empty());
}

TEST(NpzReaderTest, MissingEntriesAndCorruptionAreNamed) {
  MEMAUDIT_REQUIRE_NUMPY();
  const std::string dir = testing::ScratchDir();
  ASSERT_TRUE(testing::RunNumpy(dir, R"(
x = np.full((4, 3), 1.5, dtype=np.float32)
y = np.array([0, 1, 0, 1])
np.savez('ab.npz', a=x, b=y)
np.savez('xy.npz', x=x, y=y)
np.savez_compressed('xyz.npz', x=x, y=y)
)"));
  const std::string ab = dir + "/ab.npz";
  EXPECT_THAT(LoadDataSource(Npz(ab)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "features_key: " + ab + " has no entry 'x.npy' (entries: a.npy, b.npy)"));
  EXPECT_THAT(LoadDataSource(Npz(ab, "a")).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "labels_key: " + ab + " has no entry 'y.npy' (entries: a.npy, b.npy)"));
  MEMAUDIT_EXPECT_OK(LoadDataSource(Npz(ab, "a", "b")));

  // One payload byte flipped: the stored entry fails its CRC.
  std::string bytes = testing::ReadFile(dir + "/xy.npz");
  const std::string one_and_a_half("\x00\x00\xc0\x3f", 4);
  const size_t at = bytes.find(one_and_a_half);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 2] ^= 0x01;
  EXPECT_THAT(
      ParseNpz(bytes, "xy.npz", "x", "y"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(StartsWith("features_key: xy.npz entry 'x.npy'"), HasSubstr("CRC-32"))));
  EXPECT_THAT(
      ParseNpz("PK not a zip at all", "z.npz", "x", "y"),
      StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("path: z.npz is not a zip archive")));
  // Garbled deflate data: a zlib error or a failed CRC, named for the key.
  std::string deflated = testing::ReadFile(dir + "/xyz.npz");
  for (size_t i = 60; i < 70; ++i) deflated[i] ^= 0x5a;
  EXPECT_THAT(ParseNpz(deflated, "xyz.npz", "x", "y"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("features_key: xyz.npz entry 'x.npy'")));
}

std::string Le(uint64_t v, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  return out;
}

std::string NpyBytes(const std::string& header, const std::string& payload) {
  return std::string("\x93NUMPY\x01\x00", 8) + Le(header.size(), 2) + header + payload;
}

struct FakeEntry {
  std::string name;
  std::string data;           // as stored in the archive
  uint64_t uncompressed = 0;  // stated
  uint16_t method = 0;
  uint32_t crc = 0;
};

FakeEntry Stored(const std::string& name, const std::string& data) {
  return {name, data, data.size(), 0,
          static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(data.data()),
                                      static_cast<uInt>(data.size())))};
}

// An archive whose every size and offset goes through ZIP64 records (the
// 32-bit fields all 0xFFFFFFFF, the counts 0xFFFF), which Python's zipfile
// writes for archives past 4 GiB or 65535 entries.
std::string Zip64Archive(const std::vector<FakeEntry>& entries) {
  std::string out, central;
  for (const FakeEntry& e : entries) {
    const uint64_t offset = out.size();
    out += Le(0x04034b50, 4) + Le(45, 2) + Le(0, 2) + Le(e.method, 2) + Le(0, 4) + Le(e.crc, 4) +
           Le(0xFFFFFFFF, 4) + Le(0xFFFFFFFF, 4) + Le(e.name.size(), 2) + Le(20, 2) + e.name +
           Le(1, 2) + Le(16, 2) + Le(e.uncompressed, 8) + Le(e.data.size(), 8) + e.data;
    central += Le(0x02014b50, 4) + Le(45, 2) + Le(45, 2) + Le(0, 2) + Le(e.method, 2) + Le(0, 4) +
               Le(e.crc, 4) + Le(0xFFFFFFFF, 4) + Le(0xFFFFFFFF, 4) + Le(e.name.size(), 2) +
               Le(28, 2) + Le(0, 2) + Le(0, 2) + Le(0, 2) + Le(0, 4) + Le(0xFFFFFFFF, 4) + e.name +
               Le(1, 2) + Le(24, 2) + Le(e.uncompressed, 8) + Le(e.data.size(), 8) + Le(offset, 8);
  }
  const uint64_t dir_at = out.size();
  out += central;
  const uint64_t z64_at = out.size();
  out += Le(0x06064b50, 4) + Le(44, 8) + Le(45, 2) + Le(45, 2) + Le(0, 4) + Le(0, 4) +
         Le(entries.size(), 8) + Le(entries.size(), 8) + Le(central.size(), 8) + Le(dir_at, 8);
  out += Le(0x07064b50, 4) + Le(0, 4) + Le(z64_at, 8) + Le(1, 4);
  out += Le(0x06054b50, 4) + Le(0, 2) + Le(0, 2) + Le(0xFFFF, 2) + Le(0xFFFF, 2) +
         Le(0xFFFFFFFF, 4) + Le(0xFFFFFFFF, 4) + Le(0, 2);
  return out;
}

TEST(NpzReaderTest, ReadsZip64DirectoriesAndRefusesImpossibleSizes) {
  const std::string x =
      NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
               Le(0x3f800000, 4) + Le(0x40000000, 4) + Le(0x40400000, 4) + Le(0x40800000, 4));
  const std::string y =
      NpyBytes("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", Le(1, 8) + Le(0, 8));
  const std::string archive = Zip64Archive({Stored("x.npy", x), Stored("y.npy", y)});
  auto data = ParseNpz(archive, "z64.npz", "x", "y");
  MEMAUDIT_ASSERT_OK(data);
  EXPECT_EQ(data->values, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(data->labels, (std::vector<uint8_t>{1, 0}));
  // NumPy agrees that the archive is well formed.
  if (testing::HaveNumpy()) {
    const std::string dir = testing::ScratchDir();
    testing::WriteFile(dir + "/z64.npz", archive);
    EXPECT_TRUE(testing::RunNumpy(dir, R"(
z = np.load('z64.npz')
assert z['x'].tolist() == [[1, 2], [3, 4]] and z['y'].tolist() == [1, 0]
)"));
  }

  // A deflate entry that claims 3 GiB from a few bytes, and one past 4 GiB:
  // refused before anything is allocated.
  FakeEntry bomb = Stored("x.npy", std::string("\x03\x00", 2));
  bomb.method = 8;
  bomb.uncompressed = uint64_t{3} << 30;
  EXPECT_THAT(
      ParseNpz(Zip64Archive({bomb, Stored("y.npy", y)}), "b.npz", "x", "y"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than deflate can produce")));
  bomb.uncompressed = uint64_t{5} << 30;
  EXPECT_THAT(ParseNpz(Zip64Archive({bomb, Stored("y.npy", y)}), "b.npz", "x", "y"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at most 4294967296")));
  FakeEntry duplicate = Stored("y.npy", y);
  EXPECT_THAT(ParseNpz(Zip64Archive({Stored("x.npy", x), duplicate, duplicate}), "d.npz", "x", "y"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("two entries named")));
}

}  // namespace
}  // namespace memaudit::data
