#include "data/zip_reader.h"

#include <zlib.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "data/labeled_examples.h"

namespace memaudit::data {
namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr size_t kEndSize = 22;
constexpr size_t kZip64EndSize = 56;
constexpr size_t kZip64LocatorSize = 20;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kLocalHeaderSize = 30;
// Deflate expands at most 1032-fold: a larger stated size is a lie.
constexpr uint64_t kMaxDeflateRatio = 1032;
// zlib counts in 32-bit units: feed and drain at most this much per call.
constexpr uint64_t kZlibChunk = uint64_t{1} << 30;

// Bounds-checked little-endian reads over the archive.
class Reader {
 public:
  explicit Reader(absl::string_view bytes) : bytes_(bytes) {}
  bool Has(uint64_t at, uint64_t n) const { return at <= bytes_.size() && n <= bytes_.size() - at; }
  uint64_t Le(uint64_t at, int n) const {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(bytes_[at + i])} << (8 * i);
    return v;
  }
  uint16_t U16(uint64_t at) const { return static_cast<uint16_t>(Le(at, 2)); }
  uint32_t U32(uint64_t at) const { return static_cast<uint32_t>(Le(at, 4)); }
  uint64_t U64(uint64_t at) const { return Le(at, 8); }

 private:
  absl::string_view bytes_;
};

absl::Status Invalid(absl::string_view where, absl::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(where, " ", reason));
}

// Replaces the 0xFFFFFFFF placeholders of a central header with the values
// of its ZIP64 extra field, which holds only those, in this order.
absl::Status ApplyZip64Extra(const Reader& r, uint64_t extra_at, uint64_t extra_len,
                             ZipEntry* entry, bool need_offset, absl::string_view where) {
  bool need_usize = entry->uncompressed_size == 0xFFFFFFFF;
  bool need_csize = entry->compressed_size == 0xFFFFFFFF;
  if (!need_usize && !need_csize && !need_offset) return absl::OkStatus();
  for (uint64_t at = extra_at; at + 4 <= extra_at + extra_len;) {
    const uint16_t id = r.U16(at), size = r.U16(at + 2);
    const uint64_t data = at + 4;
    if (data + size > extra_at + extra_len) break;
    if (id == 0x0001) {
      uint64_t p = data;
      auto take = [&](bool need, uint64_t* out) {
        if (!need) return true;
        if (p + 8 > data + size) return false;
        *out = r.U64(p);
        p += 8;
        return true;
      };
      if (take(need_usize, &entry->uncompressed_size) &&
          take(need_csize, &entry->compressed_size) &&
          take(need_offset, &entry->local_header_offset)) {
        return absl::OkStatus();
      }
      break;
    }
    at = data + size;
  }
  return Invalid(where, absl::StrCat("entry '", absl::CHexEscape(entry->name),
                                     "' lacks the ZIP64 sizes its header promises"));
}

}  // namespace

absl::StatusOr<std::vector<ZipEntry>> ReadZipDirectory(absl::string_view archive,
                                                       absl::string_view where) {
  const Reader r(archive);
  if (archive.size() < kEndSize) {
    return Invalid(
        where, absl::StrCat("is not a zip archive (npz): ", archive.size(), " bytes, too short"));
  }
  // The end record sits before a comment of at most 65535 bytes.
  uint64_t end_at = archive.size();
  const uint64_t lowest =
      archive.size() > kEndSize + 0xFFFF ? archive.size() - kEndSize - 0xFFFF : 0;
  for (uint64_t at = archive.size() - kEndSize + 1; at-- > lowest;) {
    if (r.U32(at) == kEndSig && at + kEndSize + r.U16(at + 20) <= archive.size()) {
      end_at = at;
      break;
    }
  }
  if (end_at == archive.size()) {
    return Invalid(where, "is not a zip archive (npz): no end of central directory record");
  }
  if (r.U16(end_at + 4) != 0 || r.U16(end_at + 6) != 0) {
    return Invalid(where, "is a multi-disk zip archive; one file is needed");
  }
  uint64_t count = r.U16(end_at + 10);
  uint64_t dir_size = r.U32(end_at + 12);
  uint64_t dir_at = r.U32(end_at + 16);
  // NumPy's writer (Python's zipfile) adds ZIP64 end records when counts or
  // offsets overflow their 16/32-bit fields.
  if (end_at >= kZip64LocatorSize && r.U32(end_at - kZip64LocatorSize) == kZip64LocatorSig) {
    const uint64_t z64_at = r.U64(end_at - kZip64LocatorSize + 8);
    if (!r.Has(z64_at, kZip64EndSize) || r.U32(z64_at) != kZip64EndSig) {
      return Invalid(where, "has a ZIP64 locator that points at no ZIP64 end record");
    }
    count = r.U64(z64_at + 32);
    dir_size = r.U64(z64_at + 40);
    dir_at = r.U64(z64_at + 48);
  }
  if (!r.Has(dir_at, dir_size)) {
    return Invalid(where, absl::StrCat("has a central directory (", dir_size, " bytes at ", dir_at,
                                       ") past its end (", archive.size(), " bytes)"));
  }
  // Each entry takes at least 46 bytes, so the count is bounded by the size.
  if (count > dir_size / kCentralHeaderSize) {
    return Invalid(where, absl::StrCat("claims ", count, " entries in a central directory of ",
                                       dir_size, " bytes"));
  }
  std::vector<ZipEntry> entries;
  entries.reserve(count);
  uint64_t at = dir_at;
  const uint64_t dir_end = dir_at + dir_size;
  for (uint64_t i = 0; i < count; ++i) {
    if (at + kCentralHeaderSize > dir_end || r.U32(at) != kCentralHeaderSig) {
      return Invalid(where, absl::StrCat("has a corrupt central directory at entry ", i));
    }
    const uint64_t name_len = r.U16(at + 28), extra_len = r.U16(at + 30),
                   comment_len = r.U16(at + 32);
    if (at + kCentralHeaderSize + name_len + extra_len + comment_len > dir_end) {
      return Invalid(where, absl::StrCat("has a corrupt central directory at entry ", i));
    }
    ZipEntry e;
    e.flags = r.U16(at + 8);
    e.method = r.U16(at + 10);
    e.crc32 = r.U32(at + 16);
    e.compressed_size = r.U32(at + 20);
    e.uncompressed_size = r.U32(at + 24);
    e.local_header_offset = r.U32(at + 42);
    e.name = std::string(archive.substr(at + kCentralHeaderSize, name_len));
    absl::Status z64 = ApplyZip64Extra(r, at + kCentralHeaderSize + name_len, extra_len, &e,
                                       e.local_header_offset == 0xFFFFFFFF, where);
    if (!z64.ok()) return z64;
    entries.push_back(std::move(e));
    at += kCentralHeaderSize + name_len + extra_len + comment_len;
  }
  return entries;
}

