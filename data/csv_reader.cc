#include "data/csv_reader.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/status_macros.h"

namespace memaudit::data {
namespace {

// Enough of a hostile cell or header to recognise it in a message.
constexpr size_t kMaxQuoted = 40;
constexpr size_t kMaxNamesListed = 20;
constexpr size_t kMaxClasses = kMaxLabel + 1;

std::string Quoted(absl::string_view text) {
  const bool cut = text.size() > kMaxQuoted;
  return absl::StrCat("'", absl::CHexEscape(text.substr(0, kMaxQuoted)), cut ? "...'" : "'");
}

absl::string_view Unquote(absl::string_view cell) {
  cell = absl::StripAsciiWhitespace(cell);
  if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') {
    cell = cell.substr(1, cell.size() - 2);
  }
  return cell;
}

// Splits `bytes` into lines ending in \n (the last may lack it), without \r.
class Lines {
 public:
  explicit Lines(absl::string_view bytes) : bytes_(bytes) {}
  bool Next(absl::string_view* line) {
    if (pos_ >= bytes_.size()) return false;
    size_t end = bytes_.find('\n', pos_);
    if (end == absl::string_view::npos) end = bytes_.size();
    *line = bytes_.substr(pos_, end - pos_);
    if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
    pos_ = end + 1;
    ++number_;
    return true;
  }
  // 1-based number of the line Next returned last.
  size_t number() const { return number_; }
  bool RestIsBlank() const {
    return pos_ >= bytes_.size() || absl::StripAsciiWhitespace(bytes_.substr(pos_)).empty();
  }

 private:
  absl::string_view bytes_;
  size_t pos_ = 0;
  size_t number_ = 0;
};

// The header line: the column names (at most kMaxFeatures + 1) and which
// one is the label.
struct Header {
  std::vector<absl::string_view> names;
  size_t label_at = 0;
};

absl::StatusOr<Header> ParseHeader(Lines& lines, absl::string_view path,
                                   absl::string_view label_column) {
  const std::string where = absl::StrCat("path: ", path);
  const std::string label_where = absl::StrCat("label_column: ", path);
  absl::string_view header_line;
  if (!lines.Next(&header_line) || absl::StripAsciiWhitespace(header_line).empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " has no header line (the column names) on line 1"));
  }
  // Bounded before the names are split out: one name per comma.
  const size_t columns =
      static_cast<size_t>(std::count(header_line.begin(), header_line.end(), ',')) + 1;
  if (columns - 1 > kMaxFeatures) {
    return absl::InvalidArgumentError(absl::StrCat(where, " has ", columns, " columns; at most ",
                                                   kMaxFeatures, " features and a label are read"));
  }
  std::vector<absl::string_view> names;
  names.reserve(columns);
  for (absl::string_view name : absl::StrSplit(header_line, ',')) names.push_back(Unquote(name));
  size_t label_at = columns;
  for (size_t c = 0; c < columns; ++c) {
    if (names[c] != label_column) continue;
    if (label_at != columns) {
      return absl::InvalidArgumentError(
          absl::StrCat(label_where, " has two columns named ", Quoted(label_column)));
    }
    label_at = c;
  }
  if (label_at == columns) {
    std::string listed;
    for (size_t c = 0; c < columns && c < kMaxNamesListed; ++c) {
      absl::StrAppend(&listed, c == 0 ? "" : ", ", Quoted(names[c]));
    }
    if (columns > kMaxNamesListed)
      absl::StrAppend(&listed, " and ", columns - kMaxNamesListed, " more");
    return absl::InvalidArgumentError(absl::StrCat(label_where, " has no column ",
                                                   Quoted(label_column),
                                                   " in its header (columns: ", listed, ")"));
  }
  return Header{std::move(names), label_at};
}

}  // namespace

