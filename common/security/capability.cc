#include "common/security/capability.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/base/bounded_file.h"
#include "common/base/status_macros.h"

namespace memaudit {
namespace {

constexpr size_t kMaxKeyFileBytes = 4096;
constexpr char kTaskPurpose[] = "memaudit task capability v2";
// Published on purpose: --insecure trusts every caller anyway.
constexpr char kInsecureKeyHex[] =
    "6d656d6175646974202d2d696e7365637572652063617061626974792020206b";

void AppendField(std::string* message, absl::string_view field) {
  const auto size = static_cast<uint32_t>(field.size());
  for (int shift = 24; shift >= 0; shift -= 8) {
    message->push_back(static_cast<char>((size >> shift) & 0xff));
  }
  message->append(field.data(), field.size());
}

bool IsHex(absl::string_view text) {
  for (char c : text) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

std::string HmacSha256(absl::string_view key, absl::string_view message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), out, &size);
  return std::string(reinterpret_cast<const char*>(out), size);
}

std::string RandomBytes(size_t bytes) {
  std::string out(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(bytes)) != 1) {
    spdlog::critical("RAND_bytes failed: the CSPRNG could not produce an unguessable id");
    std::abort();
  }
  return out;
}

std::string RandomHexId(absl::string_view prefix) {
  return absl::StrCat(prefix, absl::BytesToHexString(RandomBytes(16)));
}

std::string TaskRef::ToString() const { return absl::StrCat(role, " ", index); }

absl::StatusOr<CapabilityKey> CapabilityKey::FromHex(absl::string_view hex) {
  hex = absl::StripAsciiWhitespace(hex);
  if (hex.size() % 2 != 0 || !IsHex(hex)) {
    return absl::InvalidArgumentError("expected hex digits (openssl rand -hex 32)");
  }
  if (hex.size() < 2 * kMinBytes) {
    return absl::InvalidArgumentError(absl::StrCat("expected at least ", 2 * kMinBytes,
                                                   " hex digits (", kMinBytes, " bytes), got ",
                                                   hex.size()));
  }
  return CapabilityKey(absl::HexStringToBytes(hex));
}

absl::StatusOr<CapabilityKey> CapabilityKey::FromFile(const std::string& path) {
  MEMAUDIT_ASSIGN_OR_RETURN(std::string text,
                            ReadBoundedFile("--capability-key-file", path, kMaxKeyFileBytes));
  auto key = FromHex(text);
  if (!key.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--capability-key-file \"", path, "\": ", key.status().message()));
  }
  return key;
}

CapabilityKey CapabilityKey::Insecure() { return *FromHex(kInsecureKeyHex); }

absl::Status CapabilityKey::WriteNew(const std::string& path) {
  const std::string text = absl::StrCat(absl::BytesToHexString(RandomBytes(kMinBytes)), "\n");
  // Created owner-only, so the key is never readable by others, even briefly.
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("cannot create ", path));
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool closed = close(fd) == 0;
  if (!written || !closed) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

std::string CapabilityKey::Sign(absl::string_view purpose,
                                std::initializer_list<absl::string_view> fields) const {
  std::string message;
  AppendField(&message, purpose);
  for (absl::string_view field : fields) AppendField(&message, field);
  return absl::BytesToHexString(HmacSha256(bytes_, message));
}

bool CapabilityKey::Verify(absl::string_view mac, absl::string_view purpose,
                           std::initializer_list<absl::string_view> fields) const {
  const std::string expected = Sign(purpose, fields);
  return mac.size() == expected.size() &&
         CRYPTO_memcmp(mac.data(), expected.data(), expected.size()) == 0;
}

std::string TaskCapability(const CapabilityKey& key, absl::string_view audit_id,
                           const TaskRef& task, const LeaseHolder& holder) {
  const std::string lease = absl::StrCat(holder.lease);
  return absl::StrCat(lease, ".",
                      key.Sign(kTaskPurpose, {audit_id, task.role, absl::StrCat(task.index), lease,
                                              holder.identity}));
}

std::optional<uint32_t> VerifyTaskCapability(const CapabilityKey& key, absl::string_view audit_id,
                                             const TaskRef& task, absl::string_view identity,
                                             absl::string_view capability) {
  const size_t dot = capability.find('.');
  uint32_t lease = 0;
  if (dot == absl::string_view::npos || dot > 10 ||
      !absl::SimpleAtoi(capability.substr(0, dot), &lease) || lease == 0) {
    return std::nullopt;
  }
  if (!key.Verify(
          capability.substr(dot + 1), kTaskPurpose,
          {audit_id, task.role, absl::StrCat(task.index), capability.substr(0, dot), identity})) {
    return std::nullopt;
  }
  return lease;
}

void AddCapabilityKeyFlag(CLI::App* app, std::string* path) {
  app->add_option("--capability-key-file", *path,
                  "the key (64+ hex digits: `openssl rand -hex 32`) the coordinator signs each "
                  "task's capability with and the scorer checks every observation against; the "
                  "same file on both, readable by them only. Required unless --insecure");
}

absl::StatusOr<CapabilityKey> LoadCapabilityKey(const std::string& path, const TlsFlags& tls) {
  if (!tls.insecure) {
    if (absl::Status s = CheckTlsFlags(tls, /*server=*/true); !s.ok()) return s;
  }
  if (!path.empty()) return CapabilityKey::FromFile(path);
  if (tls.insecure) {
    spdlog::warn(
        "no --capability-key-file: capabilities use a published key (--insecure: anyone can "
        "forge them)");
    return CapabilityKey::Insecure();
  }
  return absl::InvalidArgumentError(
      "--capability-key-file: required with TLS (the coordinator and the scorer share it); make "
      "one with `openssl rand -hex 32 > capability.key`");
}

}  // namespace memaudit
