// The parts of the ZIP format that NumPy's savez and savez_compressed write:
// the central directory (with ZIP64 sizes and offsets) and stored or
// deflated entries, CRC-checked. Byte-level: the caller holds the archive.
#ifndef MEMAUDIT_DATA_ZIP_READER_H_
#define MEMAUDIT_DATA_ZIP_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace memaudit::data {

struct ZipEntry {
  std::string name;
  uint16_t flags = 0;
  uint16_t method = 0;  // 0 stored, 8 deflate
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t local_header_offset = 0;
};

// The central directory's entries in order. InvalidArgument "<where> ..."
// when `archive` is not a single-disk ZIP file.
absl::StatusOr<std::vector<ZipEntry>> ReadZipDirectory(absl::string_view archive,
                                                       absl::string_view where);

// An entry's bytes: a view into `archive` when stored, else inflated into
// `*storage` (its size checked against kMaxFileBytes and the deflate ratio
// before anything is allocated) and viewed there. The CRC-32 is checked.
absl::StatusOr<absl::string_view> ZipEntryBytes(absl::string_view archive, const ZipEntry& entry,
                                                absl::string_view where, std::string* storage);

}  // namespace memaudit::data

#endif  // MEMAUDIT_DATA_ZIP_READER_H_
