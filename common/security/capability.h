// Capabilities: what the coordinator hands out and the scorer (or the
// coordinator itself, later) checks without keeping any state. Each is an
// HMAC-SHA256 under a key the coordinator and the scorer share
// (--capability-key-file), over a purpose and length-prefixed fields, so a
// capability for one purpose or one set of fields never verifies for another.
//
//   run capability  "<lease>." HMAC(key, "memaudit task capability v2" | audit_id
//                   | role | index | lease | holder identity)
//                   the worker that leases a task gets it with the lease and
//                   sends it with every observation of the task; the scorer
//                   stores an observation only under its task's capability,
//                   from the identity that holds the lease, while that lease
//                   is the task's latest and has not ended
//   worker id tag   binds a worker id to the identity that registered it
//   lease tag       binds a lease to its task and the identity that leased it
//
// Identifiers and random ids come from the operating system's CSPRNG.
#ifndef MEMAUDIT_COMMON_SECURITY_CAPABILITY_H_
#define MEMAUDIT_COMMON_SECURITY_CAPABILITY_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/security/tls.h"

namespace memaudit {

// HMAC-SHA256 (RFC 2104) of `message` under `key`: 32 raw bytes.
std::string HmacSha256(absl::string_view key, absl::string_view message);

// `bytes` random bytes from OpenSSL's CSPRNG (RAND_bytes); aborts if the
// generator cannot be seeded, as no id may be guessable.
std::string RandomBytes(size_t bytes);
// `prefix` and 128 random bits as 32 lower-case hex digits.
std::string RandomHexId(absl::string_view prefix);

// One task of an audit's plan as the coordinator's planner names it.
struct TaskRef {
  std::string role;
  uint32_t index = 0;
  // "reference_model 3"
  std::string ToString() const;
  bool operator==(const TaskRef& other) const { return role == other.role && index == other.index; }
};

class CapabilityKey {
 public:
  // At least this many bytes (256 bits).
  static constexpr size_t kMinBytes = 32;

  // The key in `path`: hex digits (at least 64), surrounding whitespace
  // ignored, as `openssl rand -hex 32 > capability.key` writes it.
  // INVALID_ARGUMENT naming the flag and the file otherwise.
  static absl::StatusOr<CapabilityKey> FromFile(const std::string& path);
  static absl::StatusOr<CapabilityKey> FromHex(absl::string_view hex);
  // A fixed key anyone can read in this source: for --insecure deployments
  // (plain text, every caller an administrator), where nothing is secret.
  static CapabilityKey Insecure();
  // Writes a fresh random key (64 hex digits and a newline) to `path`,
  // readable by its owner only.
  static absl::Status WriteNew(const std::string& path);

  // Hex HMAC over `purpose` and each of `fields`, each preceded by its
  // length (4 bytes, big-endian).
  std::string Sign(absl::string_view purpose,
                   std::initializer_list<absl::string_view> fields) const;
  // Whether `mac` is Sign(purpose, fields), compared in constant time.
  bool Verify(absl::string_view mac, absl::string_view purpose,
              std::initializer_list<absl::string_view> fields) const;

 private:
  explicit CapabilityKey(std::string bytes) : bytes_(std::move(bytes)) {}
  std::string bytes_;
};

// One lease of a task: its number (1, 2, ... in the order the task was
// leased) and the identity that holds it ("worker w-0", Identity::ToString).
struct LeaseHolder {
  uint32_t lease = 0;
  std::string identity;
};

// The capability for the observations of `task` of audit `audit_id` sent by
// `holder` under its lease.
std::string TaskCapability(const CapabilityKey& key, absl::string_view audit_id,
                           const TaskRef& task, const LeaseHolder& holder);
// The lease number `capability` carries when it is the capability of `task`
// for the caller `identity`; nullopt otherwise (another task, audit, key or
// holder, or no capability at all).
std::optional<uint32_t> VerifyTaskCapability(const CapabilityKey& key, absl::string_view audit_id,
                                             const TaskRef& task, absl::string_view identity,
                                             absl::string_view capability);

// Adds --capability-key-file to a service (coordinator, scorer).
void AddCapabilityKeyFlag(CLI::App* app, std::string* path);
// The key of --capability-key-file; without one, the fixed insecure key under
// --insecure (logged) and INVALID_ARGUMENT otherwise, saying how to make one.
// With TLS, an incomplete set of TLS flags is reported first (CheckTlsFlags).
absl::StatusOr<CapabilityKey> LoadCapabilityKey(const std::string& path, const TlsFlags& tls);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_SECURITY_CAPABILITY_H_
