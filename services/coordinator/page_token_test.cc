#include "services/coordinator/page_token.h"

#include <bitset>
#include <cstdint>
#include <string>

#include "absl/strings/escaping.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::coordinator {
namespace {

using ::memaudit::testing::IsOkAndHolds;
using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

CapabilityKey TestKey(char digit = '7') { return *CapabilityKey::FromHex(std::string(64, digit)); }

void ExpectRefused(const absl::StatusOr<uint64_t>& decoded) {
  EXPECT_THAT(decoded, StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("page_token: not a token this coordinator gave you (")));
}

TEST(PageTokenTest, RoundTrips) {
  const CapabilityKey key = TestKey();
  for (uint64_t position : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{255}, uint64_t{256},
                            uint64_t{1} << 40, ~uint64_t{0}}) {
    const std::string token = EncodePageToken(key, "team alpha", position);
    EXPECT_EQ(token.size(), kPageTokenChars);
    EXPECT_THAT(DecodePageToken(key, "team alpha", token), IsOkAndHolds(position)) << token;
  }
}

TEST(PageTokenTest, AnotherCallerIsRefused) {
  const CapabilityKey key = TestKey();
  const std::string token = EncodePageToken(key, "team alpha", 41);
  ExpectRefused(DecodePageToken(key, "team beta", token));
  ExpectRefused(DecodePageToken(key, "admin alpha", token));
  ExpectRefused(DecodePageToken(key, "", token));
}

TEST(PageTokenTest, AnotherKeyIsRefused) {
  const std::string token = EncodePageToken(TestKey('7'), "team alpha", 41);
  ExpectRefused(DecodePageToken(TestKey('8'), "team alpha", token));
}

TEST(PageTokenTest, AnyAlteredCharacterIsRefused) {
  const CapabilityKey key = TestKey();
  const std::string token = EncodePageToken(key, "team alpha", 41);
  for (size_t i = 0; i < token.size(); ++i) {
    for (char replacement : {'A', 'z', '0', '-', '_'}) {
      if (token[i] == replacement) continue;
      std::string altered = token;
      altered[i] = replacement;
      ExpectRefused(DecodePageToken(key, "team alpha", altered));
    }
  }
}

TEST(PageTokenTest, PositionIsNotVisible) {
  const CapabilityKey key = TestKey();
  const std::string one = EncodePageToken(key, "team alpha", 1);
  const std::string two = EncodePageToken(key, "team alpha", 2);
  std::string a, b;
  ASSERT_TRUE(absl::WebSafeBase64Unescape(one, &a));
  ASSERT_TRUE(absl::WebSafeBase64Unescape(two, &b));
  ASSERT_EQ(a.size(), b.size());
  // Unrelated tokens differ in about half their bits and nearly every byte;
  // a plain or XOR-masked counter would differ in a bit or two.
  size_t bits = 0, bytes = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    bits += std::bitset<8>(static_cast<unsigned char>(a[i] ^ b[i])).count();
    bytes += a[i] != b[i] ? 1 : 0;
  }
  EXPECT_GT(bits, a.size() * 8 / 4) << one << " " << two;
  EXPECT_GT(bytes, a.size() * 3 / 4) << one << " " << two;
  EXPECT_NE(one.substr(0, 2), two.substr(0, 2)) << "a shared prefix: " << one << " " << two;
}

TEST(PageTokenTest, SameCallerAndPositionGiveTheSameToken) {
  const CapabilityKey key = TestKey();
  EXPECT_EQ(EncodePageToken(key, "team alpha", 9), EncodePageToken(key, "team alpha", 9));
  EXPECT_NE(EncodePageToken(key, "team alpha", 9), EncodePageToken(key, "team beta", 9));
}

TEST(PageTokenTest, GarbageIsRefusedAndSaysWhy) {
  const CapabilityKey key = TestKey();
  EXPECT_THAT(
      DecodePageToken(key, "team alpha", "p12"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("(expected 32 characters, got 3)")));
  EXPECT_THAT(DecodePageToken(key, "team alpha", std::string(1 << 20, 'A')),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("(expected 32 characters, got 1048576)")));
  EXPECT_THAT(DecodePageToken(key, "team alpha", std::string(32, '!')),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("(not base64url)")));
  EXPECT_THAT(
      DecodePageToken(key, "team alpha", std::string(32, 'A')),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("(altered, or given to another")));
  ExpectRefused(DecodePageToken(key, "team alpha", std::string(32, '\0')));
  ExpectRefused(DecodePageToken(key, "team alpha", std::string(30, 'A') + "=="));
}

}  // namespace
}  // namespace memaudit::coordinator
