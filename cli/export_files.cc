#include "cli/export_files.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace memaudit::cli {
namespace {

const char* NumpyType(v1::ExportDtype dtype) {
  switch (dtype) {
    case v1::UINT8:
      return "|u1";
    case v1::INT64:
      return "<i8";
    default:
      return "<f8";
  }
}

const char* DtypeName(v1::ExportDtype dtype) {
  switch (dtype) {
    case v1::UINT8:
      return "uint8";
    case v1::INT64:
      return "int64";
    default:
      return "float64";
  }
}

template <typename T>
void AppendLittleEndian(T v, std::string* out) {
  // Every platform memaudit builds on is little-endian, as .npy's '<' says.
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out->append(bytes, sizeof(T));
}

// How a value prints in CSV: integers without a fraction, doubles so they
// read back exactly, non-finite ones as NumPy and pandas spell them.
std::string CsvValue(double v, v1::ExportDtype dtype) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (dtype != v1::FLOAT64) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.17g", v);
}

absl::Status WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::Status WriteCsv(const std::string& path, const v1::ExportArray& a) {
  std::ofstream out(path, std::ios::trunc);
  std::vector<std::string> header(a.axes().begin(), a.axes().end());
  header.push_back(a.name());
  out << absl::StrJoin(header, ",") << "\n";
  const int rank = a.shape_size();
  std::vector<uint64_t> index(rank, 0);
  std::string line;
  for (int i = 0; i < a.values_size(); ++i) {
    line.clear();
    for (int d = 0; d < rank; ++d) absl::StrAppend(&line, index[d], ",");
    absl::StrAppend(&line, CsvValue(a.values(i), a.dtype()), "\n");
    out << line;
    // The next index, the last axis fastest (C order).
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[d] < a.shape(d)) break;
      index[d] = 0;
    }
  }
  out.close();
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace

std::string NpyBytes(const v1::ExportArray& a) {
  std::vector<std::string> dims;
  for (uint64_t n : a.shape()) dims.push_back(absl::StrCat(n));
  std::string shape = absl::StrJoin(dims, ", ");
  if (dims.size() == 1) shape += ",";
  std::string header = absl::StrCat("{'descr': '", NumpyType(a.dtype()),
                                    "', 'fortran_order': False, 'shape': (", shape, "), }");
  // Magic (6) + version (2) + header length (2) + header, padded with spaces
  // and a newline to a multiple of 64 bytes, as the format asks.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  AppendLittleEndian(static_cast<uint16_t>(header.size()), &out);
  out += header;
  const size_t width = a.dtype() == v1::UINT8 ? 1 : 8;
  out.reserve(out.size() + width * a.values_size());
  for (double v : a.values()) {
    if (a.dtype() == v1::UINT8) {
      out.push_back(static_cast<char>(static_cast<uint8_t>(v)));
    } else if (a.dtype() == v1::INT64) {
      AppendLittleEndian(static_cast<int64_t>(v), &out);
    } else {
      AppendLittleEndian(v, &out);
    }
  }
  return out;
}

absl::Status WriteExportDirectory(const std::string& dir, const std::string& audit_id,
                                  const std::string& kind,
                                  const std::vector<v1::ExportArray>& arrays) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::PermissionDeniedError(absl::StrCat("cannot create directory ", dir));
  }
  nlohmann::ordered_json schema;
  schema["audit_id"] = audit_id;
  schema["kind"] = kind;
  schema["arrays"] = nlohmann::ordered_json::array();
  for (const v1::ExportArray& a : arrays) {
    const std::string npy = absl::StrCat(a.name(), ".npy"), csv = absl::StrCat(a.name(), ".csv");
    if (absl::Status s = WriteFile(absl::StrCat(dir, "/", npy), NpyBytes(a)); !s.ok()) return s;
    if (absl::Status s = WriteCsv(absl::StrCat(dir, "/", csv), a); !s.ok()) return s;
    nlohmann::ordered_json entry;
    entry["name"] = a.name();
    entry["npy"] = npy;
    entry["csv"] = csv;
    entry["axes"] = std::vector<std::string>(a.axes().begin(), a.axes().end());
    entry["shape"] = std::vector<uint64_t>(a.shape().begin(), a.shape().end());
    entry["dtype"] = DtypeName(a.dtype());
    entry["description"] = a.description();
    schema["arrays"].push_back(std::move(entry));
  }
  return WriteFile(absl::StrCat(dir, "/schema.json"), schema.dump(1) + "\n");
}

absl::Status WriteNpz(const std::string& path, const std::vector<v1::ExportArray>& arrays) {
  constexpr uint64_t kZipLimit = 0xFFFFFFFFu;
  // 1980-01-01 00:00 (the zip epoch): the same arrays give the same bytes.
  constexpr uint16_t kDate = (0 << 9) | (1 << 5) | 1;
  std::string local, central;
  uint16_t entries = 0;
  for (const v1::ExportArray& a : arrays) {
    const std::string name = absl::StrCat(a.name(), ".npy");
    const std::string data = NpyBytes(a);
    if (data.size() > kZipLimit || local.size() + data.size() + 64 > kZipLimit) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": the arrays pass 4 GiB, the limit of an .npz here; export to a directory"));
    }
    const uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
    const uint32_t offset = static_cast<uint32_t>(local.size());
    auto common = [&](std::string* out) {
      AppendLittleEndian<uint16_t>(20, out);  // version needed: 2.0
      AppendLittleEndian<uint16_t>(0, out);   // flags
      AppendLittleEndian<uint16_t>(0, out);   // stored, no compression
      AppendLittleEndian<uint16_t>(0, out);   // time
      AppendLittleEndian<uint16_t>(kDate, out);
      AppendLittleEndian<uint32_t>(crc, out);
      AppendLittleEndian<uint32_t>(static_cast<uint32_t>(data.size()), out);
      AppendLittleEndian<uint32_t>(static_cast<uint32_t>(data.size()), out);
      AppendLittleEndian<uint16_t>(static_cast<uint16_t>(name.size()), out);
      AppendLittleEndian<uint16_t>(0, out);  // extra field length
    };
    AppendLittleEndian<uint32_t>(0x04034b50, &local);
    common(&local);
    local += name;
    local += data;
    AppendLittleEndian<uint32_t>(0x02014b50, &central);
    AppendLittleEndian<uint16_t>(20, &central);  // made by: 2.0
    common(&central);
    AppendLittleEndian<uint16_t>(0, &central);  // comment length
    AppendLittleEndian<uint16_t>(0, &central);  // disk
    AppendLittleEndian<uint16_t>(0, &central);  // internal attributes
    AppendLittleEndian<uint32_t>(0, &central);  // external attributes
    AppendLittleEndian<uint32_t>(offset, &central);
    central += name;
    ++entries;
  }
  if (local.size() + central.size() > kZipLimit) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": the arrays pass 4 GiB, the limit of an .npz here; export to a directory"));
  }
  std::string end;
  AppendLittleEndian<uint32_t>(0x06054b50, &end);
  AppendLittleEndian<uint16_t>(0, &end);
  AppendLittleEndian<uint16_t>(0, &end);
  AppendLittleEndian<uint16_t>(entries, &end);
  AppendLittleEndian<uint16_t>(entries, &end);
  AppendLittleEndian<uint32_t>(static_cast<uint32_t>(central.size()), &end);
  AppendLittleEndian<uint32_t>(static_cast<uint32_t>(local.size()), &end);
  AppendLittleEndian<uint16_t>(0, &end);  // comment length
  return WriteFile(path, local + central + end);
}

}  // namespace memaudit::cli
