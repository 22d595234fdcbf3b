#include "data/npy_reader.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"

namespace memaudit::data {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// Larger than any header NumPy writes (it pads to 64 bytes), small enough
// that a hostile one costs nothing.
constexpr uint64_t kMaxHeaderBytes = 1 << 20;
constexpr uint64_t kMaxDim = uint64_t{1} << 62;

absl::Status Invalid(absl::string_view where, absl::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(where, " ", reason));
}

std::string ShapeText(const std::vector<uint64_t>& shape) {
  return shape.size() == 1 ? absl::StrCat("(", shape[0], ",)")
                           : absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

// Little-endian loads that hold on any host.
template <typename T>
T LoadLittle(const char* p) {
  using U = std::conditional_t<
      sizeof(T) == 1, uint8_t,
      std::conditional_t<sizeof(T) == 2, uint16_t,
                         std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
  U u = 0;
  for (size_t i = 0; i < sizeof(T); ++i) u |= static_cast<U>(static_cast<uint8_t>(p[i])) << (8 * i);
  T v;
  std::memcpy(&v, &u, sizeof(T));
  return v;
}

struct DtypeInfo {
  NpyDtype dtype;
  size_t itemsize;
};

// "<f4", "|u1", "u1", "=i8" ... ; nullopt-like false for anything else.
bool LookupDtype(absl::string_view descr, DtypeInfo* info, std::string* why) {
  char order = '|';
  if (!descr.empty() &&
      (descr[0] == '<' || descr[0] == '>' || descr[0] == '|' || descr[0] == '=')) {
    order = descr[0];
    descr.remove_prefix(1);
  }
  static constexpr struct {
    const char* code;
    NpyDtype dtype;
    size_t itemsize;
  } kTypes[] = {{"u1", NpyDtype::kUint8, 1},   {"i1", NpyDtype::kInt8, 1},
                {"i2", NpyDtype::kInt16, 2},   {"i4", NpyDtype::kInt32, 4},
                {"i8", NpyDtype::kInt64, 8},   {"u2", NpyDtype::kUint16, 2},
                {"u4", NpyDtype::kUint32, 4},  {"u8", NpyDtype::kUint64, 8},
                {"f4", NpyDtype::kFloat32, 4}, {"f8", NpyDtype::kFloat64, 8}};
  for (const auto& t : kTypes) {
    if (descr != t.code) continue;
    if (order == '>' && t.itemsize > 1) {
      *why = "is big-endian; save it little-endian (arr.astype(arr.dtype.newbyteorder('<')))";
      return false;
    }
    *info = {t.dtype, t.itemsize};
    return true;
  }
  *why = "is not a supported dtype (integers, float32, float64)";
  return false;
}

// The header dict NumPy writes: {'descr': '<f4', 'fortran_order': False,
// 'shape': (3, 4), } padded with spaces and a newline. A small parser for
// exactly that grammar (Python literals, no escapes in strings).
class HeaderParser {
 public:
  explicit HeaderParser(absl::string_view text) : text_(text) {}

  absl::Status Parse(std::string* descr, bool* fortran_order, std::vector<uint64_t>* shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    SkipSpace();
    if (!Consume('{')) return Fail("does not start with '{'");
    while (true) {
      SkipSpace();
      if (Consume('}')) break;
      std::string key;
      MEMAUDIT_RETURN_IF_ERROR(String(&key));
      SkipSpace();
      if (!Consume(':')) return Fail("has no ':' after a key");
      SkipSpace();
      if (key == "descr" && !have_descr) {
        if (Peek() == '[') return Fail("has a structured dtype; a plain numeric array is needed");
        MEMAUDIT_RETURN_IF_ERROR(String(descr));
        have_descr = true;
      } else if (key == "fortran_order" && !have_order) {
        if (ConsumeWord("True")) {
          *fortran_order = true;
        } else if (ConsumeWord("False")) {
          *fortran_order = false;
        } else {
          return Fail("has a fortran_order that is neither True nor False");
        }
        have_order = true;
      } else if (key == "shape" && !have_shape) {
        MEMAUDIT_RETURN_IF_ERROR(Tuple(shape));
        have_shape = true;
      } else {
        return Fail(
            absl::StrCat("has an unexpected or repeated key '", absl::CHexEscape(key), "'"));
      }
      SkipSpace();
      if (Consume('}')) break;
      if (!Consume(',')) return Fail("has no ',' between entries");
    }
    SkipSpace();
    if (pos_ != text_.size()) return Fail("has text after the closing '}'");
    if (!have_descr || !have_order || !have_shape) {
      return Fail("lacks one of 'descr', 'fortran_order', 'shape'");
    }
    return absl::OkStatus();
  }

 private:
  static absl::Status Fail(absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("header ", why));
  }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  bool ConsumeWord(absl::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }
  absl::Status String(std::string* out) {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') return Fail("has a key or value that is not a string");
    const size_t end = text_.find(quote, pos_ + 1);
    if (end == absl::string_view::npos) return Fail("has an unterminated string");
    *out = std::string(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return absl::OkStatus();
  }
  // (), (3,), (3, 4) and Python 2's (3L, 4L).
  absl::Status Tuple(std::vector<uint64_t>* out) {
    out->clear();
    if (!Consume('(')) return Fail("has a shape that is not a tuple");
    while (true) {
      SkipSpace();
      if (Consume(')')) return absl::OkStatus();
      if (!absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
        return Fail("has a shape entry that is not a non-negative integer");
      }
      uint64_t v = 0;
      while (absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
        if (v > kMaxDim / 10) return Fail("has a shape entry too large to be real");
        v = v * 10 + static_cast<uint64_t>(text_[pos_++] - '0');
        if (v > kMaxDim) return Fail("has a shape entry too large to be real");
      }
      Consume('L');
      out->push_back(v);
      if (out->size() > 64) return Fail("has a shape of more than 64 dimensions");
      SkipSpace();
      if (Consume(')')) return absl::OkStatus();
      if (!Consume(',')) return Fail("has a shape tuple without ',' between entries");
    }
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

// The first non-finite or out-of-range value, reported by row and column.
absl::Status BadValue(absl::string_view where, size_t index, uint32_t features, double value,
                      bool out_of_range) {
  return Invalid(
      where,
      absl::StrCat("has ", out_of_range ? "a value out of float32 range (" : "a non-finite value (",
                   value, ") at row ", index / features, ", feature ", index % features,
                   "; features must be finite"));
}

}  // namespace

absl::StatusOr<NpyArray> ParseNpy(absl::string_view bytes, absl::string_view where) {
  if (bytes.size() < kMagicSize + 4 ||
      bytes.substr(0, kMagicSize) != absl::string_view(kMagic, kMagicSize)) {
    return Invalid(where, "is not a .npy file (no \\x93NUMPY magic)");
  }
  const uint8_t major = static_cast<uint8_t>(bytes[6]), minor = static_cast<uint8_t>(bytes[7]);
  uint64_t header_len = 0;
  size_t header_at = 0;
  if (major == 1) {
    header_len = LoadLittle<uint16_t>(bytes.data() + 8);
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return Invalid(where, "is truncated inside its header");
    header_len = LoadLittle<uint32_t>(bytes.data() + 8);
    header_at = 12;
  } else {
    return Invalid(where, absl::StrCat("has .npy format version ", major, ".", minor,
                                       "; versions 1.0, 2.0 and 3.0 are read"));
  }
  if (header_len > kMaxHeaderBytes || header_at + header_len > bytes.size()) {
    return Invalid(
        where, absl::StrCat("has a header of ", header_len, " bytes in a file of ", bytes.size()));
  }
  NpyArray array;
  bool fortran_order = false;
  absl::Status parsed = HeaderParser(bytes.substr(header_at, header_len))
                            .Parse(&array.descr, &fortran_order, &array.shape);
  if (!parsed.ok()) return Invalid(where, parsed.message());
  const std::string descr_text = absl::StrCat("'", absl::CHexEscape(array.descr), "'");
  DtypeInfo info{};
  std::string why;
  if (!LookupDtype(array.descr, &info, &why)) {
    return Invalid(where, absl::StrCat("has dtype ", descr_text, " which ", why));
  }
  array.dtype = info.dtype;
  if (fortran_order) {
    return Invalid(where,
                   "is in Fortran order (fortran_order: True); C order is needed: save "
                   "np.ascontiguousarray(arr)");
  }
  // A product past 2^62 is certainly more than the file holds: stop there,
  // before it could overflow.
  const uint64_t payload = bytes.size() - header_at - header_len;
  uint64_t needed = info.itemsize;
  bool huge = false;
  for (uint64_t d : array.shape) {
    if (d != 0 && needed > kMaxDim / d) {
      huge = true;
      break;
    }
    needed *= d;
  }
  if (huge || needed != payload) {
    return Invalid(where, absl::StrCat("has ", payload, " data bytes where shape ",
                                       ShapeText(array.shape), " of ", descr_text, " needs ",
                                       huge ? "more than 2^62" : absl::StrCat(needed)));
  }
  array.data = bytes.substr(header_at + header_len);
  return array;
}

namespace {

// Label i of `labels` (any integer dtype) as a class id, refused outside
// [0, kMaxLabel].
absl::Status ReadLabels(const NpyArray& labels, uint64_t rows, absl::string_view labels_where,
                        LabeledExamples* out) {
  LabeledExamples& data = *out;
  data.labels.resize(static_cast<size_t>(rows));
  const char* lp = labels.data.data();
  for (size_t i = 0; i < rows; ++i) {
    int64_t v = 0;
    switch (labels.dtype) {
      case NpyDtype::kUint8:
        v = LoadLittle<uint8_t>(lp + i);
        break;
      case NpyDtype::kInt8: {
        const uint8_t raw = LoadLittle<uint8_t>(lp + i);  // two's complement
        v = raw < 128 ? raw : static_cast<int64_t>(raw) - 256;
        break;
      }
      case NpyDtype::kInt16:
        v = LoadLittle<int16_t>(lp + 2 * i);
        break;
      case NpyDtype::kUint16:
        v = LoadLittle<uint16_t>(lp + 2 * i);
        break;
      case NpyDtype::kInt32:
        v = LoadLittle<int32_t>(lp + 4 * i);
        break;
      case NpyDtype::kUint32:
        v = LoadLittle<uint32_t>(lp + 4 * i);
        break;
      case NpyDtype::kInt64:
        v = LoadLittle<int64_t>(lp + 8 * i);
        break;
      default: {  // kUint64: past int64's range is past the label range too
        const uint64_t u = LoadLittle<uint64_t>(lp + 8 * i);
        v = u > kMaxLabel ? int64_t{kMaxLabel} + 1 : static_cast<int64_t>(u);
        if (u > kMaxLabel) {
          return Invalid(labels_where, absl::StrCat("has label ", u, " at row ", i,
                                                    "; labels must be in [0, ", kMaxLabel, "]"));
        }
      }
    }
    if (v < 0 || v > static_cast<int64_t>(kMaxLabel)) {
      return Invalid(labels_where, absl::StrCat("has label ", v, " at row ", i,
                                                "; labels must be in [0, ", kMaxLabel, "]"));
    }
    data.labels[i] = static_cast<uint8_t>(v);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LabeledExamples> ExamplesFromNpy(const NpyArray& features,
                                                absl::string_view features_where,
                                                const NpyArray& labels,
                                                absl::string_view labels_where) {
  if (features.shape.empty()) {
    return Invalid(features_where, "is a scalar (shape ()); features need shape (N, ...)");
  }
  if (features.dtype != NpyDtype::kFloat32 && features.dtype != NpyDtype::kFloat64 &&
      features.dtype != NpyDtype::kUint8) {
    return Invalid(features_where,
                   absl::StrCat("has dtype '", absl::CHexEscape(features.descr),
                                "'; features must be float32 ('<f4'), float64 ('<f8') or "
                                "uint8 ('|u1')"));
  }
  const uint64_t rows = features.shape[0];
  uint64_t per_row = 1;
  for (size_t i = 1; i < features.shape.size(); ++i) {
    per_row *= features.shape[i];
    // Past the limit already: stop before the product could overflow.
    if (per_row > kMaxFeatures) break;
  }
  MEMAUDIT_RETURN_IF_ERROR(CheckDimensions(rows, per_row, features_where));

  const bool integer_labels =
      labels.dtype != NpyDtype::kFloat32 && labels.dtype != NpyDtype::kFloat64;
  if (!integer_labels) {
    return Invalid(labels_where, absl::StrCat("has dtype '", absl::CHexEscape(labels.descr),
                                              "' (floating point); labels must be integers "
                                              "(e.g. labels.astype(np.int64))"));
  }
  if (labels.shape.size() != 1) {
    return Invalid(labels_where,
                   absl::StrCat("has shape ", ShapeText(labels.shape), "; labels need shape (N,)"));
  }
  if (labels.shape[0] != rows) {
    return Invalid(labels_where,
                   absl::StrCat("has ", labels.shape[0], " rows where the features have ", rows));
  }

  LabeledExamples data;
  data.count = static_cast<uint32_t>(rows);
  data.features = static_cast<uint32_t>(per_row);
  if (features.shape.size() == 1) {
    data.shape = {1};
  } else {
    for (size_t i = 1; i < features.shape.size(); ++i) {
      data.shape.push_back(static_cast<uint32_t>(features.shape[i]));
    }
  }
  const size_t n = static_cast<size_t>(rows * per_row);
  const char* src = features.data.data();
  switch (features.dtype) {
    case NpyDtype::kUint8:
      data.pixels.assign(reinterpret_cast<const uint8_t*>(src),
                         reinterpret_cast<const uint8_t*>(src) + n);
      break;
    case NpyDtype::kFloat32:
      data.values.resize(n);
      for (size_t i = 0; i < n; ++i) {
        const float v = LoadLittle<float>(src + 4 * i);
        if (!std::isfinite(v)) return BadValue(features_where, i, data.features, v, false);
        data.values[i] = v;
      }
      break;
    default:  // kFloat64
      data.values.resize(n);
      for (size_t i = 0; i < n; ++i) {
        const double v = LoadLittle<double>(src + 8 * i);
        if (!std::isfinite(v) || std::fabs(v) > FLT_MAX) {
          return BadValue(features_where, i, data.features, v, std::isfinite(v));
        }
        data.values[i] = static_cast<float>(v);
      }
      break;
  }

  MEMAUDIT_RETURN_IF_ERROR(ReadLabels(labels, rows, labels_where, &data));
  MEMAUDIT_RETURN_IF_ERROR(SetClasses(data, labels_where));
  return data;
}

absl::StatusOr<LabeledExamples> ParseNpyPair(absl::string_view features_bytes,
                                             absl::string_view features_path,
                                             absl::string_view labels_bytes,
                                             absl::string_view labels_path) {
  const std::string features_where = absl::StrCat("path: ", features_path);
  const std::string labels_where = absl::StrCat("labels_path: ", labels_path);
  MEMAUDIT_ASSIGN_OR_RETURN(const NpyArray features, ParseNpy(features_bytes, features_where));
  MEMAUDIT_ASSIGN_OR_RETURN(const NpyArray labels, ParseNpy(labels_bytes, labels_where));
  return ExamplesFromNpy(features, features_where, labels, labels_where);
}

}  // namespace memaudit::data
