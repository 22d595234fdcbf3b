#include "common/security/identity.h"

#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/bounded_file.h"
#include "common/base/status_macros.h"

namespace memaudit {
namespace {

std::atomic<bool> reload_requested{false};

extern "C" void RequestReload(int) { reload_requested.store(true); }

constexpr size_t kMaxTokenFileBytes = 1 << 20;
constexpr size_t kMaxTokenBytes = 4096;

// The value of `key` ("OU", "CN") in an RFC 2253 subject such as
// "CN=alpha,OU=team,O=memaudit"; empty when absent. Names that need escaping
// are not valid names, so escapes need no decoding here.
std::string SubjectField(absl::string_view subject, absl::string_view key) {
  for (absl::string_view part : absl::StrSplit(subject, ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (absl::ConsumePrefix(&part, key) && absl::ConsumePrefix(&part, "=")) {
      return std::string(part);
    }
  }
  return "";
}

std::string FirstProperty(const grpc::AuthContext& auth, const char* name) {
  const std::vector<grpc::string_ref> values = auth.FindPropertyValues(name);
  if (values.empty()) return "";
  return std::string(values.front().data(), values.front().size());
}

absl::StatusOr<Identity> FromCertificate(const grpc::AuthContext& auth) {
  const std::string subject = FirstProperty(auth, GRPC_X509_SUBJECT_PROPERTY_NAME);
  if (subject.empty()) {
    return absl::UnauthenticatedError(
        "no credentials: present a bearer token or a client certificate");
  }
  Identity identity;
  identity.name = SubjectField(subject, "CN");
  const std::string ou = SubjectField(subject, "OU");
  const std::optional<Role> role = ou.empty() ? Role::kTeam : ParseRole(ou);
  if (!role.has_value() || !IsValidName(identity.name)) {
    return absl::UnauthenticatedError(
        absl::StrCat("client certificate: subject \"", subject.substr(0, 128),
                     "\" names no role (OU: team, worker, coordinator, admin) and name (CN)"));
  }
  identity.role = *role;
  return identity;
}

}  // namespace

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kTeam:
      return "team";
    case Role::kWorker:
      return "worker";
    case Role::kCoordinator:
      return "coordinator";
    case Role::kAdmin:
      return "admin";
  }
  return "unknown";
}

std::optional<Role> ParseRole(absl::string_view name) {
  for (Role r : {Role::kTeam, Role::kWorker, Role::kCoordinator, Role::kAdmin}) {
    if (name == RoleName(r)) return r;
  }
  return std::nullopt;
}

std::string Identity::ToString() const { return absl::StrCat(RoleName(role), " ", name); }

std::string TokenHash(absl::string_view token) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(token.data(), token.size(), digest, &size, EVP_sha256(), nullptr);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), static_cast<size_t>(size)));
}

bool IsValidName(absl::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

absl::StatusOr<absl::flat_hash_map<std::string, Identity>> ParseTokenFile(absl::string_view text) {
  absl::flat_hash_map<std::string, Identity> entries;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    const auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("token file line ", line_number, ": ", why));
    };
    if (fields.size() != 3) return bad("expected \"SHA256HEX ROLE NAME\"");
    const std::string hash = absl::AsciiStrToLower(fields[0]);
    if (hash.size() != 64 || hash.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return bad("the first field must be 64 hex digits (sha256sum of the token)");
    }
    const std::optional<Role> role = ParseRole(fields[1]);
    if (!role.has_value()) return bad("role must be team, worker, coordinator or admin");
    if (!IsValidName(fields[2])) return bad("name must be 1 to 64 of letters, digits, . _ -");
    if (!entries.emplace(hash, Identity{*role, std::string(fields[2])}).second) {
      return bad("the same token is listed twice");
    }
  }
  return entries;
}

std::unique_ptr<Authenticator> Authenticator::AllowEveryone() {
  return std::unique_ptr<Authenticator>(new Authenticator("", /*everyone=*/true));
}

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::Create(
    const std::string& token_file) {
  std::unique_ptr<Authenticator> auth(new Authenticator(token_file, /*everyone=*/false));
  if (absl::Status s = auth->Reload(); !s.ok()) return s;
  return auth;
}

absl::Status Authenticator::Reload() {
  if (token_file_.empty()) return absl::OkStatus();
  // The servers' flag (serving.h); a client's --token-file holds a token.
  MEMAUDIT_ASSIGN_OR_RETURN(std::string text,
                            ReadBoundedFile("--token-hashes", token_file_, kMaxTokenFileBytes));
  auto entries = ParseTokenFile(text);
  if (!entries.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--token-hashes \"", token_file_, "\": ", entries.status().message()));
  }
  absl::MutexLock lock(&mu_);
  by_hash_ = *std::move(entries);
  spdlog::info("token file {}: {} token(s)", token_file_, by_hash_.size());
  return absl::OkStatus();
}

void Authenticator::ReloadOnSighup() { std::signal(SIGHUP, RequestReload); }

absl::StatusOr<Identity> Authenticator::Identify(const grpc::ServerContextBase& context) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  return IdentifyFrom(context.client_metadata(), auth.get());
}

absl::StatusOr<Identity> Authenticator::IdentifyFrom(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
    const grpc::AuthContext* auth) {
  if (everyone_) return Identity{Role::kAdmin, "anonymous"};
  if (reload_requested.exchange(false)) {
    if (absl::Status s = Reload(); !s.ok())
      spdlog::error("SIGHUP: {} (kept the old tokens)", std::string(s.message()));
  }
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    absl::string_view value(it->second.data(), it->second.size());
    if (!absl::ConsumePrefix(&value, "Bearer ") || value.empty() || value.size() > kMaxTokenBytes) {
      return absl::UnauthenticatedError("authorization: expected \"Bearer TOKEN\"");
    }
    const std::string hash = TokenHash(value);
    absl::MutexLock lock(&mu_);
    if (auto found = by_hash_.find(hash); found != by_hash_.end()) return found->second;
    return absl::UnauthenticatedError("authorization: unknown token");
  }
  if (auth == nullptr) return absl::UnauthenticatedError("no credentials");
  return FromCertificate(*auth);
}

absl::Status Authenticator::Admit(const Identity& caller, const std::vector<Role>& allowed) {
  if (caller.role == Role::kAdmin) return absl::OkStatus();
  for (Role r : allowed) {
    if (caller.role == r) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat(caller.ToString(), " may not call this (", RoleName(caller.role), " role)"));
}

absl::StatusOr<Identity> Authenticator::Require(const grpc::ServerContextBase& context,
                                                std::initializer_list<Role> allowed) {
  auto identity = Identify(context);
  if (!identity.ok()) return identity;
  if (absl::Status s = Admit(*identity, std::vector<Role>(allowed)); !s.ok()) return s;
  return identity;
}

}  // namespace memaudit
