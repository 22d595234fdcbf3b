#include "common/messages/export_arrays.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"

namespace memaudit {
namespace {

// A piece's serialized size in a file: its values plus a generous header.
constexpr uint64_t kMaxPieceBytes = kExportPieceValues * sizeof(double) + (64 << 10);

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > kMaxExportNameBytes) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool SameHeader(const v1::ExportArray& a, const v1::ExportArray& b) {
  return a.name() == b.name() && a.dtype() == b.dtype() && a.description() == b.description() &&
         a.audit_id() == b.audit_id() &&
         std::equal(a.axes().begin(), a.axes().end(), b.axes().begin(), b.axes().end()) &&
         std::equal(a.shape().begin(), a.shape().end(), b.shape().begin(), b.shape().end());
}

bool RepresentableAs(double v, v1::ExportDtype dtype) {
  switch (dtype) {
    case v1::FLOAT64:
      return true;  // NaN and infinities too: a rank bound or a missing value
    case v1::UINT8:
      return v >= 0 && v <= 255 && v == std::floor(v);
    case v1::INT64:
      return std::abs(v) <= 9007199254740992.0 && v == std::floor(v);
    default:
      return false;
  }
}

}  // namespace

v1::ExportArray MakeExportArray(std::string name, std::vector<std::string> axes,
                                const std::vector<uint64_t>& shape, v1::ExportDtype dtype,
                                std::string description, std::vector<double> values) {
  v1::ExportArray a;
  a.set_name(std::move(name));
  for (std::string& axis : axes) a.add_axes(std::move(axis));
  for (uint64_t n : shape) a.add_shape(n);
  a.set_dtype(dtype);
  a.set_description(std::move(description));
  a.mutable_values()->Assign(values.begin(), values.end());
  return a;
}

std::vector<v1::ExportArray> SplitExportArray(const v1::ExportArray& whole, size_t max_values) {
  std::vector<v1::ExportArray> pieces;
  const size_t n = whole.values_size();
  size_t from = 0;
  do {
    v1::ExportArray& piece = pieces.emplace_back(whole);
    const size_t count = std::min(max_values, n - from);
    piece.clear_values();
    piece.set_offset(from);
    piece.mutable_values()->Assign(whole.values().begin() + from,
                                   whole.values().begin() + from + count);
    from += count;
  } while (from < n);
  return pieces;
}

absl::Status ExportAssembler::StartArray(const v1::ExportArray& piece) {
  const std::string where = absl::StrCat("export array \"", piece.name().substr(0, 64), "\": ");
  if (!ValidName(piece.name())) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "name must be 1 to ", kMaxExportNameBytes, " of [a-z0-9_]"));
  }
  for (const v1::ExportArray& a : arrays_) {
    if (a.name() == piece.name()) {
      return absl::InvalidArgumentError(absl::StrCat(where, "name appears twice"));
    }
  }
  if (!arrays_.empty() && arrays_.front().audit_id() != piece.audit_id()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "belongs to another audit than the arrays before it"));
  }
  if (arrays_.size() >= kMaxExportArrays) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "more than ", kMaxExportArrays, " arrays"));
  }
  if (piece.shape_size() > static_cast<int>(kMaxExportAxes) ||
      piece.axes_size() != piece.shape_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "shape needs one axis name per dimension, at most ", kMaxExportAxes));
  }
  if (piece.dtype() != v1::FLOAT64 && piece.dtype() != v1::UINT8 && piece.dtype() != v1::INT64) {
    return absl::InvalidArgumentError(absl::StrCat(where, "dtype is not a known type"));
  }
  uint64_t elements = 1;
  for (uint64_t n : piece.shape()) {
    if (n != 0 && elements > kMaxExportValues / n) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "shape holds more than ", kMaxExportValues, " elements"));
    }
    elements *= n;
  }
  if (elements > kMaxExportValues - total_) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "the export holds more than ", kMaxExportValues, " elements"));
  }
  v1::ExportArray& a = arrays_.emplace_back(piece);
  a.clear_values();
  a.set_offset(0);
  a.mutable_values()->Reserve(static_cast<int>(elements));
  expected_ = elements;
  total_ += elements;
  return absl::OkStatus();
}

