#include "data/file_bytes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "data/labeled_examples.h"

namespace memaudit::data {
namespace {

absl::Status OpenError(const std::string& where, int error) {
  if (error == ENOENT || error == ENOTDIR)
    return absl::NotFoundError(absl::StrCat(where, " not found"));
  return absl::NotFoundError(absl::StrCat(where, " cannot be read: ", std::strerror(error)));
}

absl::StatusOr<FileStamp> StampOf(const struct stat& st, const std::string& where) {
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(where, " is not a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(where, " is ", st.st_size,
                                                   " bytes; files of at most ", kMaxFileBytes,
                                                   " bytes (4 GiB) are read"));
  }
  FileStamp stamp;
  stamp.size = static_cast<uint64_t>(st.st_size);
  stamp.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  stamp.ctime_ns = int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec;
  stamp.inode = st.st_ino;
  stamp.device = st.st_dev;
  return stamp;
}

}  // namespace

std::string FileWhere(absl::string_view field, absl::string_view path) {
  return field.empty() ? std::string(path) : absl::StrCat(field, ": ", path);
}

absl::StatusOr<FileStamp> StatFile(const std::string& path, absl::string_view field) {
  const std::string where = FileWhere(field, path);
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return OpenError(where, errno);
  return StampOf(st, where);
}

absl::StatusOr<std::string> ReadFileBytes(const std::string& path, absl::string_view field) {
  const std::string where = FileWhere(field, path);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return OpenError(where, errno);
  struct stat st {};
  absl::StatusOr<FileStamp> stamp =
      fstat(fd, &st) == 0 ? StampOf(st, where) : OpenError(where, errno);
  if (!stamp.ok()) {
    close(fd);
    return stamp.status();
  }
  // Sized from fstat, so a large file is allocated once; a file that grows
  // meanwhile is read to its end, still within the limit.
  std::string bytes(stamp->size, '\0');
  size_t got = 0;
  int error = 0;
  while (got < bytes.size()) {
    const ssize_t n = read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = errno;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  bytes.resize(got);
  char more[65536];
  while (error == 0 && got == stamp->size) {
    const ssize_t n = read(fd, more, sizeof(more));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = errno;
    if (n <= 0) break;
    if (bytes.size() + static_cast<size_t>(n) > kMaxFileBytes) {
      close(fd);
      return absl::InvalidArgumentError(
          absl::StrCat(where, " grew past ", kMaxFileBytes, " bytes while being read"));
    }
    bytes.append(more, static_cast<size_t>(n));
  }
  close(fd);
  if (error != 0) return OpenError(where, error);
  return bytes;
}

}  // namespace memaudit::data
