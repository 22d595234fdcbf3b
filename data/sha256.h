// SHA-256 (FIPS 180-4), so that data/ can name a dataset's bytes by content
// without pulling in OpenSSL (data/ also builds in the engine-only mode,
// which has no OpenSSL).
#ifndef MEMAUDIT_DATA_SHA256_H_
#define MEMAUDIT_DATA_SHA256_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace memaudit::data {

// Incremental hashing: Update any number of times, then Finish once.
class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();
  // Compresses `blocks` 64-byte blocks into the state (the portable rounds or
  // the x86 SHA extensions', chosen once per process by the CPU).
  using CompressBlocks = void (*)(std::array<uint32_t, 8>& state, const uint8_t* data,
                                  size_t blocks);
  explicit Sha256(CompressBlocks compress);
  void Update(const void* data, size_t size);
  void Update(absl::string_view bytes) { Update(bytes.data(), bytes.size()); }
  // The digest of everything passed to Update; the object is spent afterwards.
  Digest Finish();

 private:
  CompressBlocks compress_;
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// Lowercase hex, as sha256sum prints it.
std::string DigestHex(const Sha256::Digest& digest);
// The hex SHA-256 of `bytes`.
std::string Sha256Hex(absl::string_view bytes);

namespace internal {
// For tests and benchmarks: whether Sha256 runs on the SHA extensions here,
// and the digest by the portable rounds whatever the CPU.
bool UsesShaExtensions();
std::string PortableSha256Hex(absl::string_view bytes);
}  // namespace internal

}  // namespace memaudit::data

#endif  // MEMAUDIT_DATA_SHA256_H_
