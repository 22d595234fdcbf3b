#include "data/data_source.h"

#include <sys/stat.h>

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/base/status_macros.h"
#include "data/csv_reader.h"
#include "data/file_bytes.h"
#include "data/npy_reader.h"
#include "data/npz_reader.h"
#include "data/sha256.h"

namespace memaudit::data {
namespace {

constexpr struct {
  SourceFormat format;
  const char* name;
} kFormats[] = {{SourceFormat::kFashionMnist, "fashion_mnist"},
                {SourceFormat::kIdx, "idx"},
                {SourceFormat::kCsv, "csv"},
                {SourceFormat::kNpy, "npy"},
                {SourceFormat::kNpz, "npz"}};

struct SourceFile {
  const char* field;
  std::string path;
};

// A source with its defaults applied and the files it reads, in hash order.
struct Resolved {
  DataSource source;
  std::vector<SourceFile> files;
  std::string cache_key;
};

absl::Status OnlyFor(const char* field, const std::string& value, bool applies, const char* formats,
                     SourceFormat format) {
  if (value.empty() || applies) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, ": applies to ", formats,
                                                 " sources only, not ", SourceFormatName(format)));
}

// The MNIST layout's training file `what`, with errors that name the
// directory and both names tried.
absl::StatusOr<std::string> MnistFile(const std::string& dir, const std::string& what) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0)
    return absl::NotFoundError(absl::StrCat("path: ", dir, " not found"));
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "path: ", dir, " is not a directory; idx sources name an MNIST-layout directory"));
  }
  const std::string file = MnistLayoutFile(dir, "train", what);
  if (stat(file.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("path: ", dir, " has no train-", what,
                                            "-ubyte.gz (nor train-", what, "-ubyte)"));
  }
  return file;
}

absl::StatusOr<Resolved> Resolve(const DataSource& in) {
  Resolved r;
  r.source = in;
  DataSource& s = r.source;
  const SourceFormat f = s.format;
  MEMAUDIT_RETURN_IF_ERROR(
      OnlyFor("labels_path", s.labels_path, f == SourceFormat::kNpy, "npy", f));
  MEMAUDIT_RETURN_IF_ERROR(
      OnlyFor("label_column", s.label_column, f == SourceFormat::kCsv, "csv", f));
  MEMAUDIT_RETURN_IF_ERROR(
      OnlyFor("features_key", s.features_key, f == SourceFormat::kNpz, "npz", f));
  MEMAUDIT_RETURN_IF_ERROR(OnlyFor("labels_key", s.labels_key, f == SourceFormat::kNpz, "npz", f));
  if (f == SourceFormat::kFashionMnist && s.path.empty()) s.path = kFashionMnistDir;
  if (s.path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("path: required for ", SourceFormatName(f), " sources"));
  }
  switch (f) {
    case SourceFormat::kFashionMnist:
    case SourceFormat::kIdx: {
      MEMAUDIT_ASSIGN_OR_RETURN(std::string images, MnistFile(s.path, "images-idx3"));
      MEMAUDIT_ASSIGN_OR_RETURN(std::string labels, MnistFile(s.path, "labels-idx1"));
      r.files = {{"path", std::move(images)}, {"path", std::move(labels)}};
      break;
    }
    case SourceFormat::kNpy:
      if (s.labels_path.empty()) {
        return absl::InvalidArgumentError(
            "labels_path: required for npy sources (the labels .npy)");
      }
      r.files = {{"path", s.path}, {"labels_path", s.labels_path}};
      break;
    case SourceFormat::kCsv:
      if (s.label_column.empty()) s.label_column = "label";
      r.files = {{"path", s.path}};
      break;
    case SourceFormat::kNpz:
      if (s.features_key.empty()) s.features_key = "x";
      if (s.labels_key.empty()) s.labels_key = "y";
      r.files = {{"path", s.path}};
      break;
  }
  // Fields joined by NUL, which no path or key holds.
  r.cache_key =
      absl::StrCat(SourceFormatName(f), std::string(1, '\0'), s.path, std::string(1, '\0'),
                   s.labels_path, std::string(1, '\0'), s.label_column, std::string(1, '\0'),
                   s.features_key, std::string(1, '\0'), s.labels_key);
  return r;
}

void HashItem(Sha256& hash, absl::string_view item) {
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(uint64_t{item.size()} >> (8 * i));
  hash.Update(length, sizeof(length));
  hash.Update(item);
}

std::string ContentHash(const Resolved& r, const std::vector<std::string>& bytes) {
  Sha256 hash;
  HashItem(hash, SourceFormatName(r.source.format));
  for (const std::string& b : bytes) HashItem(hash, b);
  if (r.source.format == SourceFormat::kCsv) HashItem(hash, r.source.label_column);
  if (r.source.format == SourceFormat::kNpz) {
    HashItem(hash, r.source.features_key);
    HashItem(hash, r.source.labels_key);
  }
  return absl::StrCat("sha256:", DigestHex(hash.Finish()));
}

// ReadIdxFile's codes (DataLoss, Unimplemented) are bad content here.
absl::StatusOr<IdxArray> DecodeIdxFile(absl::string_view bytes, const std::string& file) {
  absl::StatusOr<IdxArray> array = DecodeIdx(bytes, file);
  if (!array.ok())
    return absl::InvalidArgumentError(absl::StrCat("path: ", array.status().message()));
  return array;
}