absl::StatusOr<absl::string_view> ZipEntryBytes(absl::string_view archive, const ZipEntry& entry,
                                                absl::string_view where, std::string* storage) {
  const Reader r(archive);
  if (entry.flags & 1) return Invalid(where, "is encrypted");
  const uint64_t at = entry.local_header_offset;
  if (!r.Has(at, kLocalHeaderSize) || r.U32(at) != kLocalHeaderSig) {
    return Invalid(where, absl::StrCat("has no local header at offset ", at));
  }
  const uint64_t data_at = at + kLocalHeaderSize + r.U16(at + 26) + r.U16(at + 28);
  if (!r.Has(data_at, entry.compressed_size)) {
    return Invalid(where, absl::StrCat("has ", entry.compressed_size, " bytes at offset ", data_at,
                                       " past the archive's end (", archive.size(), " bytes)"));
  }
  const absl::string_view packed = archive.substr(data_at, entry.compressed_size);
  absl::string_view bytes;
  if (entry.method == 0) {
    if (entry.compressed_size != entry.uncompressed_size) {
      return Invalid(where, absl::StrCat("is stored with ", entry.compressed_size,
                                         " bytes but states ", entry.uncompressed_size));
    }
    bytes = packed;
  } else if (entry.method == 8) {
    if (entry.uncompressed_size > kMaxFileBytes) {
      return Invalid(where, absl::StrCat("decompresses to ", entry.uncompressed_size,
                                         " bytes; at most ", kMaxFileBytes, " (4 GiB) are read"));
    }
    if (entry.uncompressed_size > (entry.compressed_size + 1) * kMaxDeflateRatio) {
      return Invalid(
          where, absl::StrCat("states ", entry.uncompressed_size, " bytes from ",
                              entry.compressed_size, " compressed, more than deflate can produce"));
    }
    storage->assign(entry.uncompressed_size, '\0');
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) {
      return absl::InternalError(absl::StrCat(where, " zlib inflateInit2 failed"));
    }
    uint64_t in_left = packed.size(), out_left = storage->size();
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
    z.next_out = reinterpret_cast<Bytef*>(storage->data());
    int ret = Z_OK;
    while (ret == Z_OK) {
      if (z.avail_in == 0 && in_left > 0) {
        z.avail_in = static_cast<uInt>(std::min(in_left, kZlibChunk));
        in_left -= z.avail_in;
      }
      if (z.avail_out == 0 && out_left > 0) {
        z.avail_out = static_cast<uInt>(std::min(out_left, kZlibChunk));
        out_left -= z.avail_out;
      }
      ret = inflate(&z, Z_NO_FLUSH);
    }
    const uint64_t produced = storage->size() - out_left - z.avail_out;
    inflateEnd(&z);
    if (ret != Z_STREAM_END) {
      if (ret != Z_BUF_ERROR) {
        return Invalid(where, absl::StrCat("is corrupt deflate data (zlib error ", ret, ")"));
      }
      return Invalid(where, produced == storage->size()
                                ? absl::StrCat("decompresses past its stated ",
                                               entry.uncompressed_size, " bytes")
                                : "is truncated: its deflate stream does not end");
    }
    if (produced != storage->size()) {
      return Invalid(where, absl::StrCat("decompresses to ", produced, " bytes where ",
                                         entry.uncompressed_size, " are stated"));
    }
    bytes = *storage;
  } else {
    return Invalid(where, absl::StrCat("uses compression method ", entry.method,
                                       "; only stored (0) and deflate (8) are read"));
  }
  uLong crc = crc32(0L, Z_NULL, 0);
  for (uint64_t done = 0; done < bytes.size();) {
    const uInt n = static_cast<uInt>(std::min<uint64_t>(bytes.size() - done, kZlibChunk));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + done), n);
    done += n;
  }
  if (crc != entry.crc32) {
    return Invalid(where, absl::StrCat("fails its CRC-32 check (", crc, " where ", entry.crc32,
                                       " is stated)"));
  }
  return bytes;
}

}  // namespace memaudit::data
