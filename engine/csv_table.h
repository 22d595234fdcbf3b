// CSV tables as classification data: numeric feature columns plus one label
// column. Labels are mapped to classes in sorted order of their text, so the
// mapping is a pure function of the file.
#ifndef MEMAUDIT_ENGINE_CSV_TABLE_H_
#define MEMAUDIT_ENGINE_CSV_TABLE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/dataset.h"

namespace memaudit::engine {

struct CsvTable {
  TensorDataset data;               // x [N, features] float32, y [N] int64
  std::vector<std::string> labels;  // class id -> label text
  std::vector<std::string> feature_names;
};

// The first line is a header; `label_column` names the label column.
absl::StatusOr<CsvTable> ParseCsvTable(const std::string& text, const std::string& label_column);
absl::StatusOr<CsvTable> ReadCsvTable(const std::string& path, const std::string& label_column);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_CSV_TABLE_H_