absl::StatusOr<LabeledExamples> Parse(const Resolved& r, const std::vector<std::string>& bytes) {
  const DataSource& s = r.source;
  switch (s.format) {
    case SourceFormat::kFashionMnist:
    case SourceFormat::kIdx: {
      MEMAUDIT_ASSIGN_OR_RETURN(IdxArray images, DecodeIdxFile(bytes[0], r.files[0].path));
      MEMAUDIT_ASSIGN_OR_RETURN(IdxArray labels, DecodeIdxFile(bytes[1], r.files[1].path));
      return ExamplesFromIdx(std::move(images), std::move(labels), absl::StrCat("path: ", s.path));
    }
    case SourceFormat::kNpy:
      return ParseNpyPair(bytes[0], s.path, bytes[1], s.labels_path);
    case SourceFormat::kCsv:
      return ParseCsv(bytes[0], s.path, s.label_column);
    case SourceFormat::kNpz:
      return ParseNpz(bytes[0], s.path, s.features_key, s.labels_key);
  }
  return absl::InternalError("unknown source format");
}

// Each file's stamp, in order, taken before reading: a file replaced while
// it is read leaves a stale stamp, so the next load reads it again.
absl::StatusOr<std::vector<FileStamp>> StampsOf(const Resolved& r) {
  std::vector<FileStamp> stamps;
  for (const SourceFile& file : r.files) {
    MEMAUDIT_ASSIGN_OR_RETURN(FileStamp stamp, StatFile(file.path, file.field));
    stamps.push_back(stamp);
  }
  return stamps;
}

absl::StatusOr<std::vector<std::string>> BytesOf(const Resolved& r) {
  std::vector<std::string> bytes;
  for (const SourceFile& file : r.files) {
    MEMAUDIT_ASSIGN_OR_RETURN(std::string b, ReadFileBytes(file.path, file.field));
    bytes.push_back(std::move(b));
  }
  return bytes;
}

}  // namespace

absl::StatusOr<SourceFormat> ParseSourceFormat(absl::string_view name) {
  for (const auto& f : kFormats) {
    if (name == f.name) return f.format;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("format: '", name, "' is not one of fashion_mnist, idx, csv, npy, npz"));
}

const char* SourceFormatName(SourceFormat format) {
  for (const auto& f : kFormats) {
    if (format == f.format) return f.name;
  }
  return "unknown";
}

absl::StatusOr<const LabeledExamples*> LoadDataSource(const DataSource& source) {
  MEMAUDIT_ASSIGN_OR_RETURN(const Resolved r, Resolve(source));
  struct Entry {
    std::vector<FileStamp> stamps;
    const LabeledExamples* data = nullptr;
  };
  static absl::Mutex mu(absl::kConstInit);
  // Guarded by mu. Never freed: a pointer handed out stays valid even after
  // its file is replaced (by_hash keeps every distinct content read).
  static auto* by_source = new std::map<std::string, Entry>();
  static auto* by_hash = new std::map<std::string, std::unique_ptr<LabeledExamples>>();
  // One load at a time: two tasks asking for the same dataset read it once.
  absl::MutexLock lock(&mu);

  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<FileStamp> stamps, StampsOf(r));
  if (auto it = by_source->find(r.cache_key);
      it != by_source->end() && it->second.stamps == stamps) {
    return it->second.data;
  }

  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<std::string> bytes, BytesOf(r));
  const std::string hash = ContentHash(r, bytes);
  auto& stored = (*by_hash)[hash];
  if (stored == nullptr) {
    absl::StatusOr<LabeledExamples> parsed = Parse(r, bytes);
    if (!parsed.ok()) {
      by_hash->erase(hash);
      return parsed.status();
    }
    parsed->content_hash = hash;
    stored = std::make_unique<LabeledExamples>(*std::move(parsed));
  }
  (*by_source)[r.cache_key] = Entry{std::move(stamps), stored.get()};
  return stored.get();
}

absl::StatusOr<DataFacts> DescribeDataSource(const DataSource& source) {
  MEMAUDIT_ASSIGN_OR_RETURN(const Resolved r, Resolve(source));
  struct Entry {
    std::vector<FileStamp> stamps;
    DataFacts facts;
  };
  static absl::Mutex mu(absl::kConstInit);
  static auto* by_source = new std::map<std::string, Entry>();  // guarded by mu
  absl::MutexLock lock(&mu);
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<FileStamp> stamps, StampsOf(r));
  if (auto it = by_source->find(r.cache_key);
      it != by_source->end() && it->second.stamps == stamps) {
    return it->second.facts;
  }
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<std::string> bytes, BytesOf(r));
  DataFacts facts;
  facts.content_hash = ContentHash(r, bytes);
  MEMAUDIT_ASSIGN_OR_RETURN(const LabeledExamples parsed, Parse(r, bytes));
  facts.count = parsed.count;
  facts.features = parsed.features;
  facts.classes = parsed.classes;
  facts.shape = parsed.shape;
  (*by_source)[r.cache_key] = Entry{std::move(stamps), facts};
  return facts;
}

}  // namespace memaudit::data