absl::StatusOr<LabeledExamples> ParseCsv(absl::string_view bytes, absl::string_view path,
                                         absl::string_view label_column) {
  const std::string where = absl::StrCat("path: ", path);
  const std::string label_where = absl::StrCat("label_column: ", path);
  Lines lines(bytes);
  MEMAUDIT_ASSIGN_OR_RETURN(const Header header, ParseHeader(lines, path, label_column));
  const std::vector<absl::string_view>& names = header.names;
  const size_t columns = names.size();
  const size_t label_at = header.label_at;
  const uint64_t features = columns - 1;
  if (features == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " has no feature column besides the label ", Quoted(label_column)));
  }

  LabeledExamples data;
  std::vector<absl::string_view> label_texts;
  absl::string_view line;
  while (lines.Next(&line)) {
    if (absl::StripAsciiWhitespace(line).empty()) {
      if (lines.RestIsBlank()) break;
      return absl::InvalidArgumentError(
          absl::StrCat(where, " line ", lines.number(), " is empty (only the file's end may be)"));
    }
    if (label_texts.size() + 1 > kMaxRows || (label_texts.size() + 1) * features > kMaxValues) {
      MEMAUDIT_RETURN_IF_ERROR(CheckDimensions(label_texts.size() + 1, features, where));
    }
    size_t c = 0;
    for (absl::string_view cell : absl::StrSplit(line, ',')) {
      if (c >= columns) {
        ++c;
        continue;
      }
      cell = Unquote(cell);
      if (c == label_at) {
        label_texts.push_back(cell);
      } else {
        float v = 0;
        const bool parsed = absl::SimpleAtof(cell, &v);
        if (!parsed || !std::isfinite(v)) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, " line ", lines.number(), " column ", Quoted(names[c]), ": ",
                           Quoted(cell), parsed ? " is not a finite number" : " is not a number"));
        }
        data.values.push_back(v);
      }
      ++c;
    }
    if (c != columns) {
      return absl::InvalidArgumentError(absl::StrCat(where, " line ", lines.number(), " has ", c,
                                                     " cells where the header has ", columns));
    }
  }
  MEMAUDIT_RETURN_IF_ERROR(CheckDimensions(label_texts.size(), features, where));
  data.count = static_cast<uint32_t>(label_texts.size());
  data.features = static_cast<uint32_t>(features);
  data.shape = {data.features};

  data.labels.resize(label_texts.size());
  // All integers: they are the class ids, and one outside [0, 255] is an
  // error rather than a reason to read every label as text.
  std::vector<int64_t> ids(label_texts.size());
  bool integers = true;
  for (size_t i = 0; i < label_texts.size() && integers; ++i) {
    integers = absl::SimpleAtoi(label_texts[i], &ids[i]);
  }
  for (size_t i = 0; integers && i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] > static_cast<int64_t>(kMaxLabel)) {
      return absl::InvalidArgumentError(absl::StrCat(
          label_where, " column ", Quoted(label_column), " row ", i + 1, ": integer label ", ids[i],
          " is outside [0, ", kMaxLabel, "] (text labels name classes of any spelling)"));
    }
    data.labels[i] = static_cast<uint8_t>(ids[i]);
  }
  if (!integers) {
    std::map<absl::string_view, uint8_t> classes;
    for (absl::string_view text : label_texts) {
      if (classes.emplace(text, 0).second && classes.size() > kMaxClasses) {
        return absl::InvalidArgumentError(
            absl::StrCat(label_where, " column ", Quoted(label_column), " has more than ",
                         kMaxClasses, " distinct labels (not all integers in [0, ", kMaxLabel,
                         "]); at most ", kMaxClasses, " classes"));
      }
    }
    uint32_t id = 0;
    for (auto& [text, cls] : classes) {
      cls = static_cast<uint8_t>(id++);
      data.class_names.emplace_back(text);
    }
    for (size_t i = 0; i < label_texts.size(); ++i) data.labels[i] = classes[label_texts[i]];
  }
  MEMAUDIT_RETURN_IF_ERROR(SetClasses(data, label_where));
  return data;
}

}  // namespace memaudit::data
