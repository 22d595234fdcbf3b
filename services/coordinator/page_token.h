// List's page tokens: opaque, and good only for the caller they were given
// to. A token carries the submit-order position the next page starts below;
// in the clear that would let a team count every team's audits, so the
// position is encrypted and authenticated under the capability key, bound to
// the caller.
//
// Scheme (deterministic authenticated encryption, SIV-style, from HMAC-SHA256
// alone, as CapabilityKey offers):
//
//   tag        = HMAC(key, "memaudit page token tag v1" | caller | position)[0:16]
//   keystream  = HMAC(key, "memaudit page token stream v1" | caller | tag)[0:8]
//   token      = base64url(tag | position XOR keystream)    (32 characters)
//
// The tag is a PRF of the caller and the position, so nobody without the key
// can make one that verifies, for another caller or another position; the
// keystream is a PRF of the tag, so the position is masked with bytes that
// look random and differ for every position. Being deterministic, the same
// caller gets the same token for the same position: that tells them only
// that two pages start at the same place, which they know anyway.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_PAGE_TOKEN_H_
#define MEMAUDIT_SERVICES_COORDINATOR_PAGE_TOKEN_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/security/capability.h"

namespace memaudit::coordinator {

// Every token has exactly this many characters.
inline constexpr size_t kPageTokenChars = 32;

// The token for `position`, for `caller` only.
std::string EncodePageToken(const CapabilityKey& key, absl::string_view caller, uint64_t position);

// The position EncodePageToken(key, caller, position) encoded. Anything else
// (altered, given to another caller, made under another key, or not a token
// at all) is INVALID_ARGUMENT "page_token: not a token this coordinator gave
// you (...)".
absl::StatusOr<uint64_t> DecodePageToken(const CapabilityKey& key, absl::string_view caller,
                                         absl::string_view token);

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_PAGE_TOKEN_H_
