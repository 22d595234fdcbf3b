// NumPy .npz archives (numpy.savez, numpy.savez_compressed) as classifier
// data: the features and labels arrays are the entries "<key>.npy".
#ifndef MEMAUDIT_DATA_NPZ_READER_H_
#define MEMAUDIT_DATA_NPZ_READER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "data/labeled_examples.h"

namespace memaudit::data {

// Parses the archive's bytes; `path` only names the file in errors, which
// begin "path: ", "features_key: " or "labels_key: " (a missing entry lists
// the entries present). content_hash is left empty.
absl::StatusOr<LabeledExamples> ParseNpz(absl::string_view bytes, absl::string_view path,
                                         absl::string_view features_key,
                                         absl::string_view labels_key);

}  // namespace memaudit::data

#endif  // MEMAUDIT_DATA_NPZ_READER_H_
