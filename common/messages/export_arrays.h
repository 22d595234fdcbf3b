// Per-example export arrays (proto/memaudit/v1/export.proto): built whole by
// the scorer, sent in pieces that fit a gRPC message, and put back together
// by whoever receives them, which checks every limit before it allocates.
#ifndef MEMAUDIT_COMMON_MESSAGES_EXPORT_ARRAYS_H_
#define MEMAUDIT_COMMON_MESSAGES_EXPORT_ARRAYS_H_

#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "memaudit/v1/export.pb.h"

namespace memaudit {

// Values per piece: 2 MiB of doubles, well under gRPC's 4 MiB message limit.
inline constexpr size_t kExportPieceValues = size_t{1} << 18;
// What a receiver accepts: arrays per export, axes per array, and elements
// in all (2 GiB as doubles).
inline constexpr size_t kMaxExportArrays = 512;
inline constexpr size_t kMaxExportAxes = 4;
inline constexpr uint64_t kMaxExportValues = uint64_t{1} << 28;
inline constexpr size_t kMaxExportNameBytes = 64;

// A whole array. `values` must hold the product of `shape` elements.
v1::ExportArray MakeExportArray(std::string name, std::vector<std::string> axes,
                                const std::vector<uint64_t>& shape, v1::ExportDtype dtype,
                                std::string description, std::vector<double> values);

// `whole` as pieces of at most `max_values` values (one piece for an empty
// array), each with the header.
std::vector<v1::ExportArray> SplitExportArray(const v1::ExportArray& whole,
                                              size_t max_values = kExportPieceValues);

// Puts pieces back into whole arrays, in the order they arrive.
class ExportAssembler {
 public:
  // INVALID_ARGUMENT (naming the array and the field) for a piece that is not
  // the next one of the current array or the first of a new one, a bad name,
  // shape or value, or one past the limits above.
  absl::Status Add(const v1::ExportArray& piece);
  // The arrays; INVALID_ARGUMENT when the last one is incomplete.
  absl::StatusOr<std::vector<v1::ExportArray>> Finish() &&;

 private:
  absl::Status StartArray(const v1::ExportArray& piece);
  std::vector<v1::ExportArray> arrays_;
  uint64_t expected_ = 0;  // elements of the last array
  uint64_t total_ = 0;     // elements of every array so far
};

// The arrays as a file of length-delimited pieces (what `memaudit run`
// archives next to results.json), and back.
absl::Status WriteExportFile(const std::string& path, const std::vector<v1::ExportArray>& arrays);
absl::StatusOr<std::vector<v1::ExportArray>> ReadExportFile(const std::string& path);
// The same from a stream; errors name `source`.
absl::StatusOr<std::vector<v1::ExportArray>> ReadExportStream(std::istream& in,
                                                              const std::string& source);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_MESSAGES_EXPORT_ARRAYS_H_
