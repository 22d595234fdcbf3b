// CSV tables as classifier data: a header line, one label column and
// numeric feature columns. Byte-level, so the fuzzer drives the same parser.
#ifndef MEMAUDIT_DATA_CSV_READER_H_
#define MEMAUDIT_DATA_CSV_READER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "data/labeled_examples.h"

namespace memaudit::data {

// The first line names the columns (comma-separated; a name may be wrapped
// in double quotes); `label_column` is the label, every other column a
// float feature. Lines end in \n or \r\n; empty lines at the end are
// ignored. Cells hold no commas or escaped quotes (no quoting beyond one
// surrounding pair of double quotes).
// Labels: when every one is an integer in [0, 255], it is the class;
// otherwise the distinct label texts in sorted (byte) order are classes
// 0, 1, ... (at most 256) and `class_names` lists them.
// `path` only names the file in errors, which begin "path: <path>" or
// "label_column: <path>" and give the line and column of a bad cell.
// content_hash is left empty.
absl::StatusOr<LabeledExamples> ParseCsv(absl::string_view bytes, absl::string_view path,
                                         absl::string_view label_column);

}  // namespace memaudit::data

#endif  // MEMAUDIT_DATA_CSV_READER_H_