absl::Status ExportAssembler::Add(const v1::ExportArray& piece) {
  const bool continues = !arrays_.empty() && arrays_.back().name() == piece.name() &&
                         static_cast<uint64_t>(arrays_.back().values_size()) < expected_;
  if (continues) {
    if (!SameHeader(arrays_.back(), piece)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "export array \"", piece.name(), "\": a piece's header differs from the first's"));
    }
  } else {
    if (!arrays_.empty() && static_cast<uint64_t>(arrays_.back().values_size()) < expected_) {
      return absl::InvalidArgumentError(absl::StrCat("export array \"", arrays_.back().name(),
                                                     "\": incomplete before the next array"));
    }
    if (absl::Status s = StartArray(piece); !s.ok()) return s;
  }
  v1::ExportArray& a = arrays_.back();
  const uint64_t have = a.values_size();
  if (piece.offset() != have || static_cast<uint64_t>(piece.values_size()) > expected_ - have) {
    return absl::InvalidArgumentError(
        absl::StrCat("export array \"", a.name(), "\": offset ", piece.offset(), " with ",
                     piece.values_size(), " values does not continue ", have, " of ", expected_));
  }
  for (int i = 0; i < piece.values_size(); ++i) {
    if (!RepresentableAs(piece.values(i), a.dtype())) {
      return absl::InvalidArgumentError(absl::StrCat("export array \"", a.name(), "\": values[",
                                                     have + i, "] is not of its dtype"));
    }
  }
  a.mutable_values()->Add(piece.values().begin(), piece.values().end());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::ExportArray>> ExportAssembler::Finish() && {
  if (!arrays_.empty() && static_cast<uint64_t>(arrays_.back().values_size()) < expected_) {
    return absl::InvalidArgumentError(
        absl::StrCat("export array \"", arrays_.back().name(), "\": incomplete"));
  }
  return std::move(arrays_);
}

absl::Status WriteExportFile(const std::string& path, const std::vector<v1::ExportArray>& arrays) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  for (const v1::ExportArray& whole : arrays) {
    for (const v1::ExportArray& piece : SplitExportArray(whole)) {
      std::string bytes = piece.SerializeAsString();
      {
        google::protobuf::io::OstreamOutputStream stream(&out);
        google::protobuf::io::CodedOutputStream coded(&stream);
        coded.WriteVarint64(bytes.size());
      }
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
  }
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::ExportArray>> ReadExportFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot be read"));
  return ReadExportStream(in, path);
}

absl::StatusOr<std::vector<v1::ExportArray>> ReadExportStream(std::istream& in,
                                                              const std::string& path) {
  google::protobuf::io::IstreamInputStream stream(&in);
  ExportAssembler assembler;
  for (size_t piece_index = 0;; ++piece_index) {
    // A stream per piece, as protobuf's delimited reader does: one stream's
    // byte limit (2 GiB) would otherwise cap the file.
    google::protobuf::io::CodedInputStream coded(&stream);
    const void* next = nullptr;
    int available = 0;
    if (!coded.GetDirectBufferPointer(&next, &available)) break;  // the end
    uint64_t size = 0;
    if (!coded.ReadVarint64(&size)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": piece ", piece_index, " is cut"));
    }
    if (size > kMaxPieceBytes) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": piece ", piece_index, " declares ",
                                                     size, " bytes (at most ", kMaxPieceBytes,
                                                     ")"));
    }
    std::string bytes;
    v1::ExportArray piece;
    if (!coded.ReadString(&bytes, static_cast<int>(size)) || !piece.ParseFromString(bytes)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": piece ", piece_index, " is cut or not an export array"));
    }
    if (absl::Status s = assembler.Add(piece); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
    }
  }
  return std::move(assembler).Finish();
}

}  // namespace memaudit
