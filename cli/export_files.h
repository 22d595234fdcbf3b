// Writes an audit's per-example arrays (docs/export.md) as files a
// researcher opens directly: NumPy .npy arrays and long-format CSV in a
// directory with a schema, or one .npz archive.
#ifndef MEMAUDIT_CLI_EXPORT_FILES_H_
#define MEMAUDIT_CLI_EXPORT_FILES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "memaudit/v1/export.pb.h"

namespace memaudit::cli {

// The array as a NumPy .npy file (format 1.0, little-endian, C order).
std::string NpyBytes(const v1::ExportArray& array);

// `dir` (created) gets <name>.npy and <name>.csv per array (the CSV one row
// per element: its index on each axis, then the value) and schema.json
// (audit, kind, and each array's file, axes, shape, dtype, description).
absl::Status WriteExportDirectory(const std::string& dir, const std::string& audit_id,
                                  const std::string& kind,
                                  const std::vector<v1::ExportArray>& arrays);

// The arrays as one uncompressed .npz (what numpy.savez writes): <name>.npy
// per array. Refused past 4 GiB (the zip format without its 64-bit
// extension); the directory form has no such limit.
absl::Status WriteNpz(const std::string& path, const std::vector<v1::ExportArray>& arrays);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_CLI_EXPORT_FILES_H_
