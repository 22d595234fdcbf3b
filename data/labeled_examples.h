// Classifier training data as plain arrays, free of LibTorch and protobuf
// types so that services, tools and the engine share one reader of a team's
// dataset; plus the MNIST-layout IDX reader and the limits every reader
// checks before it allocates.
#ifndef MEMAUDIT_DATA_LABELED_EXAMPLES_H_
#define MEMAUDIT_DATA_LABELED_EXAMPLES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace memaudit::data {

struct LabeledExamples {
  uint32_t count = 0;
  // Values per example: the product of `shape` (28 * 28 for Fashion-MNIST).
  uint32_t features = 0;
  // Max label + 1, at least 2.
  uint32_t classes = 0;
  // The shape of one example: IDX {28, 28}; npy [N, a, b, c] -> {a, b, c}
  // (rank 1 -> {1}); CSV {features}.
  std::vector<uint32_t> shape;
  // Exactly one of these holds the count * features values, row-major:
  // `pixels` for uint8 sources (IDX, uint8 npy/npz), 0..255 as stored;
  // `values` for float sources (CSV, float32/float64 npy/npz), finite.
  std::vector<uint8_t> pixels;
  std::vector<float> values;
  std::vector<uint8_t> labels;
  // CSV sources with text labels: class id -> label text. Empty otherwise.
  std::vector<std::string> class_names;
  // "sha256:<hex>" naming the bytes read (data/data_source.h says over
  // what); empty where the loader does not hash (LoadMnistLayout).
  std::string content_hash;
};

// Limits on what a reader accepts, checked against header numbers before
// anything is allocated.
inline constexpr uint64_t kMaxFileBytes = uint64_t{4} << 30;
inline constexpr uint64_t kMaxRows = (uint64_t{1} << 31) - 1;
inline constexpr uint64_t kMaxFeatures = uint64_t{1} << 20;
inline constexpr uint64_t kMaxValues = uint64_t{1} << 31;
inline constexpr uint32_t kMaxLabel = 255;

// InvalidArgument "<where> <reason>" unless 1 <= rows <= kMaxRows,
// 1 <= features <= kMaxFeatures and rows * features <= kMaxValues.
absl::Status CheckDimensions(uint64_t rows, uint64_t features, absl::string_view where);
// Sets `classes` to max label + 1; InvalidArgument naming `where` if that is
// under 2 (a classifier needs two classes).
absl::Status SetClasses(LabeledExamples& data, absl::string_view where);

// Where Debian's dataset-fashion-mnist package installs the IDX files.
inline constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";

// An IDX file (gzip-compressed or plain): the dimensions and the raw
// unsigned-byte payload.
struct IdxArray {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;
};
// Errors: NotFound (no file), DataLoss (not IDX, truncated, corrupt gzip),
// Unimplemented (not unsigned-byte data); messages begin with `path`.
absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path);
// The same from the file's bytes; `path` only names it in errors.
absl::StatusOr<IdxArray> DecodeIdx(absl::string_view file_bytes, const std::string& path);
// Images [N, ...] and labels [N] as examples (shape = the images' dims past
// the first), checked against the limits; InvalidArgument "<where> ...".
absl::StatusOr<LabeledExamples> ExamplesFromIdx(IdxArray images, IdxArray labels,
                                                absl::string_view where);

// The file of an MNIST-layout directory for `split` ("train", "t10k") and
// `what` ("images-idx3", "labels-idx1"): "<dir>/<split>-<what>-ubyte.gz", or
// the un-gzipped name when only that exists.
std::string MnistLayoutFile(const std::string& dir, const std::string& split,
                            const std::string& what);

// Loads the training split ("train") or test split ("t10k") of an
// MNIST-layout directory. Results are cached per (dir, split) in the
// process and never freed, so the pointer stays valid.
absl::StatusOr<const LabeledExamples*> LoadMnistLayout(const std::string& dir,
                                                       const std::string& split);

}  // namespace memaudit::data

#endif  // MEMAUDIT_DATA_LABELED_EXAMPLES_H_
