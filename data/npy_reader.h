// NumPy .npy arrays (format versions 1.0, 2.0 and 3.0) as classifier data:
// a features array and a labels array. Byte-level, so that npz entries and
// the fuzzer use the same parser as files.
#ifndef MEMAUDIT_DATA_NPY_READER_H_
#define MEMAUDIT_DATA_NPY_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "data/labeled_examples.h"

namespace memaudit::data {

// The element types a dataset may hold: little-endian numbers, as NumPy
// writes them on every common machine.
enum class NpyDtype {
  kUint8,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUint16,
  kUint32,
  kUint64,
  kFloat32,
  kFloat64
};

struct NpyArray {
  NpyDtype dtype = NpyDtype::kUint8;
  std::string descr;  // as the header spells it, e.g. "<f4"
  std::vector<uint64_t> shape;
  // The C-order payload: a view into the bytes given to ParseNpy, exactly
  // product(shape) * itemsize long.
  absl::string_view data;
};

// Parses the header (magic, version, header length, the dict with 'descr',
// 'fortran_order' and 'shape') and bounds the payload. Refuses Fortran order,
// big-endian and non-numeric dtypes. Errors: InvalidArgument
// "<where> <reason>".
absl::StatusOr<NpyArray> ParseNpy(absl::string_view bytes, absl::string_view where);

// Features [N, ...] of float32, float64 (converted to float32) or uint8
// (kept as pixels) and labels [N] of an integer dtype with values in
// [0, 255]; float values must be finite. Each `where` prefixes its array's
// errors ("path: /d/x.npy").
absl::StatusOr<LabeledExamples> ExamplesFromNpy(const NpyArray& features,
                                                absl::string_view features_where,
                                                const NpyArray& labels,
                                                absl::string_view labels_where);

// ParseNpy of both files, then ExamplesFromNpy; errors begin
// "path: <features_path>" or "labels_path: <labels_path>", which only name
// the files. content_hash is left empty.
absl::StatusOr<LabeledExamples> ParseNpyPair(absl::string_view features_bytes,
                                             absl::string_view features_path,
                                             absl::string_view labels_bytes,
                                             absl::string_view labels_path);

}  // namespace memaudit::data

#endif  // MEMAUDIT_DATA_NPY_READER_H_
