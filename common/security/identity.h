// Who is calling: every RPC of every service starts by identifying its caller
// and checking the caller's role. A caller proves who it is with a bearer
// token (the token file maps SHA-256 hashes of tokens to roles and names,
// reloaded on SIGHUP) or with a client certificate the CA signed (its subject's
// OU is the role, its CN the name; no OU: a team).
#ifndef MEMAUDIT_COMMON_SECURITY_IDENTITY_H_
#define MEMAUDIT_COMMON_SECURITY_IDENTITY_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace memaudit {

enum class Role {
  kTeam,         // submits, watches and cancels its own audits
  kWorker,       // leases tasks and reports observations
  kCoordinator,  // the service identity that opens audits at the scorer
  kAdmin,        // sees and cancels every team's audits
};

absl::string_view RoleName(Role role);
std::optional<Role> ParseRole(absl::string_view name);

struct Identity {
  Role role = Role::kTeam;
  std::string name;  // the team, the worker's name, ...
  // "team alpha", for logs and events.
  std::string ToString() const;
  bool operator==(const Identity& other) const { return role == other.role && name == other.name; }
};

// Lower-case hex SHA-256 of `token`: what the token file stores.
std::string TokenHash(absl::string_view token);

// Names in tokens and certificates: 1 to 64 of letters, digits, '.', '_', '-'.
bool IsValidName(absl::string_view name);

class Authenticator {
 public:
  // Every caller is "admin anonymous": for --insecure (plain text, one user).
  static std::unique_ptr<Authenticator> AllowEveryone();
  // Callers must present a token listed in `token_file` (may be empty: then
  // certificates only) or a certificate. INVALID_ARGUMENT naming the file's
  // line for a malformed file.
  static absl::StatusOr<std::unique_ptr<Authenticator>> Create(const std::string& token_file);

  // Re-reads the token file; on an error keeps the tokens it had.
  absl::Status Reload() ABSL_LOCKS_EXCLUDED(mu_);
  // Makes SIGHUP reload the token file (on the next call to Identify).
  static void ReloadOnSighup();

  // The caller of `context`; UNAUTHENTICATED when it presents neither a
  // known token nor a certificate (the TLS layer has verified any
  // certificate against the CA before the call reaches here).
  absl::StatusOr<Identity> Identify(const grpc::ServerContextBase& context)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The same from a call's metadata and its connection's peer (`auth` may be
  // null): what the call gate (call_gate.h) checks before the message.
  absl::StatusOr<Identity> IdentifyFrom(
      const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
      const grpc::AuthContext* auth) ABSL_LOCKS_EXCLUDED(mu_);
  // OK when `caller` is an administrator or has one of `allowed`;
  // PERMISSION_DENIED naming the caller and its role otherwise.
  static absl::Status Admit(const Identity& caller, const std::vector<Role>& allowed);
  // Identify, then PERMISSION_DENIED unless the caller's role is one of
  // `allowed` or admin.
  absl::StatusOr<Identity> Require(const grpc::ServerContextBase& context,
                                   std::initializer_list<Role> allowed) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  Authenticator(std::string token_file, bool everyone)
      : token_file_(std::move(token_file)), everyone_(everyone) {}

  const std::string token_file_;
  const bool everyone_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Identity> by_hash_ ABSL_GUARDED_BY(mu_);
};

// The token file's entries: "SHA256HEX ROLE NAME" per line, '#' comments.
absl::StatusOr<absl::flat_hash_map<std::string, Identity>> ParseTokenFile(absl::string_view text);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_SECURITY_IDENTITY_H_
