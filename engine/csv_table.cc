#include "engine/csv_table.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace memaudit::engine {

absl::StatusOr<CsvTable> ParseCsvTable(const std::string& text, const std::string& label_column) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  if (lines.empty()) return absl::InvalidArgumentError("csv: empty");
  std::vector<std::string> header = absl::StrSplit(absl::StripSuffix(lines[0], "\r"), ',');
  int label_at = -1;
  CsvTable table;
  for (size_t c = 0; c < header.size(); ++c) {
    if (header[c] == label_column) {
      label_at = static_cast<int>(c);
    } else {
      table.feature_names.push_back(header[c]);
    }
  }
  if (label_at < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("label_column: '", label_column, "' not in header"));
  }
  const int64_t rows = static_cast<int64_t>(lines.size()) - 1;
  const int64_t features = static_cast<int64_t>(header.size()) - 1;
  std::vector<float> x;
  std::vector<std::string> raw_labels;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<std::string> cells = absl::StrSplit(absl::StripSuffix(lines[r + 1], "\r"), ',');
    if (cells.size() != header.size()) {
      return absl::InvalidArgumentError(absl::StrCat("csv line ", r + 2, ": ", cells.size(),
                                                     " cells, header has ", header.size()));
    }
    for (size_t c = 0; c < cells.size(); ++c) {
      if (static_cast<int>(c) == label_at) {
        raw_labels.push_back(cells[c]);
        continue;
      }
      char* end = nullptr;
      const double v = std::strtod(cells[c].c_str(), &end);
      if (cells[c].empty() || end != cells[c].c_str() + cells[c].size()) {
        return absl::InvalidArgumentError(absl::StrCat("csv line ", r + 2, " column '", header[c],
                                                       "': '", cells[c], "' is not a number"));
      }
      x.push_back(static_cast<float>(v));
    }
  }
  std::map<std::string, int64_t> classes;
  for (const auto& l : raw_labels) classes.emplace(l, 0);
  for (auto& [label, id] : classes) {
    id = static_cast<int64_t>(table.labels.size());
    table.labels.push_back(label);
  }
  std::vector<int64_t> y;
  for (const auto& l : raw_labels) y.push_back(classes[l]);
  table.data =
      TensorDataset(torch::tensor(x).reshape({rows, features}), torch::tensor(y, torch::kLong));
  return table;
}

absl::StatusOr<CsvTable> ReadCsvTable(const std::string& path, const std::string& label_column) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("csv: cannot open ", path));
  std::ostringstream buf;
  buf << in.rdbuf();
  return ParseCsvTable(buf.str(), label_column);
}

}  // namespace memaudit::engine
