#include "services/coordinator/page_token.h"

#include <openssl/crypto.h>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace memaudit::coordinator {
namespace {

constexpr char kTagPurpose[] = "memaudit page token tag v1";
constexpr char kStreamPurpose[] = "memaudit page token stream v1";
// 128 bits: forging a tag takes about 2^128 tries, far beyond any caller.
constexpr size_t kTagBytes = 16;
constexpr size_t kPositionBytes = 8;
// 24 bytes are exactly 32 base64 characters: no padding, no spare bits.
static_assert(4 * (kTagBytes + kPositionBytes) / 3 == kPageTokenChars);

std::string BigEndian(uint64_t value) {
  std::string out(kPositionBytes, '\0');
  for (size_t i = 0; i < kPositionBytes; ++i) {
    out[kPositionBytes - 1 - i] = static_cast<char>((value >> (8 * i)) & 0xff);
  }
  return out;
}

uint64_t FromBigEndian(absl::string_view bytes) {
  uint64_t value = 0;
  for (char c : bytes) value = (value << 8) | static_cast<unsigned char>(c);
  return value;
}

// Sign() answers hex; the raw bytes are what the token carries.
std::string Mac(const CapabilityKey& key, absl::string_view purpose, absl::string_view caller,
                absl::string_view field, size_t bytes) {
  return absl::HexStringToBytes(key.Sign(purpose, {caller, field})).substr(0, bytes);
}

std::string Tag(const CapabilityKey& key, absl::string_view caller, uint64_t position) {
  return Mac(key, kTagPurpose, caller, BigEndian(position), kTagBytes);
}

// position XOR the keystream; its own inverse.
std::string Mask(const CapabilityKey& key, absl::string_view caller, absl::string_view tag,
                 absl::string_view position) {
  const std::string stream = Mac(key, kStreamPurpose, caller, tag, kPositionBytes);
  std::string out(position);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(out[i] ^ stream[i]);
  return out;
}

absl::Status NotOurs(absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("page_token: not a token this coordinator gave you (", why, ")"));
}

}  // namespace

std::string EncodePageToken(const CapabilityKey& key, absl::string_view caller, uint64_t position) {
  const std::string tag = Tag(key, caller, position);
  return absl::WebSafeBase64Escape(absl::StrCat(tag, Mask(key, caller, tag, BigEndian(position))));
}

absl::StatusOr<uint64_t> DecodePageToken(const CapabilityKey& key, absl::string_view caller,
                                         absl::string_view token) {
  // Checked first: no decoding or hashing of whatever length a caller sends.
  if (token.size() != kPageTokenChars) {
    return NotOurs(absl::StrCat("expected ", kPageTokenChars, " characters, got ", token.size()));
  }
  std::string bytes;
  if (!absl::WebSafeBase64Unescape(token, &bytes) || bytes.size() != kTagBytes + kPositionBytes) {
    return NotOurs("not base64url");
  }
  const absl::string_view tag = absl::string_view(bytes).substr(0, kTagBytes);
  const uint64_t position =
      FromBigEndian(Mask(key, caller, tag, absl::string_view(bytes).substr(kTagBytes)));
  // The tag binds caller and position: a token altered, or given to another
  // caller, decrypts to some position whose tag is not this one.
  const std::string expected = Tag(key, caller, position);
  if (CRYPTO_memcmp(expected.data(), tag.data(), kTagBytes) != 0) {
    return NotOurs("altered, or given to another caller");
  }
  return position;
}

}  // namespace memaudit::coordinator
