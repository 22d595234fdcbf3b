#include "common/security/capability.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

std::string Hex(const std::string& bytes) { return absl::BytesToHexString(bytes); }

// RFC 4231, section 4: the HMAC-SHA-256 outputs of its test cases 1-4, 6, 7.
TEST(HmacSha256Test, Rfc4231TestVectors) {
  EXPECT_EQ(Hex(HmacSha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(Hex(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(Hex(HmacSha256(std::string(20, '\xaa'), std::string(50, '\xdd'))),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  EXPECT_EQ(Hex(HmacSha256(absl::HexStringToBytes("0102030405060708090a0b0c0d0e0f10111213141516"
                                                  "171819"),
                           std::string(50, '\xcd'))),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  EXPECT_EQ(Hex(HmacSha256(std::string(131, '\xaa'),
                           "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(Hex(HmacSha256(std::string(131, '\xaa'),
                           "This is a test using a larger than block-size key and a larger than "
                           "block-size data. The key needs to be hashed before being used by the "
                           "HMAC algorithm.")),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

constexpr char kKeyHex[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

// The capability's exact bytes are a contract between coordinator and scorer
// of possibly different versions: pinned here (computed independently with
// Python's hmac over the length-prefixed fields).
TEST(CapabilityTest, TaskCapabilityIsPinned) {
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(CapabilityKey key, CapabilityKey::FromHex(kKeyHex));
  const std::string capability =
      TaskCapability(key, "a-0123", {"reference_model", 3}, {2, "worker w-0"});
  EXPECT_EQ(capability, "2.4d512fbf1d7234444ace5da3a2dc48d2de0146c1fe59f835cc09ef4025f635d3");
  EXPECT_EQ(VerifyTaskCapability(key, "a-0123", {"reference_model", 3}, "worker w-0", capability),
            std::optional<uint32_t>(2));
}

// A capability is one lease's: good for its task, its holder and its lease
// number only.
TEST(CapabilityTest, VerifiesOnlyTheTaskHolderLeaseAndKeyItWasMadeFor) {
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(CapabilityKey key, CapabilityKey::FromHex(kKeyHex));
  const std::string holder = "worker w-0";
  const std::string capability = TaskCapability(key, "a-1", {"reference_model", 3}, {1, holder});
  EXPECT_EQ(VerifyTaskCapability(key, "a-1", {"reference_model", 3}, holder, capability),
            std::optional<uint32_t>(1));
  EXPECT_FALSE(VerifyTaskCapability(key, "a-2", {"reference_model", 3}, holder, capability));
  EXPECT_FALSE(VerifyTaskCapability(key, "a-1", {"reference_model", 4}, holder, capability));
  EXPECT_FALSE(VerifyTaskCapability(key, "a-1", {"canary_model", 3}, holder, capability));
  EXPECT_FALSE(VerifyTaskCapability(key, "a-1", {"reference_model", 3}, "worker w-1", capability));
  EXPECT_FALSE(VerifyTaskCapability(key, "a-1", {"reference_model", 3}, holder, ""));
  EXPECT_FALSE(
      VerifyTaskCapability(key, "a-1", {"reference_model", 3}, holder, capability.substr(0, 40)));
  // Another lease number under the same MAC, or a number with a leading zero.
  EXPECT_FALSE(
      VerifyTaskCapability(key, "a-1", {"reference_model", 3}, holder, "2" + capability.substr(1)));
  EXPECT_FALSE(VerifyTaskCapability(key, "a-1", {"reference_model", 3}, holder, "0" + capability));
  EXPECT_FALSE(VerifyTaskCapability(CapabilityKey::Insecure(), "a-1", {"reference_model", 3},
                                    holder, capability));
  // Fields are length-prefixed: moving a boundary changes the MAC.
  EXPECT_NE(key.Sign("p", {"ab", "c"}), key.Sign("p", {"a", "bc"}));
  EXPECT_NE(key.Sign("p", {"a"}), key.Sign("q", {"a"}));
}

TEST(CapabilityTest, KeyFilesAreHexOfAtLeast256Bits) {
  EXPECT_THAT(CapabilityKey::FromHex("abcd"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at least 64 hex digits")));
  EXPECT_THAT(CapabilityKey::FromHex(std::string(64, 'g')),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("hex")));
  MEMAUDIT_EXPECT_OK(CapabilityKey::FromHex(absl::StrCat("  ", kKeyHex, "\n")));

  const std::string path = ::testing::TempDir() + "/capability_" + std::to_string(getpid());
  std::remove(path.c_str());
  EXPECT_THAT(CapabilityKey::FromFile(path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--capability-key-file")));
  MEMAUDIT_ASSERT_OK(CapabilityKey::WriteNew(path));
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(CapabilityKey key, CapabilityKey::FromFile(path));
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(CapabilityKey again, CapabilityKey::FromFile(path));
  EXPECT_EQ(key.Sign("p", {"x"}), again.Sign("p", {"x"}));
  std::remove(path.c_str());

  EXPECT_THAT(LoadCapabilityKey("", TlsFlags{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--tls-")))
      << "missing TLS flags are named first";
  TlsFlags insecure;
  insecure.insecure = true;
  MEMAUDIT_EXPECT_OK(LoadCapabilityKey("", insecure));
}

TEST(RandomIdTest, IdsCarry128RandomBits) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = RandomHexId("l-");
    ASSERT_EQ(id.size(), 2u + 32u) << id;
    ASSERT_EQ(id.substr(0, 2), "l-");
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 1000u);
}

}  // namespace
}  // namespace memaudit
