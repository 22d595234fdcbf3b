// Fuzzes what `memaudit report --export` reads from a per-example archive (a
// file anyone can hand it): length-delimited export pieces put back into
// arrays under the receiver's limits, then written as .npy bytes.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "cli/export_files.h"
#include "common/messages/export_arrays.h"
#include "google/protobuf/stubs/logging.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Malformed input is the point: protobuf's complaints about it are noise.
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  static_cast<void>(quiet);
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  auto arrays = memaudit::ReadExportStream(in, "fuzz");
  if (!arrays.ok()) return 0;
  for (const memaudit::v1::ExportArray& a : *arrays) memaudit::cli::NpyBytes(a);
  return 0;
}
