// Reading a dataset file whole, within kMaxFileBytes, and the stamp
// (size, times, inode) that tells the data source cache a file was replaced.
#ifndef MEMAUDIT_DATA_FILE_BYTES_H_
#define MEMAUDIT_DATA_FILE_BYTES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace memaudit::data {

struct FileStamp {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  // A rewrite in place moves ctime even where mtime is set back; a rename
  // over the file changes the inode.
  int64_t ctime_ns = 0;
  uint64_t inode = 0;
  uint64_t device = 0;
  bool operator==(const FileStamp& o) const {
    return size == o.size && mtime_ns == o.mtime_ns && ctime_ns == o.ctime_ns && inode == o.inode &&
           device == o.device;
  }
  bool operator!=(const FileStamp& o) const { return !(*this == o); }
};

// Errors name the file as "<field>: <path>" ("<path>" when `field` is
// empty): NotFound when it is missing or unreadable, InvalidArgument when it
// is not a regular file or is larger than kMaxFileBytes.
absl::StatusOr<FileStamp> StatFile(const std::string& path, absl::string_view field);
absl::StatusOr<std::string> ReadFileBytes(const std::string& path, absl::string_view field);

// "<field>: <path>", or `path` alone when `field` is empty.
std::string FileWhere(absl::string_view field, absl::string_view path);

}  // namespace memaudit::data

#endif  // MEMAUDIT_DATA_FILE_BYTES_H_
