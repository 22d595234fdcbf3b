// Where a team's classifier training data lives and in which format, and the
// one loader that reads, validates, hashes and caches it. Torch-free and
// proto-free: the worker maps a spec's dataset onto DataSource, and the
// engine takes the LabeledExamples.
#ifndef MEMAUDIT_DATA_DATA_SOURCE_H_
#define MEMAUDIT_DATA_DATA_SOURCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "data/labeled_examples.h"

namespace memaudit::data {

enum class SourceFormat { kFashionMnist, kIdx, kCsv, kNpy, kNpz };

struct DataSource {
  SourceFormat format = SourceFormat::kFashionMnist;
  // idx: an MNIST-layout directory (train-images-idx3-ubyte.gz and
  // train-labels-idx1-ubyte.gz, or the same names un-gzipped); csv, npz: the
  // file; npy: the features file; fashion_mnist: empty = kFashionMnistDir.
  std::string path;
  std::string labels_path;   // npy only: the labels .npy
  std::string label_column;  // csv only; empty = "label"
  std::string features_key;  // npz only; empty = "x"
  std::string labels_key;    // npz only; empty = "y"
};

// "fashion_mnist", "idx", "csv", "npy", "npz"; InvalidArgument otherwise.
absl::StatusOr<SourceFormat> ParseSourceFormat(absl::string_view name);
const char* SourceFormatName(SourceFormat format);

// Reads and validates the training examples (the "train" split of an
// MNIST-layout directory). Errors are NotFound (a missing file) or
// InvalidArgument (a field that does not apply to the format, bad content,
// past a limit of labeled_examples.h), and the message begins with the
// DataSource field concerned ("path: ", "labels_path: ", "label_column: ",
// "features_key: ", "labels_key: ") and the file, so a caller prefixes the
// spec's field ("membership.dataset.").
//
// Cached per process by the source's fields and its files' stamps (size,
// mtime, ctime, inode): a replaced file is read again, and the result is
// shared with any earlier load of the same content hash. Results are never
// freed, so the pointer stays valid for the process lifetime.
//
// content_hash is "sha256:" + the hex SHA-256 of these items in order, each
// written as its length (8 bytes, little-endian) followed by its bytes:
//   1. SourceFormatName(format);
//   2. each file as stored on disk (gzip or not): idx and fashion_mnist the
//      images file then the labels file; npy the features then the labels
//      file; csv and npz the file;
//   3. csv: the label column; npz: the features key, then the labels key
//      (defaults applied, so "" and "label" hash alike).
// A changed byte, key or label column changes the hash.
absl::StatusOr<const LabeledExamples*> LoadDataSource(const DataSource& source);

// What a source holds, without keeping its examples: the coordinator
// checks a spec's dataset at Submit and records these, and must not hold
// every dataset ever submitted. Reads (one source at a time, so at most one
// dataset is in memory), validates and hashes exactly as LoadDataSource;
// only the facts are cached, by the same stamps.
struct DataFacts {
  uint32_t count = 0;
  uint32_t features = 0;
  uint32_t classes = 0;
  std::vector<uint32_t> shape;
  std::string content_hash;
};
absl::StatusOr<DataFacts> DescribeDataSource(const DataSource& source);

}  // namespace memaudit::data

#endif  // MEMAUDIT_DATA_DATA_SOURCE_H_
