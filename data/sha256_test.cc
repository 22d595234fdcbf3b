#include "data/sha256.h"

#include <string>

#include "data/test_util.h"
#include "gtest/gtest.h"

namespace memaudit::data {
namespace {

// FIPS 180-4 examples (NIST CSRC) and the one-million-'a' vector.
TEST(Sha256Test, MatchesFipsVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// The SHA extensions' rounds (where this CPU has them) against the portable
// rounds on every length up to a few blocks and on large pseudo-random
// inputs; the FIPS vectors above pin both, the portable ones here too.
TEST(Sha256Test, ShaExtensionsAgreeWithThePortableRounds) {
  EXPECT_EQ(internal::PortableSha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(internal::PortableSha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  std::string bytes;
  uint64_t x = 88172645463325252ULL;
  for (int i = 0; i < 3 * 1024 * 1024 + 17; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    bytes.push_back(static_cast<char>(x));
  }
  for (size_t n = 0; n <= 300; ++n) {
    ASSERT_EQ(Sha256Hex(bytes.substr(0, n)), internal::PortableSha256Hex(bytes.substr(0, n))) << n;
  }
  EXPECT_EQ(Sha256Hex(bytes), internal::PortableSha256Hex(bytes));
  if (!internal::UsesShaExtensions()) GTEST_SKIP() << "no SHA extensions: one path only";
}

TEST(Sha256Test, PiecewiseUpdatesEqualOneCall) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text.push_back(static_cast<char>(i * 31 + 7));
  const std::string whole = Sha256Hex(text);
  // Piece sizes that straddle the 64-byte block and the 56-byte padding edge.
  for (size_t piece : {1u, 3u, 55u, 56u, 63u, 64u, 65u, 200u}) {
    Sha256 hash;
    for (size_t at = 0; at < text.size(); at += piece) {
      hash.Update(absl::string_view(text).substr(at, piece));
    }
    EXPECT_EQ(DigestHex(hash.Finish()), whole) << "pieces of " << piece;
  }
}

// Every length across the padding edges (55, 56, 63, 64 ...) against Python's
// hashlib.
TEST(Sha256Test, AgreesWithHashlibAtEveryShortLength) {
  const std::string out = testing::CommandOutput(
      "/usr/bin/python3 -c \"import hashlib\n"
      "for n in range(200): print(hashlib.sha256(bytes((i * 7 + 3) % 256 for i in "
      "range(n))).hexdigest())\" 2>/dev/null");
  if (out.empty()) GTEST_SKIP() << "/usr/bin/python3 is not installed";
  std::string data;
  size_t at = 0;
  for (int n = 0; n < 200; ++n) {
    ASSERT_LE(at + 64, out.size());
    EXPECT_EQ(Sha256Hex(data), out.substr(at, 64)) << "length " << n;
    at += 65;
    data.push_back(static_cast<char>((n * 7 + 3) % 256));
  }
}

TEST(Sha256Test, AgreesWithSha256sumOnAFile) {
  std::string bytes;
  uint32_t x = 12345;
  for (int i = 0; i < 300001; ++i) {
    x = x * 1664525u + 1013904223u;
    bytes.push_back(static_cast<char>(x >> 24));
  }
  const std::string path = testing::ScratchDir() + "/random.bin";
  testing::WriteFile(path, bytes);
  const std::string out = testing::CommandOutput("sha256sum " + path + " 2>/dev/null");
  if (out.size() < 64) GTEST_SKIP() << "sha256sum is not installed";
  EXPECT_EQ(Sha256Hex(testing::ReadFile(path)), out.substr(0, 64));
}

}  // namespace
}  // namespace memaudit::data
