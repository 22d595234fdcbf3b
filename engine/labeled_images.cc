#include "engine/labeled_images.h"

#include <zlib.h>

#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"

namespace memaudit::engine {
namespace {

uint32_t BigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// gzread reads plain files as well, so one path serves both encodings.
absl::StatusOr<std::vector<uint8_t>> ReadAll(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::vector<uint8_t> out;
  uint8_t buffer[1 << 16];
  int n;
  while ((n = gzread(file, buffer, sizeof(buffer))) > 0) out.insert(out.end(), buffer, buffer + n);
  const bool failed = n < 0;
  gzclose(file);
  if (failed) return absl::DataLossError(absl::StrCat(path, ": corrupt gzip stream"));
  return out;
}

}  // namespace

absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path) {
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadAll(path));
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0) {
    return absl::DataLossError(absl::StrCat(path, ": not an IDX file (bad magic)"));
  }
  if (bytes[2] != 0x08) {
    return absl::UnimplementedError(
        absl::StrCat(path, ": only unsigned-byte IDX data is supported"));
  }
  const uint32_t rank = bytes[3];
  if (bytes.size() < 4 + 4 * rank) return absl::DataLossError(absl::StrCat(path, ": truncated"));
  IdxArray array;
  uint64_t total = 1;
  for (uint32_t i = 0; i < rank; ++i) {
    array.dims.push_back(BigEndian32(bytes.data() + 4 + 4 * i));
    total *= array.dims.back();
  }
  const size_t header = 4 + 4 * rank;
  if (bytes.size() != header + total) {
    return absl::DataLossError(
        absl::StrCat(path, ": expected ", total, " data bytes, found ", bytes.size() - header));
  }
  array.data.assign(bytes.begin() + header, bytes.end());
  return array;
}

absl::StatusOr<const LabeledImages*> LoadMnistLayout(const std::string& dir,
                                                     const std::string& split) {
  static absl::Mutex mu(absl::kConstInit);
  // Guarded by mu; never freed, so a pointer handed out stays valid.
  static auto* cache = new std::map<std::string, std::unique_ptr<LabeledImages>>();
  const std::string key = dir + "|" + split;
  absl::MutexLock lock(&mu);
  if (auto it = cache->find(key); it != cache->end()) return it->second.get();

  MEMAUDIT_ASSIGN_OR_RETURN(auto images,
                            ReadIdxFile(absl::StrCat(dir, "/", split, "-images-idx3-ubyte.gz")));
  MEMAUDIT_ASSIGN_OR_RETURN(auto labels,
                            ReadIdxFile(absl::StrCat(dir, "/", split, "-labels-idx1-ubyte.gz")));
  if (images.dims.size() != 3 || labels.dims.size() != 1 || images.dims[0] != labels.dims[0]) {
    return absl::DataLossError(absl::StrCat(dir, ": images and labels disagree in shape"));
  }
  auto data = std::make_unique<LabeledImages>();
  data->count = images.dims[0];
  data->features = images.dims[1] * images.dims[2];
  data->pixels = std::move(images.data);
  data->labels = std::move(labels.data);
  uint8_t max_label = 0;
  for (uint8_t l : data->labels) max_label = std::max(max_label, l);
  data->classes = max_label + 1u;
  const LabeledImages* result = data.get();
  (*cache)[key] = std::move(data);
  return result;
}

}  // namespace memaudit::engine
